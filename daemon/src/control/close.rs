//! `close EPISODE`: ask the connection that owns an open episode to finalize it
//! `interrupted`, then wait (bounded) until it has left the registry.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wshard::manifest::Manifest;

use super::protocol::{ControlError, ErrorKind};
use super::state::ControlState;
use crate::episode::layout::EpisodeLayout;
use crate::registry::StopReason;

/// How often the registry is looked at while waiting.
const POLL: Duration = Duration::from_millis(10);

/// Stop `episode` on behalf of `uid` (the caller checked the allowlist) and wait at most
/// `timeout` for it to be finalized.
///
/// # Errors
/// `UNKNOWN_EPISODE` when it is not open, `TIMEOUT` when it is still finalizing at the
/// deadline.
pub fn close(
    st: &ControlState,
    episode: &str,
    uid: u32,
    timeout: Duration,
) -> Result<Value, ControlError> {
    let reg = &st.ctx.registry;
    let Some(live) = reg.episode(episode) else {
        let layout = EpisodeLayout::new(&st.ctx.data_dir, episode);
        let on_disk = Manifest::read_file(layout.manifest())
            .ok()
            .map(|m| m.status.unwrap_or_else(|| "unknown".into()));
        let hint = on_disk
            .as_deref()
            .map_or(String::new(), |s| format!(" (on disk: status {s})"));
        return Err(ControlError::new(
            ErrorKind::UnknownEpisode,
            Some("close"),
            format!("episode `{episode}` is not open{hint}"),
        )
        .with("episode", json!(episode))
        .with("on_disk_status", json!(on_disk)));
    };
    let reason = StopReason::Operator { uid };
    tracing::warn!(episode, uid, "control: close requested by an operator");
    live.request_stop(reason.clone());
    let deadline = Instant::now() + timeout;
    loop {
        let still_open = reg
            .episode(episode)
            .is_some_and(|now| Arc::ptr_eq(&now, &live));
        if !still_open {
            break;
        }
        if Instant::now() >= deadline {
            return Err(ControlError::new(
                ErrorKind::Timeout,
                Some("close"),
                format!(
                    "episode `{episode}`: stop requested, still finalizing after {} ms",
                    timeout.as_millis()
                ),
            )
            .with("episode", json!(episode)));
        }
        std::thread::sleep(POLL);
    }
    let layout = EpisodeLayout::new(&st.ctx.data_dir, episode);
    let m = Manifest::read_file(layout.manifest()).ok();
    Ok(json!({
        "episode": episode,
        "status": m.as_ref().and_then(|m| m.status.clone()).unwrap_or_else(|| "interrupted".into()),
        "reason": m.as_ref().and_then(|m| m.extra.get("reason").cloned()).unwrap_or_else(|| json!(reason.manifest_reason())),
        "timesteps": m.as_ref().map(|m| m.total_timesteps),
        "chunks": m.as_ref().map(|m| m.chunks.len()),
        "uid": uid,
    }))
}
