//! JSON written the way Go's `encoding/json` writes a map: keys sorted, compact (or
//! `MarshalIndent` with two spaces), integral floats without `.0`, and `<`, `>`, `&`,
//! U+2028, U+2029 escaped, so that meta blocks match the reference bytes exactly.

use serde_json::Value;
use std::fmt::Write as _;

/// Compact form, as `json.Marshal`.
#[must_use]
pub fn to_compact(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v, None, 0);
    out
}

/// Indented form, as `json.MarshalIndent(v, "", "  ")`.
#[must_use]
pub fn to_indented(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v, Some("  "), 0);
    out
}

fn newline(out: &mut String, indent: Option<&str>, depth: usize) {
    if let Some(ind) = indent {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(ind);
        }
    }
}

fn write_value(out: &mut String, v: &Value, indent: Option<&str>, depth: usize) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                let _ = write!(out, "{i}");
            } else if let Some(u) = n.as_u64() {
                let _ = write!(out, "{u}");
            } else {
                out.push_str(&format_float(n.as_f64().unwrap_or(0.0)));
            }
        }
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            if !items.is_empty() {
                for (k, item) in items.iter().enumerate() {
                    if k > 0 {
                        out.push(',');
                    }
                    newline(out, indent, depth + 1);
                    write_value(out, item, indent, depth + 1);
                }
                newline(out, indent, depth);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            if !map.is_empty() {
                // serde_json's default map is a BTreeMap: iteration is in sorted key order,
                // which for Go's map encoding is byte order of the UTF-8 keys.
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
                for (k, key) in keys.into_iter().enumerate() {
                    if k > 0 {
                        out.push(',');
                    }
                    newline(out, indent, depth + 1);
                    write_string(out, key);
                    out.push(':');
                    if indent.is_some() {
                        out.push(' ');
                    }
                    if let Some(val) = map.get(key) {
                        write_value(out, val, indent, depth + 1);
                    }
                }
                newline(out, indent, depth);
            }
            out.push('}');
        }
    }
}

/// Go's `floatEncoder` for float64: shortest digits; `%f` style unless the magnitude is
/// below 1e-6 or at least 1e21, then `%e` style with a two-digit negative exponent trimmed.
#[must_use]
pub fn format_float(f: f64) -> String {
    if !f.is_finite() {
        // Go refuses to encode these; a JSON null is the least surprising stand-in.
        return "null".into();
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format!("{f:e}");
        // Rust: "1.5e-7" / "1e21"; Go: "1.5e-07" trimmed to "1.5e-7" / "1e+21".
        match s.split_once('e') {
            Some((mant, exp)) if !exp.starts_with('-') => {
                let exp = if exp.len() < 2 {
                    format!("0{exp}")
                } else {
                    exp.to_owned()
                };
                format!("{mant}e+{exp}")
            }
            _ => s,
        }
    } else {
        format!("{f}")
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matches_go_marshal() {
        let v = json!({"version": 1, "timebase": {"type": "ticks", "tick_hz": 30.0}});
        assert_eq!(
            to_compact(&v),
            r#"{"timebase":{"tick_hz":30,"type":"ticks"},"version":1}"#
        );
        assert_eq!(to_compact(&json!("a<b>&c")), r#""a\u003cb\u003e\u0026c""#);
        assert_eq!(
            to_compact(&json!([0.1, 1.5e-7, 1e21, 2.5e300, -0.0])),
            "[0.1,1.5e-7,1e+21,2.5e+300,-0]"
        );
        assert_eq!(to_compact(&json!({"s": "\u{1}\n"})), r#"{"s":"\u0001\n"}"#);
        assert_eq!(to_compact(&json!({"e": {}, "a": []})), r#"{"a":[],"e":{}}"#);
    }

    #[test]
    fn indented_like_marshal_indent() {
        let v = json!({"b": [1, 2], "a": "x", "c": {}});
        assert_eq!(
            to_indented(&v),
            "{\n  \"a\": \"x\",\n  \"b\": [\n    1,\n    2\n  ],\n  \"c\": {}\n}"
        );
    }
}
