//! `upload status|retry|drop [EPISODE]`: the upload queue as an operator sees it, and what
//! an operator may do about one episode.
//!
//! - `status` (read-only): every entry of the queue, or one episode's: its state
//!   (`queued`, `uploading`, `uploaded`, `published`, `evicting`, `evicted`, `dropped`), the
//!   bytes not yet on the store, the failed attempts since the daemon started and the last
//!   error.
//! - `retry` (mutating): try the episode again now: the upload thread's wait ends, its
//!   backoff starts over, and an episode left out until a restart (a local error) is taken
//!   back.
//! - `drop` (mutating): the episode leaves the queue (a `dropped` record in the queue log,
//!   durable before the reply): never sent, published or evicted afterwards; its files are
//!   never touched.
//!
//! The control socket only asks ([`crate::upload::requests`]); the upload thread, the queue
//! log's one writer, acts at its next step (between blobs). `drop` waits for the record.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::protocol::{ControlError, ErrorKind, UploadAction};
use super::state::ControlState;
use crate::upload::view::UploadView;
use wshard_storage::layout::{validate_episode_id, MAX_EPISODE_ID_BYTES};

/// The verb's name on the wire.
const VERB: &str = "upload";
/// How long `drop` waits for the upload thread to record it (it takes requests between
/// blobs; one part of a paced upload may take seconds).
pub const DROP_WAIT: Duration = Duration::from_secs(20);
/// How often `drop` looks whether it was recorded.
const DROP_POLL: Duration = Duration::from_millis(20);
/// The states an operator may still retry or drop.
const ACTIONABLE: &[&str] = &["queued", "uploading", "uploaded"];

fn err(kind: ErrorKind, episode: &str, message: String) -> ControlError {
    ControlError::new(kind, Some(VERB), message).with("episode", json!(episode))
}

/// One entry of the queue.
fn entry(v: &UploadView, id: &str) -> Option<Value> {
    let (state, pending) = v.episodes.get(id)?;
    let a = v.attempts.get(id);
    Some(json!({
        "episode": id,
        "state": state,
        "pending_bytes": pending,
        "attempts": a.map_or(0, |a| a.failed),
        "last_error": a.and_then(|a| a.last_error.as_ref()).map(|(kind, message)| json!({
            "kind": kind,
            "message": message,
        })),
    }))
}

/// Why `episode` has no queue entry: not an episode of the data directory
/// (`UNKNOWN_EPISODE`), or one the uploader has not enqueued (`NOT_QUEUED`).
fn not_in_queue(st: &ControlState, episode: &str, v: &UploadView) -> ControlError {
    if !v.enabled {
        return err(
            ErrorKind::NotQueued,
            episode,
            format!("upload: episode `{episode}`: the uploader is off ([publish] enabled = false)"),
        );
    }
    if st.ctx.data_dir.join(episode).is_dir() {
        err(
            ErrorKind::NotQueued,
            episode,
            format!(
                "upload: episode `{episode}` is not in the upload queue (still recording, \
                 aborted, or not finished yet)"
            ),
        )
    } else {
        err(
            ErrorKind::UnknownEpisode,
            episode,
            format!(
                "upload: episode `{episode}` is neither in the upload queue nor in the data \
                 directory {}",
                st.ctx.data_dir.display()
            ),
        )
    }
}

/// Run `upload ACTION [EPISODE]` for `uid` (the caller checked the allowlist).
///
/// # Errors
/// `BAD_REQUEST` for an id that is no episode id; `UNKNOWN_EPISODE` for an episode neither
/// queued nor in the data directory; `NOT_QUEUED` for one not waiting in the queue (never
/// enqueued, already published, dropped; the uploader off); `TIMEOUT` when the upload thread
/// did not record a drop within [`DROP_WAIT`] (it stays asked for).
pub fn upload(
    st: &ControlState,
    action: UploadAction,
    episode: Option<&str>,
    uid: u32,
) -> Result<Value, ControlError> {
    let shared = &st.ctx.upload;
    let v = shared.snapshot();
    let Some(id) = episode else {
        let entries: Vec<Value> = v.episodes.keys().filter_map(|id| entry(&v, id)).collect();
        return Ok(json!({"enabled": v.enabled, "state": v.state.name(), "entries": entries}));
    };
    if let Err(e) = validate_episode_id(id, MAX_EPISODE_ID_BYTES) {
        return Err(err(ErrorKind::BadRequest, id, format!("upload: {e}")));
    }
    let Some(row) = entry(&v, id) else {
        return Err(not_in_queue(st, id, &v));
    };
    if action == UploadAction::Status {
        return Ok(json!({"enabled": v.enabled, "state": v.state.name(), "entries": [row]}));
    }
    let state = row["state"].as_str().unwrap_or_default().to_owned();
    if !ACTIONABLE.contains(&state.as_str()) {
        return Err(err(
            ErrorKind::NotQueued,
            id,
            format!(
                "upload {}: episode `{id}` is {state}, no longer waiting in the upload queue",
                action.name()
            ),
        )
        .with("state", json!(state)));
    }
    if action == UploadAction::Retry {
        shared.requests.retry(id);
        tracing::info!(episode = id, uid, "control: upload retry asked");
        return Ok(json!({"episode": id, "state": state, "retry": true}));
    }
    shared.requests.drop_episode(id);
    tracing::info!(episode = id, uid, "control: upload drop asked");
    let until = Instant::now() + DROP_WAIT;
    loop {
        let now = shared.snapshot();
        let now_state = now.episodes.get(id).map_or("", |(s, _)| *s);
        if now_state == crate::upload::state::DROPPED {
            return Ok(
                json!({"episode": id, "state": "dropped", "was": state, "files_kept": true}),
            );
        }
        if !ACTIONABLE.contains(&now_state) {
            // Published meanwhile: too late to drop.
            return Err(err(
                ErrorKind::NotQueued,
                id,
                format!("upload drop: episode `{id}` became {now_state} before the drop was taken"),
            )
            .with("state", json!(now_state)));
        }
        if Instant::now() >= until {
            return Err(err(
                ErrorKind::Timeout,
                id,
                format!(
                    "upload drop: episode `{id}`: the uploader did not record the drop within \
                     {DROP_WAIT:?} (it is busy with a blob, or stopped); the drop stays asked for"
                ),
            ));
        }
        std::thread::sleep(DROP_POLL);
    }
}
