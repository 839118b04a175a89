//! Canonical JSON: the one byte form of a manifest, so that its SHA-256 is its identity.
//!
//! Rules: no whitespace; object keys sorted by their UTF-8 bytes; strings escaped as
//! serde_json escapes them (`"` `\` and control characters; everything else as UTF-8);
//! numbers only non-negative or negative integers written in decimal without sign `+`,
//! leading zeros, fraction or exponent (a float is refused: sizes and counts are integers);
//! `true` `false` `null` as written; no trailing newline.

use serde_json::Value;

/// A value that has no canonical form (a non-integral number).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("canonical JSON: {path}: {reason}")]
pub struct CanonicalError {
    /// Where in the document (`episodes.ep1.files`).
    pub path: String,
    pub reason: &'static str,
}

/// The canonical bytes of `value`.
///
/// # Errors
/// [`CanonicalError`] for a number that is not an integer.
pub fn to_canonical_bytes(value: &Value) -> Result<Vec<u8>, CanonicalError> {
    let mut out = Vec::new();
    write_value(value, "$", &mut out)?;
    Ok(out)
}

fn write_string(s: &str, out: &mut Vec<u8>) {
    // serde_json's string escaping is fixed: `"` `\` and control characters only.
    let quoted = Value::String(s.to_owned()).to_string();
    out.extend_from_slice(quoted.as_bytes());
}

fn write_value(value: &Value, path: &str, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                out.extend_from_slice(u.to_string().as_bytes());
            } else if let Some(i) = n.as_i64() {
                out.extend_from_slice(i.to_string().as_bytes());
            } else {
                return Err(CanonicalError {
                    path: path.to_owned(),
                    reason: "not an integer (floats have no canonical form here)",
                });
            }
        }
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item, &format!("{path}[{i}]"), out)?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            out.push(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(key, out);
                out.push(b':');
                if let Some(v) = map.get(key) {
                    write_value(v, &format!("{path}.{key}"), out)?;
                }
            }
            out.push(b'}');
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_sorted_no_whitespace_integers_only() -> Result<(), CanonicalError> {
        let v = json!({"b": [1, -2, {"z": null, "a": true}], "a": "x\"y\u{e9}"});
        let bytes = to_canonical_bytes(&v)?;
        assert_eq!(
            String::from_utf8_lossy(&bytes),
            "{\"a\":\"x\\\"y\u{e9}\",\"b\":[1,-2,{\"a\":true,\"z\":null}]}"
        );
        // An integral value parsed as a float has no canonical form.
        let e = to_canonical_bytes(&json!({"size": 1.5}));
        assert!(matches!(e, Err(CanonicalError { ref path, .. }) if path == "$.size"));
        Ok(())
    }
}
