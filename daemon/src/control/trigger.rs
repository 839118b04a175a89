//! `trigger`: persist the window `[t - pre, t + post]` of the flight streams as a new
//! episode (or extend the pending one), through `flight::trigger`. Mutating: the admin
//! allowlist, as `close`.
//!
//! Request: `{"verb":"trigger","pre_ms":30000,"post_ms":10000,"reason":"...",
//! "streams":["EP","EP/STREAM"],"at_ns":T}` (every key optional). Reply:
//! `{"episode":W,"merged":false,"window_start_ns":..,"window_end_ns":..}`.

use serde_json::{json, Value};

use super::protocol::{ControlError, ErrorKind};
use super::state::ControlState;
use crate::flight::{TriggerError, TriggerRequest};

/// Run the trigger.
///
/// # Errors
/// The typed refusal: `BAD_REQUEST` (negative or too long a window), `NO_FLIGHT_STREAM`,
/// `UNKNOWN_STREAM`, `NOTHING_RECORDED`, `STORAGE`; `QUOTA_EXCEEDED` while
/// `rolling.quota_policy = "refuse_windows"` is in force (what may not be evicted alone
/// exceeds `publish.quota_bytes`).
pub fn trigger(st: &ControlState, req: &TriggerRequest) -> Result<Value, ControlError> {
    let quota = &st.ctx.upload.quota;
    if quota.windows_refused() {
        tracing::warn!(reason = %req.reason, "trigger refused: the quota is exceeded");
        return Err(ControlError::new(
            ErrorKind::QuotaExceeded,
            Some("trigger"),
            format!(
                "trigger refused: {} bytes the daemon may not evict exceed publish.quota_bytes \
                 ({}); rolling.quota_policy = \"refuse_windows\" refuses new windows until \
                 the quota allows",
                quota.kept_bytes(),
                quota.quota_bytes()
            ),
        )
        .with("kept_bytes", json!(quota.kept_bytes()))
        .with("quota_bytes", json!(quota.quota_bytes())));
    }
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
            Err(ControlError::new(kind, Some("trigger"), e.to_string()))
        }
    }
}
