//! The arguments of the control verb `trigger` (what [`super::protocol`] parses and
//! writes): `{"pre_ms":30000,"post_ms":10000,"reason":"...","streams":[..],"at_ns":T}`,
//! every key optional.

use serde_json::{json, Map, Value};

use crate::flight::field_error::TriggerFieldError;
use crate::flight::TriggerRequest;

/// `pre_ms` when the request names none.
pub const DEFAULT_PRE_MS: i64 = 30_000;
/// `post_ms` when the request names none.
pub const DEFAULT_POST_MS: i64 = 10_000;
const NS_PER_MS: i64 = 1_000_000;

fn ms_field(obj: &Map<String, Value>, key: &str, default: i64) -> Result<i64, TriggerFieldError> {
    let ms = match obj.get(key) {
        None | Some(Value::Null) => default,
        Some(v) => v.as_i64().ok_or_else(|| {
            TriggerFieldError::new(key, format!("must be an integer of milliseconds, is {v}"))
        })?,
    };
    ms.checked_mul(NS_PER_MS).ok_or_else(|| {
        TriggerFieldError::new(
            key,
            format!(
                "is {ms} ms, more than the {} ms allowed",
                crate::flight::trigger::MAX_WINDOW_NS / NS_PER_MS
            ),
        )
    })
}

/// The request's fields.
///
/// # Errors
/// The field of a `BAD_REQUEST` and what is wrong with it.
pub fn parse(obj: &Map<String, Value>) -> Result<TriggerRequest, TriggerFieldError> {
    let reason = match obj.get("reason") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => {
            return Err(TriggerFieldError::new(
                "reason",
                format!("must be a string, is {v}"),
            ))
        }
    };
    let streams = match obj.get("streams") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) => {
            let mut out = Vec::new();
            for v in a {
                match v.as_str() {
                    Some(s) if !s.is_empty() => out.push(s.to_owned()),
                    _ => {
                        return Err(TriggerFieldError::new(
                            "streams",
                            format!("entries must be non-empty strings, found {v}"),
                        ))
                    }
                }
            }
            Some(out)
        }
        Some(v) => {
            return Err(TriggerFieldError::new(
                "streams",
                format!("must be an array of names, is {v}"),
            ))
        }
    };
    let at_ns = match obj.get("at_ns") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_i64().ok_or_else(|| {
            TriggerFieldError::new("at_ns", format!("must be an integer, is {v}"))
        })?),
    };
    Ok(TriggerRequest {
        pre_ns: ms_field(obj, "pre_ms", DEFAULT_PRE_MS)?,
        post_ns: ms_field(obj, "post_ms", DEFAULT_POST_MS)?,
        reason,
        streams,
        at_ns,
    })
}

/// The request line of `req` (for the CLI).
#[must_use]
pub fn request_fields(req: &TriggerRequest) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("pre_ms".into(), json!(req.pre_ns / NS_PER_MS));
    m.insert("post_ms".into(), json!(req.post_ns / NS_PER_MS));
    m.insert("reason".into(), json!(req.reason));
    if let Some(s) = &req.streams {
        m.insert("streams".into(), json!(s));
    }
    if let Some(t) = req.at_ns {
        m.insert("at_ns".into(), json!(t));
    }
    m
}
