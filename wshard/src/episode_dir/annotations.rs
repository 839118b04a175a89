//! Operator annotations (`{EP}_annotations.json`): labels added during or after recording,
//! replaced atomically by the daemon, never touching chunks or manifests.
//!
//! ```json
//! {"annotations": [{"author": "uid 1000", "created_unix_ns": 0, "data": "...",
//!   "kind": "text", "label": "success", "seq": 0, "t_ns": 123}],
//!  "episode_id": "EP", "format": "wshard-annotations", "version": 1}
//! ```
//! (pretty-printed, sorted keys, trailing newline).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::events::{EventData, EventKind};
use super::json::{self, FieldError};

/// `format` key of the annotations file.
pub const ANNOTATIONS_FORMAT: &str = "wshard-annotations";
/// `version` key this library writes (and the highest it reads).
pub const ANNOTATIONS_VERSION: u64 = 1;

/// One annotation.
#[derive(Clone, Debug, PartialEq)]
pub struct Annotation {
    /// 0, 1, 2, ... per episode.
    pub seq: u64,
    /// The episode time it refers to.
    pub t_ns: i64,
    pub label: String,
    pub data: EventData,
    /// Who added it (e.g. `uid 1000`).
    pub author: String,
    /// When it was added (wall clock).
    pub created_unix_ns: u64,
}

impl Annotation {
    /// Its kind.
    #[must_use]
    pub fn kind(&self) -> EventKind {
        self.data.kind()
    }

    fn to_json_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("author".into(), Value::from(self.author.as_str()));
        m.insert("created_unix_ns".into(), Value::from(self.created_unix_ns));
        m.insert("data".into(), self.data.to_json_value());
        m.insert("kind".into(), Value::from(self.kind().as_str()));
        m.insert("label".into(), Value::from(self.label.as_str()));
        m.insert("seq".into(), Value::from(self.seq));
        m.insert("t_ns".into(), Value::from(self.t_ns));
        Value::Object(m)
    }

    fn from_json_value(v: &Value, path: &str) -> Result<Self, FieldError> {
        let m = json::object(v, path)?;
        Ok(Self {
            seq: json::u64_field(m, "seq", path)?,
            t_ns: json::i64_field(m, "t_ns", path)?,
            label: json::string(m, "label", path)?,
            data: EventData::from_object(m, path)?,
            author: json::string(m, "author", path)?,
            created_unix_ns: json::u64_field(m, "created_unix_ns", path)?,
        })
    }
}

/// The annotations document of one episode.
#[derive(Clone, Debug, PartialEq)]
pub struct Annotations {
    pub episode_id: String,
    /// In the order they were added.
    pub annotations: Vec<Annotation>,
}

/// A bad annotations file; every message names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnnotationsError {
    /// Not JSON at all.
    #[error("{}: not valid JSON at line {line}, column {column}: {message}", file.display())]
    Json {
        file: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// A field is missing or wrong (`annotations[2].t_ns`).
    #[error("{}: field `{field}`: {message}", file.display())]
    Field {
        file: PathBuf,
        field: String,
        message: String,
    },
}

impl Annotations {
    /// No annotations yet.
    #[must_use]
    pub fn new(episode_id: impl Into<String>) -> Self {
        Self {
            episode_id: episode_id.into(),
            annotations: Vec::new(),
        }
    }

    /// The `seq` the next annotation gets (one past the largest, 0 when empty).
    #[must_use]
    pub fn next_seq(&self) -> u64 {
        self.annotations
            .iter()
            .map(|a| a.seq.saturating_add(1))
            .max()
            .unwrap_or(0)
    }

    /// The JSON document: pretty-printed, sorted keys, trailing newline.
    #[must_use]
    pub fn to_json_bytes(&self) -> Vec<u8> {
        let mut m = Map::new();
        m.insert(
            "annotations".into(),
            Value::Array(
                self.annotations
                    .iter()
                    .map(Annotation::to_json_value)
                    .collect(),
            ),
        );
        m.insert("episode_id".into(), Value::from(self.episode_id.as_str()));
        m.insert("format".into(), Value::from(ANNOTATIONS_FORMAT));
        m.insert("version".into(), Value::from(ANNOTATIONS_VERSION));
        json::pretty_bytes(Value::Object(m))
    }

    /// Parse an annotations file's bytes; `file` is only used in error messages.
    ///
    /// # Errors
    /// [`AnnotationsError::Json`] when the bytes are not JSON, [`AnnotationsError::Field`]
    /// naming the first missing or wrong field, the format or the version.
    pub fn from_json_bytes(bytes: &[u8], file: &Path) -> Result<Self, AnnotationsError> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| AnnotationsError::Json {
            file: file.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        parse(&v).map_err(|e| AnnotationsError::Field {
            file: file.to_path_buf(),
            field: e.field,
            message: e.message,
        })
    }
}

fn parse(v: &Value) -> Result<Annotations, FieldError> {
    let m = json::object(v, "")?;
    json::check_format(m, ANNOTATIONS_FORMAT, ANNOTATIONS_VERSION)?;
    let annotations = json::array(m, "annotations", "")?
        .iter()
        .enumerate()
        .map(|(i, a)| Annotation::from_json_value(a, &format!("annotations[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Annotations {
        episode_id: json::string(m, "episode_id", "")?,
        annotations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Annotations {
        let mut a = Annotations::new("EP");
        a.annotations.push(Annotation {
            seq: 0,
            t_ns: 123,
            label: "success".into(),
            data: EventData::Text("ok".into()),
            author: "uid 1000".into(),
            created_unix_ns: 9,
        });
        a.annotations.push(Annotation {
            seq: 1,
            t_ns: -4,
            label: "score".into(),
            data: EventData::Json(json!({"z": 1, "a": 2})),
            author: "uid 0".into(),
            created_unix_ns: 10,
        });
        a
    }

    #[test]
    fn annotations_roundtrip_sorted_pretty() {
        let a = sample();
        let bytes = a.to_json_bytes();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.starts_with("{\n  \"annotations\": [\n    {\n      \"author\": \"uid 1000\","));
        assert!(text.ends_with("  \"version\": 1\n}\n"), "{text}");
        assert!(text.find("\"a\": 2") < text.find("\"z\": 1"));
        let back = Annotations::from_json_bytes(&bytes, Path::new("a.json")).unwrap();
        assert_eq!(back, a);
        assert_eq!(back.next_seq(), 2);
        assert_eq!(Annotations::new("x").next_seq(), 0);
    }

    #[test]
    fn annotations_errors_name_file_and_field() {
        let mut v: Value = serde_json::from_slice(&sample().to_json_bytes()).unwrap();
        v["annotations"][1]["t_ns"] = json!(1.5);
        let err =
            Annotations::from_json_bytes(&serde_json::to_vec(&v).unwrap(), Path::new("/e/a.json"))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
        assert!(
            err.starts_with("/e/a.json: field `annotations[1].t_ns`"),
            "{err}"
        );

        v["format"] = json!("x");
        let err =
            Annotations::from_json_bytes(&serde_json::to_vec(&v).unwrap(), Path::new("/e/a.json"));
        assert!(matches!(err, Err(AnnotationsError::Field { ref field, .. }) if field == "format"));

        let err = Annotations::from_json_bytes(b"{", Path::new("/e/a.json"));
        assert!(matches!(err, Err(AnnotationsError::Json { .. })));
    }
}
