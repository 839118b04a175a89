//! Events (`{EP}_events.jsonl`): sparse, timestamped, variable-length records sent by
//! producers, one JSON object per `\n`-terminated line, keys sorted:
//!
//! ```text
//! {"data":"pick the red cube","kind":"text","label":"instruction","seq":0,"source":"teleop","t_ns":123}
//! ```
//!
//! `data` is the text as a JSON string (`text`), the JSON value itself (`json`), or standard
//! base64 (`binary`). A last line without its `\n` is torn (never acknowledged): readers
//! ignore it and say how long it is; any other line that does not parse is an error naming
//! the file and the line.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::{Map, Value};

use super::json::{self, FieldError};

/// What an event's payload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// UTF-8 text.
    Text,
    /// A JSON value.
    Json,
    /// Bytes (base64 in the files).
    Binary,
}

impl EventKind {
    /// The kind of wire code `code` (0 text, 1 json, 2 binary).
    #[must_use]
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(Self::Text),
            1 => Some(Self::Json),
            2 => Some(Self::Binary),
            _ => None,
        }
    }

    /// The wire code.
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            Self::Text => 0,
            Self::Json => 1,
            Self::Binary => 2,
        }
    }

    /// The JSON spelling (`text`, `json`, `binary`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Json => "json",
            Self::Binary => "binary",
        }
    }

    /// Parse the JSON spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Text, Self::Json, Self::Binary]
            .into_iter()
            .find(|k| k.as_str() == s)
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An event's or annotation's payload.
#[derive(Clone, Debug, PartialEq)]
pub enum EventData {
    Text(String),
    Json(Value),
    Binary(Vec<u8>),
}

impl EventData {
    /// Its kind.
    #[must_use]
    pub fn kind(&self) -> EventKind {
        match self {
            Self::Text(_) => EventKind::Text,
            Self::Json(_) => EventKind::Json,
            Self::Binary(_) => EventKind::Binary,
        }
    }

    /// The `data` value as the files store it.
    #[must_use]
    pub fn to_json_value(&self) -> Value {
        match self {
            Self::Text(s) => Value::String(s.clone()),
            Self::Json(v) => v.clone(),
            Self::Binary(b) => Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
        }
    }

    /// The payload of `kind` stored as `value` (a field at `path`, for errors).
    pub(crate) fn from_json_value(
        kind: EventKind,
        value: &Value,
        path: &str,
    ) -> Result<Self, FieldError> {
        match (kind, value) {
            (EventKind::Json, v) => Ok(Self::Json(v.clone())),
            (EventKind::Text, Value::String(s)) => Ok(Self::Text(s.clone())),
            (EventKind::Binary, Value::String(s)) => base64::engine::general_purpose::STANDARD
                .decode(s)
                .map(Self::Binary)
                .map_err(|e| FieldError::new(path, format!("not standard base64: {e}"))),
            (k, v) => Err(FieldError::new(
                path,
                format!("a {k} payload must be a string, is {}", json::type_name(v)),
            )),
        }
    }

    /// Read `kind` and `data` from an event or annotation object.
    pub(crate) fn from_object(m: &Map<String, Value>, path: &str) -> Result<Self, FieldError> {
        let kind_text = json::string(m, "kind", path)?;
        let kind = EventKind::parse(&kind_text).ok_or_else(|| {
            FieldError::new(
                json::join(path, "kind"),
                format!("unknown kind {kind_text:?} (text, json, binary)"),
            )
        })?;
        let data = json::required(m, "data", path)?;
        Self::from_json_value(kind, data, &json::join(path, "data"))
    }
}

/// One event.
#[derive(Clone, Debug, PartialEq)]
pub struct EventRecord {
    /// 0, 1, 2, ... per episode: the number the acknowledgement carried.
    pub seq: u64,
    pub t_ns: i64,
    pub label: String,
    /// Stream name of the producer that sent it, or the owner's client name.
    pub source: String,
    pub data: EventData,
}

