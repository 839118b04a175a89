//! `split EPISODE`: cut an open episode while it records (a multi-stream one in
//! `super::split_multi`). Everything recorded
//! so far becomes a finalized `complete` episode (the part), recording goes on into the
//! next part (`EP.0001`, `EP.0002`, ...), its producer unaware. The request goes to the
//! episode's writer (see `session::parts`), which makes the cut at its next step boundary
//! (at the latest after a heartbeat of the writer); the reply names both parts as soon as
//! the cut is made, the finished part's last chunk and manifest being committed after.

use std::time::Duration;

use crossbeam_channel::RecvTimeoutError;
use serde_json::{json, Value};
use wshard::manifest::Manifest;

use super::part_target::{finished_error, resolve, window_error, Target};
use super::protocol::{ControlError, ErrorKind};
use super::state::ControlState;
use crate::session::parts::SplitError;
use wshard_storage::layout::EpisodeLayout;

/// How long the control socket waits for the writer to make the cut (the writer looks at
/// its requests at least every heartbeat, 250 ms; a cut may wait behind a full queue).
pub const SPLIT_WAIT: Duration = Duration::from_secs(10);

/// Split `episode` on behalf of `uid` (the caller checked the allowlist).
///
/// # Errors
/// `UNKNOWN_EPISODE` when it is not open, `PART_FINISHED` for a finished part of an open
/// episode, `WINDOW_PENDING` for a trigger window being built, `NOT_SPLITTABLE` for a stream of a
/// multi-stream episode (`EP/STREAM`; a multi-stream episode is split whole, see
/// `super::split_multi`), `EMPTY_PART` when the current part holds no timestep,
/// `PART_ID_TOO_LONG`, `PART_EXISTS`, `STORAGE`, `TIMEOUT`.
pub fn split(st: &ControlState, episode: &str, uid: u32) -> Result<Value, ControlError> {
    let err = |kind: ErrorKind, msg: String| {
        ControlError::new(kind, Some("split"), msg).with("episode", json!(episode))
    };
    // An episode named by its producer's id or by the part recording now (a multi-stream
    // one is split whole).
    let live = match resolve(st, episode) {
        Target::Multi(m) => return super::split_multi::split_multi(st, &m, episode, uid),
        Target::FinishedPart(f) => return Err(finished_error("split", &f)),
        Target::PendingWindow => return Err(window_error("split", episode)),
        Target::Live(live) => Some(live),
        Target::NotOpen => None,
    };
    let Some(live) = live else {
        let on_disk = Manifest::read_file(EpisodeLayout::new(&st.ctx.data_dir, episode).manifest())
            .ok()
            .map(|m| m.status.unwrap_or_else(|| "unknown".into()));
        let hint = on_disk
            .as_deref()
            .map_or(String::new(), |s| format!(" (on disk: status {s})"));
        return Err(err(
            ErrorKind::UnknownEpisode,
            format!("episode `{episode}` is not open{hint}"),
        )
        .with("on_disk_status", json!(on_disk)));
    };
    let parts = match &live.parts {
        Some(p) if p.splittable() && live.multi.is_none() => p.clone(),
        _ => {
            return Err(err(
                ErrorKind::NotSplittable,
                format!(
                    "`{episode}` is a stream of a multi-stream episode: a stream is not \
                     split alone, split its episode (every stream is cut)"
                ),
            ))
        }
    };
    tracing::info!(episode, uid, "control: split requested by an operator");
    let reply = parts.request_split();
    let done = match reply.recv_timeout(SPLIT_WAIT) {
        Ok(Ok(done)) => done,
        Ok(Err(e)) => return Err(refused(episode, &e)),
        Err(RecvTimeoutError::Timeout) => {
            return Err(err(
                ErrorKind::Timeout,
                format!(
                    "episode `{episode}`: the writer did not make the cut within {} ms",
                    SPLIT_WAIT.as_millis()
                ),
            ))
        }
        Err(RecvTimeoutError::Disconnected) => {
            return Err(refused(
                episode,
                &SplitError::Finalized {
                    episode: episode.to_owned(),
                },
            ))
        }
    };
    tracing::info!(episode, finished = %done.finished, recording = %done.recording, uid, "episode split");
    Ok(json!({
        "episode": episode,
        "finished": done.finished,
        "recording": done.recording,
        "part": parts.number(),
        "uid": uid,
    }))
}

/// The typed error of a refused split.
pub(crate) fn refused(episode: &str, e: &SplitError) -> ControlError {
    let (kind, part) = match e {
        SplitError::PartIdTooLong { part, .. } => (ErrorKind::PartIdTooLong, Some(part)),
        SplitError::EmptyPart { part, .. } => (ErrorKind::EmptyPart, Some(part)),
        SplitError::PartExists { part, .. } => (ErrorKind::PartExists, Some(part)),
        SplitError::Storage { .. } => (ErrorKind::Storage, None),
        SplitError::Finalized { .. } => (ErrorKind::UnknownEpisode, None),
    };
    ControlError::new(kind, Some("split"), e.to_string())
        .with("episode", json!(episode))
        .with("part", json!(part))
}
