//! Small JSON helpers shared by the episode-directory files: canonical (sorted-key) output
//! and typed field access that names the field path (`streams[0].tick_hz`) on error.

use serde_json::{Map, Value};

/// A field that is missing or has the wrong type or value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FieldError {
    /// Path of the field, e.g. `streams[1].channels[0].dtype`.
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub(crate) fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// `value` with the keys of every object in sorted order (whatever map type serde_json
/// was built with).
pub(crate) fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// Pretty-printed (two spaces), sorted keys, trailing newline.
pub(crate) fn pretty_bytes(value: Value) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(&sorted(value)).unwrap_or_default();
    out.push(b'\n');
    out
}

/// `path.key`, or `key` at the top level.
pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// A short description of a JSON value's type, for messages.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `value` as an object.
pub(crate) fn object<'a>(
    value: &'a Value,
    path: &str,
) -> Result<&'a Map<String, Value>, FieldError> {
    value.as_object().ok_or_else(|| {
        FieldError::new(
            if path.is_empty() { "(top level)" } else { path },
            format!("must be an object, is {}", type_name(value)),
        )
    })
}

/// The field `key` of `m`, which must be present.
pub(crate) fn required<'a>(
    m: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<&'a Value, FieldError> {
    m.get(key)
        .ok_or_else(|| FieldError::new(join(path, key), "missing"))
}

fn wrong(m: &Map<String, Value>, key: &str, path: &str, want: &str) -> FieldError {
    let found = m.get(key).map_or("missing", type_name);
    FieldError::new(join(path, key), format!("must be {want}, is {found}"))
}

pub(crate) fn string(m: &Map<String, Value>, key: &str, path: &str) -> Result<String, FieldError> {
    match required(m, key, path)? {
        Value::String(s) => Ok(s.clone()),
        _ => Err(wrong(m, key, path, "a string")),
    }
}

pub(crate) fn boolean(m: &Map<String, Value>, key: &str, path: &str) -> Result<bool, FieldError> {
    required(m, key, path)?
        .as_bool()
        .ok_or_else(|| wrong(m, key, path, "a boolean"))
}

pub(crate) fn u64_field(m: &Map<String, Value>, key: &str, path: &str) -> Result<u64, FieldError> {
    required(m, key, path)?
        .as_u64()
        .ok_or_else(|| wrong(m, key, path, "an unsigned integer"))
}

pub(crate) fn i64_field(m: &Map<String, Value>, key: &str, path: &str) -> Result<i64, FieldError> {
    required(m, key, path)?
        .as_i64()
        .ok_or_else(|| wrong(m, key, path, "a signed 64-bit integer"))
}

/// An `i64` or `null` (a missing key reads as `null`).
pub(crate) fn opt_i64(
    m: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<i64>, FieldError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_i64()
            .map(Some)
            .ok_or_else(|| wrong(m, key, path, "a signed 64-bit integer or null")),
    }
}

pub(crate) fn f64_field(m: &Map<String, Value>, key: &str, path: &str) -> Result<f64, FieldError> {
    required(m, key, path)?
        .as_f64()
        .ok_or_else(|| wrong(m, key, path, "a number"))
}

pub(crate) fn array<'a>(
    m: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<&'a Vec<Value>, FieldError> {
    required(m, key, path)?
        .as_array()
        .ok_or_else(|| wrong(m, key, path, "an array"))
}

/// Check the `format` and `version` keys every episode-directory JSON document carries.
pub(crate) fn check_format(
    m: &Map<String, Value>,
    format: &str,
    max_version: u64,
) -> Result<(), FieldError> {
    let found = string(m, "format", "")?;
    if found != format {
        return Err(FieldError::new(
            "format",
            format!("is {found:?}, expected {format:?}"),
        ));
    }
    let version = u64_field(m, "version", "")?;
    if version == 0 || version > max_version {
        return Err(FieldError::new(
            "version",
            format!("is {version}, this reader knows 1..={max_version}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_sorted_sorts_nested_keys() {
        let v = sorted(json!({"b": 1, "a": {"z": [ {"y": 1, "x": 2} ], "c": 3}}));
        let text = serde_json::to_string(&v).unwrap_or_default();
        assert_eq!(text, r#"{"a":{"c":3,"z":[{"x":2,"y":1}]},"b":1}"#);
    }

    #[test]
    fn json_field_errors_name_the_path() {
        let v = json!({"n": "x", "k": null});
        let m = v.as_object().cloned().unwrap_or_default();
        let e = u64_field(&m, "n", "streams[2]").err();
        assert_eq!(
            e,
            Some(FieldError::new(
                "streams[2].n",
                "must be an unsigned integer, is a string"
            ))
        );
        assert_eq!(
            string(&m, "missing", "").err().map(|e| e.field),
            Some("missing".to_owned())
        );
        assert_eq!(opt_i64(&m, "k", ""), Ok(None));
    }
}
