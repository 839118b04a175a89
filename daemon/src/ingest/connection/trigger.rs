//! Version 2, `TRIGGER` from a producer, and the `EVENT` labelled `trigger`: both persist
//! the flight recorder's window through [`crate::flight::trigger`], the one entry every
//! front end calls (docs/PROTOCOL.md, "TRIGGER").
//!
//! Access: a producer connection is past the ingest allowlist (`SO_PEERCRED` at the
//! accept); it is the robot's own process (the teleop button), so it may trigger without
//! the control socket's admin allowlist. The trigger touches no timestep: the window is
//! made durable (its pending record) and its copy runs on the window's thread.

use std::sync::atomic::Ordering;

use serde_json::Value;
use wshard_ingest_proto::{ErrorCode, Frame, FrameType, Trigger, Triggered};

use super::link::Link;
use crate::flight::field_error::TriggerFieldError;
use crate::flight::{TriggerError, TriggerReply, TriggerRequest};

/// The label of an `EVENT` that also fires a trigger.
pub(super) const TRIGGER_EVENT_LABEL: &str = "trigger";
/// `pre_ms` of an `EVENT` trigger whose data names none (the control verb's default).
const EVENT_DEFAULT_PRE_MS: i64 = 30_000;
/// `post_ms` of an `EVENT` trigger whose data names none (the control verb's default).
const EVENT_DEFAULT_POST_MS: i64 = 10_000;
const NS_PER_MS: i64 = 1_000_000;

/// The `ERROR` code of a refusal of `flight::trigger`: the window's fields (`LIMIT`:
/// negative or longer than allowed), which streams (`NOT_OPEN`: no flight stream, nothing
/// recorded; `UNKNOWN_EPISODE`: a named stream that does not record in flight mode), the
/// disk (`STORAGE`).
fn code_of(e: &TriggerError) -> ErrorCode {
    match e {
        TriggerError::Negative { .. } | TriggerError::TooLong { .. } => ErrorCode::Limit,
        TriggerError::UnknownStream { .. } => ErrorCode::UnknownEpisode,
        TriggerError::NoFlightStream | TriggerError::NothingRecorded => ErrorCode::NotOpen,
        _ => ErrorCode::Storage,
    }
}

/// The flight trigger of `request`, or its refusal as an `ERROR`'s code and message (the
/// message starts `trigger`): the quota first (`rolling.quota_policy = "refuse_windows"` in
/// force: `DISK_LOW`, as the control verb's `QUOTA_EXCEEDED`), then [`code_of`].
fn fire(link: &Link, request: &TriggerRequest) -> Result<TriggerReply, (ErrorCode, String)> {
    let quota = &link.ctx.upload.quota;
    if quota.windows_refused() {
        return Err((
            ErrorCode::DiskLow,
            format!(
                "trigger refused: {} bytes the daemon may not evict exceed publish.quota_bytes \
                 ({}); rolling.quota_policy = \"refuse_windows\" refuses new windows until the \
                 quota allows",
                quota.kept_bytes(),
                quota.quota_bytes()
            ),
        ));
    }
    crate::flight::trigger(&link.ctx.flight, request).map_err(|e| {
        if matches!(e, TriggerError::Storage(_)) {
            tracing::error!(peer = %link.peer, "trigger not persisted: {e}");
        }
        (code_of(&e), e.to_string())
    })
}

/// `TRIGGER`: answered by `TRIGGERED` or an `ERROR` whose message starts `TRIGGER:`.
/// The connection and what it records carry on either way.
pub(super) fn on_trigger(frame: Trigger, link: &Link) {
    let request = TriggerRequest {
        pre_ns: frame.pre_ns,
        post_ns: frame.post_ns,
        reason: frame.reason,
        streams: (!frame.streams.is_empty()).then_some(frame.streams),
        at_ns: frame.at_ns,
    };
    match fire(link, &request) {
        Ok(r) => {
            tracing::info!(peer = %link.peer, episode = %r.episode, merged = r.merged,
                "trigger from a producer");
            link.responder.send(&Frame::Triggered(Triggered {
                episode: r.episode,
                merged: r.merged,
                window_start_ns: r.window_start_ns,
                window_end_ns: r.window_end_ns,
            }));
        }
        Err((code, message)) => {
            link.error(code, format!("{}: {message}", FrameType::Trigger.name()));
        }
    }
}

/// A number of milliseconds of an event's json data, or the default.
fn ms_of(data: Option<&Value>, key: &str, default: i64) -> Result<i64, TriggerFieldError> {
    let ms = match data.and_then(|d| d.get(key)) {
        None | Some(Value::Null) => default,
        Some(v) => v.as_i64().ok_or_else(|| {
            TriggerFieldError::new(key, format!("must be an integer of milliseconds, is {v}"))
        })?,
    };
    ms.checked_mul(NS_PER_MS)
        .ok_or_else(|| TriggerFieldError::new(key, format!("is {ms} ms, too long a window")))
}

/// The trigger an `EVENT` labelled `trigger` asks for: at the event's `t_ns`, its window
/// from a json event's `{"pre_ms","post_ms","reason"}` (defaults otherwise), its reason
/// the json's `reason`, else a text event's text, else `event trigger`.
fn request_of(
    t_ns: i64,
    json: Option<&str>,
    text: Option<&str>,
) -> Result<TriggerRequest, TriggerFieldError> {
    let value: Option<Value> = match json {
        Some(j) => Some(
            serde_json::from_str(j)
                .map_err(|e| TriggerFieldError::new("data", format!("is not JSON: {e}")))?,
        ),
        None => None,
    };
    let obj = value.as_ref().filter(|v| v.is_object());
    let reason = match obj.and_then(|o| o.get("reason")) {
        None | Some(Value::Null) => text.map_or_else(|| "event trigger".to_owned(), str::to_owned),
        Some(Value::String(s)) => s.clone(),
        Some(v) => {
            return Err(TriggerFieldError::new(
                "reason",
                format!("must be a string, is {v}"),
            ))
        }
    };
    Ok(TriggerRequest {
        pre_ns: ms_of(obj, "pre_ms", EVENT_DEFAULT_PRE_MS)?,
        post_ns: ms_of(obj, "post_ms", EVENT_DEFAULT_POST_MS)?,
        reason,
        streams: None,
        at_ns: Some(t_ns),
    })
}

/// After an `EVENT` labelled `trigger` was recorded: fire its trigger. A refusal does not
/// refuse the event (its `ACCEPTED{EVENT}` stands): it is logged and counted
/// (`flight.triggers.event_refused` in status).
pub(super) fn on_trigger_event(t_ns: i64, json: Option<&str>, text: Option<&str>, link: &Link) {
    let outcome = match request_of(t_ns, json, text) {
        Ok(r) => fire(link, &r).map_err(|(_, message)| message),
        Err(e) => Err(e.to_string()),
    };
    match outcome {
        Ok(r) => tracing::info!(peer = %link.peer, episode = %r.episode, merged = r.merged,
            "trigger from an EVENT"),
        Err(e) => {
            link.ctx
                .flight
                .counters()
                .event_refused
                .fetch_add(1, Ordering::Relaxed);
            tracing::warn!(peer = %link.peer, "EVENT `trigger` recorded, its trigger refused: {e}");
        }
    }
}
