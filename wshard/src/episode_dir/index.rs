//! The episode index (`{EP}_index.json`) of a multi-stream episode: which streams the
//! episode has, their clocks, channels, status and counts.
//!
//! Written pretty-printed (two spaces) with sorted keys and a trailing newline; the daemon
//! replaces it atomically. Read with errors that name the file and the field.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::json::{self, FieldError};
use super::names::events_file_name;

/// `format` key of the index.
pub const INDEX_FORMAT: &str = "wshard-episode-index";
/// `version` key this library writes (and the highest it reads).
pub const INDEX_VERSION: u64 = 1;
/// `timebase` of a stream whose steps are ticks at `tick_hz`.
pub const TIMEBASE_TICKS: &str = "ticks";
/// `timebase` of a stream whose steps carry `time/timestamps_ns`.
pub const TIMEBASE_TIMESTAMPS: &str = "timestamps_ns";

/// Status of an episode or of one stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EpisodeStatus {
    Recording,
    Complete,
    Aborted,
    Interrupted,
    Recovered,
}

impl EpisodeStatus {
    /// The JSON spelling (`recording`, `complete`, ...).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Recording => "recording",
            Self::Complete => "complete",
            Self::Aborted => "aborted",
            Self::Interrupted => "interrupted",
            Self::Recovered => "recovered",
        }
    }

    /// Parse the JSON spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Recording,
            Self::Complete,
            Self::Aborted,
            Self::Interrupted,
            Self::Recovered,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }
}

impl std::fmt::Display for EpisodeStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One channel of a stream, as the index lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChannelEntry {
    pub name: String,
    /// `signal` or `action`.
    pub lane: String,
    /// WShard dtype name (`f32`, `u8`, ...).
    pub dtype: String,
    pub shape: Vec<u64>,
}

/// One stream of the episode.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StreamEntry {
    pub name: String,
    /// Path of the stream's manifest relative to the episode directory
    /// (`streams/{STREAM}/{STREAM}_manifest.wshard`).
    pub manifest: String,
    /// [`TIMEBASE_TICKS`] or [`TIMEBASE_TIMESTAMPS`].
    pub timebase: String,
    /// Tick rate of a `ticks` stream (finite; 0 when not meaningful).
    pub tick_hz: f64,
    pub channels: Vec<ChannelEntry>,
    /// Who records the stream (client name).
    pub producer: String,
    pub status: EpisodeStatus,
    /// Steps and chunks known at the last commit (may lag while recording: the stream's
    /// manifest is the truth for its chunks).
    pub steps: u64,
    pub chunks: u64,
    pub first_t_ns: Option<i64>,
    pub last_t_ns: Option<i64>,
}

/// The episode index document.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EpisodeIndex {
    pub episode_id: String,
    pub env_id: String,
    pub status: EpisodeStatus,
    /// `EPISODE_CLOSE` (or an operator stop) was received: no more streams may join.
    pub closed: bool,
    pub created_unix_ns: u64,
    pub metadata: Map<String, Value>,
    /// File name of the events file, relative to the episode directory.
    pub events_file: String,
    pub streams: Vec<StreamEntry>,
}

/// A bad index file; every message names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// Not JSON at all.
    #[error("{}: not valid JSON at line {line}, column {column}: {message}", file.display())]
    Json {
        file: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// A field is missing or wrong.
    #[error("{}: field `{field}`: {message}", file.display())]
    Field {
        file: PathBuf,
        field: String,
        message: String,
    },
}

impl IndexError {
    fn field(file: &Path, e: FieldError) -> Self {
        Self::Field {
            file: file.to_path_buf(),
            field: e.field,
            message: e.message,
        }
    }
}

impl EpisodeIndex {
    /// A new index: status `recording`, not closed, no streams.
    #[must_use]
    pub fn new(
        episode_id: impl Into<String>,
        env_id: impl Into<String>,
        metadata: Map<String, Value>,
        created_unix_ns: u64,
    ) -> Self {
        let episode_id = episode_id.into();
        Self {
            events_file: events_file_name(&episode_id),
            episode_id,
            env_id: env_id.into(),
            status: EpisodeStatus::Recording,
            closed: false,
            created_unix_ns,
            metadata,
            streams: Vec::new(),
        }
    }

    /// The stream named `name`.
    #[must_use]
    pub fn stream(&self, name: &str) -> Option<&StreamEntry> {
        self.streams.iter().find(|s| s.name == name)
    }