impl EventRecord {
    /// Its kind.
    #[must_use]
    pub fn kind(&self) -> EventKind {
        self.data.kind()
    }

    /// The JSON object of this event (sorted keys).
    #[must_use]
    pub fn to_json_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("data".into(), self.data.to_json_value());
        m.insert("kind".into(), Value::from(self.kind().as_str()));
        m.insert("label".into(), Value::from(self.label.as_str()));
        m.insert("seq".into(), Value::from(self.seq));
        m.insert("source".into(), Value::from(self.source.as_str()));
        m.insert("t_ns".into(), Value::from(self.t_ns));
        json::sorted(Value::Object(m))
    }

    /// One line of the events file: compact JSON, sorted keys, `\n`-terminated.
    #[must_use]
    pub fn to_line(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec(&self.to_json_value()).unwrap_or_default();
        out.push(b'\n');
        out
    }

    fn from_json_value(v: &Value) -> Result<Self, FieldError> {
        let m = json::object(v, "")?;
        Ok(Self {
            seq: json::u64_field(m, "seq", "")?,
            t_ns: json::i64_field(m, "t_ns", "")?,
            label: json::string(m, "label", "")?,
            source: json::string(m, "source", "")?,
            data: EventData::from_object(m, "")?,
        })
    }
}

/// The events of a file, and where its complete lines end.
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedEvents {
    /// In file order.
    pub events: Vec<EventRecord>,
    /// Length of the file up to and including its last `\n`.
    pub complete_bytes: u64,
    /// Bytes after the last `\n` (a torn line, ignored).
    pub torn_tail_bytes: u64,
}

/// A bad line in an events file; every message names the file and the line (1-based).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EventsError {
    /// The line is not a JSON value.
    #[error("{}: line {line} (byte offset {offset}): not valid JSON: {message}", file.display())]
    Json {
        file: PathBuf,
        line: u64,
        offset: u64,
        message: String,
    },
    /// A field of the line's object is missing or wrong.
    #[error("{}: line {line} (byte offset {offset}): field `{field}`: {message}", file.display())]
    Field {
        file: PathBuf,
        line: u64,
        offset: u64,
        field: String,
        message: String,
    },
}

