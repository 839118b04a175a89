//! The arguments of the control verb `annotate` (parsed apart from the rest of the
//! protocol, which maps its typed errors to `BAD_REQUEST`):
//!
//! ```text
//! {"version":1,"verb":"annotate","episode":"EP","at":"+12.5s","label":"success","text":"..."}
//! ```
//!
//! - `episode`: the episode id (recording or finalized, single- or multi-stream);
//! - `at`: when, either an integer `t_ns` (number, or a string of digits with an optional
//!   `-`), or `+N` with a unit `s`, `ms`, `us` or `ns` (`+12.5s`): that long after the
//!   episode's first timestamp (the earliest first timestamp of its streams);
//! - `label`: 1..=256 bytes;
//! - `text` (a string) or `json` (a JSON value nested at most `MAX_EVENT_JSON_DEPTH` = 100
//!   deep, like an event's), at most one; neither is an empty text.

use serde_json::{json, Map, Value};
use wshard::episode_dir::events::EventData;
use wshard_ingest_proto::compact_event_json;

/// Longest label, in bytes.
pub const MAX_LABEL_BYTES: usize = 256;

/// When an annotation is.
#[derive(Clone, Debug, PartialEq)]
pub enum AnnotateAt {
    /// This `t_ns`.
    Absolute(i64),
    /// This many nanoseconds after the episode's first timestamp.
    AfterStart(i64),
}

/// The arguments of `annotate`.
#[derive(Clone, Debug, PartialEq)]
pub struct AnnotateRequest {
    pub episode: String,
    pub at: AnnotateAt,
    pub label: String,
    pub data: EventData,
}

/// A bad argument of `annotate`; the message names the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AnnotateArgError {
    #[error("annotate needs `{0}`")]
    Missing(&'static str),
    #[error("`{field}` {problem}")]
    Bad {
        field: &'static str,
        problem: String,
    },
}

fn bad(field: &'static str, problem: impl Into<String>) -> AnnotateArgError {
    AnnotateArgError::Bad {
        field,
        problem: problem.into(),
    }
}

/// Hold a `json` payload to the limits of an event's JSON (the protocol's check,
/// [`compact_event_json`], [`MAX_EVENT_JSON_DEPTH`](wshard_ingest_proto::MAX_EVENT_JSON_DEPTH)
/// levels at most): the annotations file nests the payload three levels deeper, and every
/// reader of the file must still read it back.
fn within_event_limits(v: &Value) -> Result<(), AnnotateArgError> {
    let text = serde_json::to_vec(v).map_err(|e| bad("json", e.to_string()))?;
    compact_event_json(&text)
        .map(drop)
        .map_err(|e| bad("json", e.to_string()))
}