    /// The stream named `name`, to update it.
    pub fn stream_mut(&mut self, name: &str) -> Option<&mut StreamEntry> {
        self.streams.iter_mut().find(|s| s.name == name)
    }

    /// The JSON document: pretty-printed, sorted keys, trailing newline.
    #[must_use]
    pub fn to_json_bytes(&self) -> Vec<u8> {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.insert("format".into(), Value::from(INDEX_FORMAT));
            m.insert("version".into(), Value::from(INDEX_VERSION));
        }
        json::pretty_bytes(v)
    }

    /// Parse an index file's bytes; `file` is only used in error messages.
    ///
    /// Unknown keys are ignored (a later version may add some).
    ///
    /// # Errors
    /// [`IndexError::Json`] when the bytes are not JSON, [`IndexError::Field`] naming the
    /// first missing or wrong field (`streams[1].tick_hz`), the format or the version.
    pub fn from_json_bytes(bytes: &[u8], file: &Path) -> Result<Self, IndexError> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| IndexError::Json {
            file: file.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        parse_index(&v).map_err(|e| IndexError::field(file, e))
    }
}

fn parse_index(v: &Value) -> Result<EpisodeIndex, FieldError> {
    let m = json::object(v, "")?;
    json::check_format(m, INDEX_FORMAT, INDEX_VERSION)?;
    let metadata = json::object(json::required(m, "metadata", "")?, "metadata")?.clone();
    let streams = json::array(m, "streams", "")?
        .iter()
        .enumerate()
        .map(|(i, s)| parse_stream(s, &format!("streams[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    for (i, s) in streams.iter().enumerate() {
        if streams[..i].iter().any(|o| o.name == s.name) {
            return Err(FieldError::new(
                format!("streams[{i}].name"),
                format!("stream {:?} is listed twice", s.name),
            ));
        }
    }
    Ok(EpisodeIndex {
        episode_id: json::string(m, "episode_id", "")?,
        env_id: json::string(m, "env_id", "")?,
        status: status(m, "status", "")?,
        closed: json::boolean(m, "closed", "")?,
        created_unix_ns: json::u64_field(m, "created_unix_ns", "")?,
        metadata,
        events_file: json::string(m, "events_file", "")?,
        streams,
    })
}

fn status(m: &Map<String, Value>, key: &str, path: &str) -> Result<EpisodeStatus, FieldError> {
    let s = json::string(m, key, path)?;
    EpisodeStatus::parse(&s).ok_or_else(|| {
        FieldError::new(
            json::join(path, key),
            format!("unknown status {s:?} (recording, complete, aborted, interrupted, recovered)"),
        )
    })
}

fn parse_stream(v: &Value, path: &str) -> Result<StreamEntry, FieldError> {
    let m = json::object(v, path)?;
    let timebase = json::string(m, "timebase", path)?;
    if timebase != TIMEBASE_TICKS && timebase != TIMEBASE_TIMESTAMPS {
        return Err(FieldError::new(
            json::join(path, "timebase"),
            format!("is {timebase:?}, expected {TIMEBASE_TICKS:?} or {TIMEBASE_TIMESTAMPS:?}"),
        ));
    }
    let channels = json::array(m, "channels", path)?
        .iter()
        .enumerate()
        .map(|(i, c)| parse_channel(c, &format!("{path}.channels[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(StreamEntry {
        name: json::string(m, "name", path)?,
        manifest: json::string(m, "manifest", path)?,
        timebase,
        tick_hz: json::f64_field(m, "tick_hz", path)?,
        channels,
        producer: json::string(m, "producer", path)?,
        status: status(m, "status", path)?,
        steps: json::u64_field(m, "steps", path)?,
        chunks: json::u64_field(m, "chunks", path)?,
        first_t_ns: json::opt_i64(m, "first_t_ns", path)?,
        last_t_ns: json::opt_i64(m, "last_t_ns", path)?,
    })
}

fn parse_channel(v: &Value, path: &str) -> Result<ChannelEntry, FieldError> {
    let m = json::object(v, path)?;
    let shape = json::array(m, "shape", path)?
        .iter()
        .enumerate()
        .map(|(i, d)| {
            d.as_u64().ok_or_else(|| {
                FieldError::new(
                    format!("{path}.shape[{i}]"),
                    format!("must be an unsigned integer, is {}", json::type_name(d)),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ChannelEntry {
        name: json::string(m, "name", path)?,
        lane: json::string(m, "lane", path)?,
        dtype: json::string(m, "dtype", path)?,
        shape,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> EpisodeIndex {
        let mut meta = Map::new();
        meta.insert("task".into(), json!("pick"));
        let mut idx = EpisodeIndex::new("EP", "Env-v0", meta, 42);
        idx.streams.push(StreamEntry {
            name: "joints".into(),
            manifest: "streams/joints/joints_manifest.wshard".into(),
            timebase: TIMEBASE_TICKS.into(),
            tick_hz: 1000.0,
            channels: vec![ChannelEntry {
                name: "q".into(),
                lane: "signal".into(),
                dtype: "f32".into(),
                shape: vec![7],
            }],
            producer: "teleop-loop/0.3".into(),
            status: EpisodeStatus::Recording,
            steps: 3,
            chunks: 1,
            first_t_ns: Some(-5),
            last_t_ns: None,
        });
        idx
    }

    #[test]
    fn index_roundtrips_with_sorted_pretty_keys() {
        let idx = sample();
        let bytes = idx.to_json_bytes();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.ends_with("}\n"));
        assert!(text.starts_with("{\n  \"closed\": false,\n  \"created_unix_ns\": 42,\n"));
        assert!(text.contains("\"format\": \"wshard-episode-index\""));
        assert!(text.contains("\"tick_hz\": 1000.0"));
        assert!(text.contains("\"last_t_ns\": null"));
        assert!(text.contains("\"events_file\": \"EP_events.jsonl\""));
        let back = EpisodeIndex::from_json_bytes(&bytes, Path::new("EP_index.json")).unwrap();
        assert_eq!(back, idx);
        assert_eq!(back.to_json_bytes(), bytes);
    }

    #[test]
    fn index_stream_lookup() {
        let mut idx = sample();
        assert!(idx.stream("joints").is_some());
        assert!(idx.stream("nope").is_none());
        if let Some(s) = idx.stream_mut("joints") {
            s.status = EpisodeStatus::Complete;
        }
        assert_eq!(idx.streams[0].status, EpisodeStatus::Complete);
    }

    fn field_error(v: Value) -> (String, String) {
        let bytes = serde_json::to_vec(&v).unwrap();
        match EpisodeIndex::from_json_bytes(&bytes, Path::new("/x/EP_index.json")) {
            Err(e @ IndexError::Field { .. }) => {
                let text = e.to_string();
                assert!(text.starts_with("/x/EP_index.json: "), "{text}");
                match e {
                    IndexError::Field { field, message, .. } => (field, message),
                    IndexError::Json { .. } => unreachable!(),
                }
            }
            other => panic!("expected a field error, got {other:?}"),
        }
    }

    #[test]
    fn index_errors_name_file_and_field() {
        let good: Value = serde_json::from_slice(&sample().to_json_bytes()).unwrap();

        let mut v = good.clone();
        v["streams"][0]["tick_hz"] = json!("fast");
        assert_eq!(field_error(v).0, "streams[0].tick_hz");

        let mut v = good.clone();
        v["streams"][0]["channels"][0]["shape"] = json!([7, -1]);
        assert_eq!(field_error(v).0, "streams[0].channels[0].shape[1]");

        let mut v = good.clone();
        v["streams"][0]["status"] = json!("paused");
        assert_eq!(field_error(v).0, "streams[0].status");

        let mut v = good.clone();
        v["streams"][0]["timebase"] = json!("wallclock");
        assert_eq!(field_error(v).0, "streams[0].timebase");

        let mut v = good.clone();
        v.as_object_mut().map(|m| m.remove("episode_id"));
        assert_eq!(field_error(v), ("episode_id".into(), "missing".into()));

        let mut v = good.clone();
        v["format"] = json!("wshard-manifest");
        assert_eq!(field_error(v).0, "format");

        let mut v = good.clone();
        v["version"] = json!(2);
        assert_eq!(field_error(v).0, "version");

        let mut v = good.clone();
        let s = v["streams"][0].clone();
        v["streams"] = json!([s.clone(), s]);
        assert_eq!(field_error(v).0, "streams[1].name");

        assert_eq!(field_error(json!([1])).0, "(top level)");
    }

    #[test]
    fn index_bad_json_names_line() {
        let e = EpisodeIndex::from_json_bytes(b"{\n  \"format\": ", Path::new("i.json"));
        match e {
            Err(IndexError::Json { line, file, .. }) => {
                assert_eq!(line, 2);
                assert_eq!(file, Path::new("i.json"));
            }
            other => panic!("{other:?}"),
        }
    }
}