/// Parse the bytes of an events file; `file` is only used in error messages.
///
/// # Errors
/// [`EventsError`] for the first complete line that is not an event (an empty line
/// included). A torn last line is not an error.
pub fn parse_events(bytes: &[u8], file: &Path) -> Result<ParsedEvents, EventsError> {
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut events = Vec::new();
    let mut offset = 0usize;
    for (i, line) in bytes[..complete]
        .split_inclusive(|&b| b == b'\n')
        .enumerate()
    {
        let line_no = u64::try_from(i).unwrap_or(u64::MAX).saturating_add(1);
        let offset_u64 = u64::try_from(offset).unwrap_or(u64::MAX);
        let body = &line[..line.len().saturating_sub(1)];
        let v: Value = serde_json::from_slice(body).map_err(|e| EventsError::Json {
            file: file.to_path_buf(),
            line: line_no,
            offset: offset_u64,
            message: e.to_string(),
        })?;
        let ev = EventRecord::from_json_value(&v).map_err(|e| EventsError::Field {
            file: file.to_path_buf(),
            line: line_no,
            offset: offset_u64,
            field: e.field,
            message: e.message,
        })?;
        events.push(ev);
        offset += line.len();
    }
    let complete_bytes = u64::try_from(complete).unwrap_or(u64::MAX);
    let total = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    Ok(ParsedEvents {
        events,
        complete_bytes,
        torn_tail_bytes: total - complete_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(seq: u64, data: EventData) -> EventRecord {
        EventRecord {
            seq,
            t_ns: -7 + i64::try_from(seq).unwrap(),
            label: "instruction".into(),
            source: "teleop".into(),
            data,
        }
    }

    #[test]
    fn events_kind_codes() {
        for k in [EventKind::Text, EventKind::Json, EventKind::Binary] {
            assert_eq!(EventKind::from_code(k.code()), Some(k));
            assert_eq!(EventKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(EventKind::from_code(3), None);
    }

    #[test]
    fn events_line_format_is_sorted_compact() {
        let line = ev(0, EventData::Text("pick\nthe cube".into())).to_line();
        assert_eq!(
            String::from_utf8(line).unwrap(),
            "{\"data\":\"pick\\nthe cube\",\"kind\":\"text\",\"label\":\"instruction\",\"seq\":0,\"source\":\"teleop\",\"t_ns\":-7}\n"
        );
        let line = ev(1, EventData::Binary(vec![0, 255, 1])).to_line();
        assert!(String::from_utf8(line)
            .unwrap()
            .contains("\"data\":\"AP8B\""));
    }

    #[test]
    fn events_roundtrip_and_torn_tail() {
        let all = vec![
            ev(0, EventData::Text("héllo".into())),
            ev(1, EventData::Json(json!({"b": [1, 2.5, null], "a": "x"}))),
            ev(2, EventData::Binary(vec![])),
            ev(3, EventData::Binary((0..=255).collect())),
        ];
        let mut bytes: Vec<u8> = all.iter().flat_map(EventRecord::to_line).collect();
        let complete = bytes.len() as u64;
        let p = parse_events(&bytes, Path::new("e.jsonl")).unwrap();
        assert_eq!(p.events, all);
        assert_eq!((p.complete_bytes, p.torn_tail_bytes), (complete, 0));

        let torn = ev(4, EventData::Text("cut".into())).to_line();
        bytes.extend_from_slice(&torn[..torn.len() - 1]);
        let p = parse_events(&bytes, Path::new("e.jsonl")).unwrap();
        assert_eq!(p.events, all);
        assert_eq!(p.complete_bytes, complete);
        assert_eq!(p.torn_tail_bytes, torn.len() as u64 - 1);

        let p = parse_events(b"", Path::new("e.jsonl")).unwrap();
        assert_eq!(
            (p.events.len(), p.complete_bytes, p.torn_tail_bytes),
            (0, 0, 0)
        );
        let p = parse_events(b"{\"da", Path::new("e.jsonl")).unwrap();
        assert_eq!(
            (p.events.len(), p.complete_bytes, p.torn_tail_bytes),
            (0, 0, 4)
        );
    }

    #[test]
    fn events_bad_middle_lines_name_file_and_line() {
        let good = ev(0, EventData::Text("a".into())).to_line();
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"{not json}\n".to_vec(), "not valid JSON"),
            (b"\n".to_vec(), "not valid JSON"),
            (
                br#"{"data":"a","kind":"video","label":"l","seq":1,"source":"s","t_ns":1}"#
                    .iter()
                    .copied()
                    .chain(*b"\n")
                    .collect(),
                "field `kind`",
            ),
            (
                br#"{"data":5,"kind":"text","label":"l","seq":1,"source":"s","t_ns":1}"#
                    .iter()
                    .copied()
                    .chain(*b"\n")
                    .collect(),
                "field `data`",
            ),
            (
                br#"{"data":"***","kind":"binary","label":"l","seq":1,"source":"s","t_ns":1}"#
                    .iter()
                    .copied()
                    .chain(*b"\n")
                    .collect(),
                "field `data`",
            ),
            (
                br#"{"data":"a","kind":"text","label":"l","seq":-1,"source":"s","t_ns":1}"#
                    .iter()
                    .copied()
                    .chain(*b"\n")
                    .collect(),
                "field `seq`",
            ),
        ];
        for (bad, want) in cases {
            let mut bytes = good.clone();
            bytes.extend_from_slice(&bad);
            bytes.extend_from_slice(&good);
            let err = parse_events(&bytes, Path::new("/d/EP_events.jsonl"))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            let prefix = format!("/d/EP_events.jsonl: line 2 (byte offset {})", good.len());
            assert!(err.starts_with(&prefix), "{err}");
            assert!(err.contains(want), "{err}");
        }
    }
}
