//! `trigger`: persist the window `[t - pre, t + post]` of the flight streams as a new
//! episode (or extend the pending one), through `flight::trigger`. Mutating: the admin
//! allowlist, as `close`.
//!
//! Request: `{"verb":"trigger","pre_ms":30000,"post_ms":10000,"reason":"...",
//! "streams":["EP","EP/STREAM"],"at_ns":T}` (every key optional). Reply:
//! `{"episode":W,"merged":false,"window_start_ns":..,"window_end_ns":..}`.

use serde_json::{json, Map, Value};

use super::protocol::{ControlError, ErrorKind};
use super::state::ControlState;
use crate::flight::{TriggerError, TriggerRequest};

/// `pre_ms` when the request names none.
pub const DEFAULT_PRE_MS: i64 = 30_000;
/// `post_ms` when the request names none.
pub const DEFAULT_POST_MS: i64 = 10_000;
const NS_PER_MS: i64 = 1_000_000;
const VERB: &str = "trigger";

fn bad(message: String) -> ControlError {
    ControlError::new(ErrorKind::BadRequest, Some(VERB), message)
}

fn ms_field(obj: &Map<String, Value>, key: &str, default: i64) -> Result<i64, ControlError> {
    let ms = match obj.get(key) {
        None | Some(Value::Null) => default,
        Some(v) => v.as_i64().ok_or_else(|| {
            bad(format!(
                "`{key}` must be an integer of milliseconds, is {v}"
            ))
        })?,
    };
    ms.checked_mul(NS_PER_MS).ok_or_else(|| {
        bad(format!(
            "`{key}` is {ms} ms, more than the {} ms allowed",
            crate::flight::trigger::MAX_WINDOW_NS / NS_PER_MS
        ))
    })
}

/// The request's fields.
///
/// # Errors
/// `BAD_REQUEST` naming the field.
pub fn parse(obj: &Map<String, Value>) -> Result<TriggerRequest, ControlError> {
    let reason = match obj.get("reason") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => return Err(bad(format!("`reason` must be a string, is {v}"))),
    };
    let streams = match obj.get("streams") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) => {
            let mut out = Vec::new();
            for v in a {
                match v.as_str() {
                    Some(s) if !s.is_empty() => out.push(s.to_owned()),
                    _ => {
                        return Err(bad(format!(
                            "`streams` entries must be non-empty strings, found {v}"
                        )))
                    }
                }
            }
            Some(out)
        }
        Some(v) => return Err(bad(format!("`streams` must be an array of names, is {v}"))),
    };
    let at_ns = match obj.get("at_ns") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_i64()
                .ok_or_else(|| bad(format!("`at_ns` must be an integer, is {v}")))?,
        ),
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

/// Run the trigger.
///
/// # Errors
/// The typed refusal: `BAD_REQUEST` (negative or too long a window), `NO_FLIGHT_STREAM`,
/// `UNKNOWN_STREAM`, `NOTHING_RECORDED`, `STORAGE`.
pub fn trigger(st: &ControlState, req: &TriggerRequest) -> Result<Value, ControlError> {
    match crate::flight::trigger(&st.ctx.flight, req) {
        Ok(r) => Ok(json!({
            "episode": r.episode,
            "merged": r.merged,
            "window_start_ns": r.window_start_ns,
            "window_end_ns": r.window_end_ns,
        })),
        Err(e) => {
            let kind = match &e {
                TriggerError::Negative { .. } | TriggerError::TooLong { .. } => {
                    ErrorKind::BadRequest
                }
                TriggerError::NoFlightStream => ErrorKind::NoFlightStream,
                TriggerError::UnknownStream { .. } => ErrorKind::UnknownStream,
                TriggerError::NothingRecorded => ErrorKind::NothingRecorded,
                _ => ErrorKind::Storage,
            };
            Err(ControlError::new(kind, Some(VERB), e.to_string()))
        }
    }
}