/// Parse `at` as the CLI and the request spell it.
///
/// # Errors
/// [`AnnotateArgError::Bad`] naming `at` and what it must be.
pub fn parse_at(text: &str) -> Result<AnnotateAt, AnnotateArgError> {
    let text = text.trim();
    let must = "must be an integer t_ns, or +N followed by s, ms, us or ns (e.g. +12.5s)";
    let Some(rel) = text.strip_prefix('+') else {
        return text
            .parse::<i64>()
            .map(AnnotateAt::Absolute)
            .map_err(|_| bad("at", format!("{text:?} {must}")));
    };
    let (number, unit_ns) = [("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("s", 1e9)]
        .into_iter()
        .find_map(|(u, f)| rel.strip_suffix(u).map(|n| (n, f)))
        .ok_or_else(|| bad("at", format!("{text:?} {must}")))?;
    let value: f64 = number
        .parse()
        .map_err(|_| bad("at", format!("{text:?} {must}")))?;
    let ns = (value * unit_ns).round();
    if !ns.is_finite() || ns < 0.0 || ns > i64::MAX as f64 {
        return Err(bad("at", format!("{text:?} is out of range")));
    }
    // Checked above: finite, non-negative and below i64::MAX.
    #[allow(clippy::cast_possible_truncation)]
    Ok(AnnotateAt::AfterStart(ns as i64))
}

impl AnnotateRequest {
    /// Parse the request object `obj`.
    ///
    /// # Errors
    /// [`AnnotateArgError`] naming the missing or bad field.
    pub fn parse(obj: &Map<String, Value>) -> Result<Self, AnnotateArgError> {
        let episode = match obj.get("episode") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(_) => return Err(bad("episode", "must be a non-empty string")),
            None => return Err(AnnotateArgError::Missing("episode")),
        };
        let at = match obj.get("at") {
            Some(Value::Number(n)) => n
                .as_i64()
                .map(AnnotateAt::Absolute)
                .ok_or_else(|| bad("at", format!("{n} is not an integer t_ns")))?,
            Some(Value::String(s)) => parse_at(s)?,
            Some(_) => return Err(bad("at", "must be an integer or a string")),
            None => return Err(AnnotateArgError::Missing("at")),
        };
        let label = match obj.get("label") {
            Some(Value::String(s)) if !s.is_empty() && s.len() <= MAX_LABEL_BYTES => s.clone(),
            Some(_) => {
                return Err(bad(
                    "label",
                    format!("must be a string of 1..={MAX_LABEL_BYTES} bytes"),
                ))
            }
            None => return Err(AnnotateArgError::Missing("label")),
        };
        let data = match (obj.get("text"), obj.get("json")) {
            (Some(_), Some(_)) => return Err(bad("text", "and `json` exclude each other")),
            (Some(Value::String(s)), None) => EventData::Text(s.clone()),
            (Some(_), None) => return Err(bad("text", "must be a string")),
            (None, Some(v)) => {
                within_event_limits(v)?;
                EventData::Json(v.clone())
            }
            (None, None) => EventData::Text(String::new()),
        };
        Ok(Self {
            episode,
            at,
            label,
            data,
        })
    }

    /// The request's fields (without `version` and `verb`).
    #[must_use]
    pub fn to_fields(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("episode".into(), json!(self.episode));
        m.insert(
            "at".into(),
            match self.at {
                AnnotateAt::Absolute(t) => json!(t),
                AnnotateAt::AfterStart(ns) => json!(format!("+{ns}ns")),
            },
        );
        m.insert("label".into(), json!(self.label));
        match &self.data {
            EventData::Json(v) => {
                m.insert("json".into(), v.clone());
            }
            EventData::Text(s) => {
                m.insert("text".into(), json!(s));
            }
            // Not produced by `parse`; sent as its JSON form.
            EventData::Binary(_) => {
                m.insert("json".into(), self.data.to_json_value());
            }
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_annotate_at_forms() {
        assert_eq!(parse_at("123"), Ok(AnnotateAt::Absolute(123)));
        assert_eq!(parse_at("-5"), Ok(AnnotateAt::Absolute(-5)));
        assert_eq!(
            parse_at("+12.5s"),
            Ok(AnnotateAt::AfterStart(12_500_000_000))
        );
        assert_eq!(parse_at("+250ms"), Ok(AnnotateAt::AfterStart(250_000_000)));
        assert_eq!(parse_at("+7us"), Ok(AnnotateAt::AfterStart(7_000)));
        assert_eq!(parse_at("+9ns"), Ok(AnnotateAt::AfterStart(9)));
        for bad in ["", "+", "+12", "12s", "+-1s", "+1e300s", "soon"] {
            let e = parse_at(bad)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.starts_with("`at`"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn control_annotate_request_round_trips_and_names_bad_fields() {
        let line = r#"{"episode":"ep","at":"+1.5s","label":"success","json":{"k":[1,2]}}"#;
        let obj: Map<String, Value> = serde_json::from_str(line).unwrap_or_default();
        let r = AnnotateRequest::parse(&obj);
        assert_eq!(
            r.as_ref().map(|r| r.at.clone()),
            Ok(AnnotateAt::AfterStart(1_500_000_000))
        );
        let again = r.as_ref().map(|r| AnnotateRequest::parse(&r.to_fields()));
        assert_eq!(again.ok().and_then(Result::ok), r.ok());
        for (line, field) in [
            (r#"{"at":1,"label":"l"}"#, "episode"),
            (r#"{"episode":"e","label":"l"}"#, "at"),
            (r#"{"episode":"e","at":1}"#, "label"),
            (r#"{"episode":"e","at":1,"label":""}"#, "label"),
            (
                r#"{"episode":"e","at":1,"label":"l","text":"a","json":1}"#,
                "text",
            ),
            (r#"{"episode":"e","at":1.5,"label":"l"}"#, "at"),
        ] {
            let obj: Map<String, Value> = serde_json::from_str(line).unwrap_or_default();
            let e = AnnotateRequest::parse(&obj)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.contains(&format!("`{field}`")), "{line}: {e}");
        }
    }
}
