//! `close`, `stop` and `abort EPISODE`: ask the connection that owns an open episode to
//! finalize it (`interrupted`, `complete` or `aborted`: the [`Ending`]), then wait
//! (bounded) until it has left the registry. A multi-stream episode is closed with the same
//! status and each of its streams stopped; it finalizes when the last one has. The three
//! differ only by the stop reason they hand the registry, and so by the final status. A
//! split episode (single- or multi-stream) is named by the producer's id or by its part
//! recording now (`super::part_target`); a finished part of it is `PART_FINISHED`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wshard::manifest::Manifest;

use super::part_target::{finished_error, resolve, window_error, Target};
use super::protocol::{ControlError, ErrorKind};
use super::state::ControlState;
use crate::episode_files::read_index;
use crate::multi::MultiEpisode;
use crate::registry::StopReason;
use wshard_storage::layout::EpisodeLayout;

/// How often the registry is looked at while waiting.
const POLL: Duration = Duration::from_millis(10);

/// Which verb ends the episode, and so its final status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// `close`: finalized `interrupted` ("closed by operator").
    Close,
    /// `stop`: finalized `complete` ("stopped by operator"), like the producer's CLOSE.
    Stop,
    /// `abort`: finalized `aborted` ("aborted by operator"), its data kept.
    Abort,
}

impl Ending {
    /// The verb's name on the wire.
    #[must_use]
    pub fn verb(self) -> &'static str {
        match self {
            Self::Close => "close",
            Self::Stop => "stop",
            Self::Abort => "abort",
        }
    }

    /// The stop request the registry carries to the episode's connection.
    fn reason(self, uid: u32) -> StopReason {
        match self {
            Self::Close => StopReason::Operator { uid },
            Self::Stop => StopReason::OperatorStop { uid },
            Self::Abort => StopReason::OperatorAbort { uid },
        }
    }
}

/// `close` of `episode` on behalf of `uid` (the caller checked the allowlist).
///
/// # Errors
/// As [`end`].
pub fn close(
    st: &ControlState,
    episode: &str,
    uid: u32,
    timeout: Duration,
) -> Result<Value, ControlError> {
    end(st, episode, uid, timeout, Ending::Close)
}

/// End `episode` as `ending` says on behalf of `uid` (the caller checked the allowlist)
/// and wait at most `timeout` for it to be finalized.
///
/// # Errors
/// `UNKNOWN_EPISODE` when it is not open (with its status on disk when it exists
/// finished), `TIMEOUT` when it is still finalizing at the deadline.
pub fn end(
    st: &ControlState,
    episode: &str,
    uid: u32,
    timeout: Duration,
    ending: Ending,
) -> Result<Value, ControlError> {
    let verb = ending.verb();
    let reg = &st.ctx.registry;
    let live = match resolve(st, episode) {
        Target::Multi(ep) => return end_multi(st, &ep, episode, uid, timeout, ending),
        Target::FinishedPart(f) => return Err(finished_error(verb, &f)),
        Target::PendingWindow => return Err(window_error(verb, episode)),
        Target::Live(live) => Some(live),
        Target::NotOpen => None,
    };
    let Some(live) = live else {
        let layout = EpisodeLayout::new(&st.ctx.data_dir, episode);
        // A multi-stream episode's status is its index's.
        let on_disk = match read_index(st.ctx.fs.as_ref(), &layout.dir, episode) {
            Ok(Some(index)) => Some(index.status.as_str().to_owned()),
            _ => Manifest::read_file(layout.manifest())
                .ok()
                .map(|m| m.status.unwrap_or_else(|| "unknown".into())),
        };
        let hint = on_disk
            .as_deref()
            .map_or(String::new(), |s| format!(" (on disk: status {s})"));
        return Err(ControlError::new(
            ErrorKind::UnknownEpisode,
            Some(verb),
            format!("episode `{episode}` is not open{hint}"),
        )
        .with("episode", json!(episode))
        .with("on_disk_status", json!(on_disk)));
    };
    let reason = ending.reason(uid);
    tracing::warn!(
        episode,
        uid,
        verb,
        outcome = reason.outcome().as_str(),
        "control: {verb} requested by an operator"
    );
    live.request_stop(reason.clone());
    let deadline = Instant::now() + timeout;
    loop {
        let still_open = reg
            .episode(&live.episode_id)
            .is_some_and(|now| Arc::ptr_eq(&now, &live));
        if !still_open {
            break;
        }
        if Instant::now() >= deadline {
            return Err(ControlError::new(
                ErrorKind::Timeout,
                Some(verb),
                format!(
                    "episode `{episode}`: {verb} requested, still finalizing after {} ms",
                    timeout.as_millis()
                ),
            )
            .with("episode", json!(episode)));
        }
        std::thread::sleep(POLL);
    }
    // A stream (`EP/STREAM`) keeps its manifest in the `streams/` folder of its
    // episode's part recording now; a split episode's last part is the one the close
    // finalized.
    let part = live.parts.as_ref().map(|p| p.current());
    let layout = match (&live.multi, &live.stream_parts) {
        (Some(_), Some(sp)) => {
            let (_, stream) = live.episode_and_stream();
            EpisodeLayout::stream(&st.ctx.data_dir, &sp.current(), stream)
        }
        _ => EpisodeLayout::new(
            &st.ctx.data_dir,
            part.as_deref().unwrap_or(&live.episode_id),
        ),
    };
    let m = Manifest::read_file(layout.manifest()).ok();
    Ok(json!({
        "episode": episode,
        "status": m.as_ref().and_then(|m| m.status.clone()).unwrap_or_else(|| reason.outcome().as_str().into()),
        "reason": m.as_ref().and_then(|m| m.extra.get("reason").cloned()).unwrap_or_else(|| json!(reason.manifest_reason())),
        "timesteps": m.as_ref().map(|m| m.total_timesteps),
        "chunks": m.as_ref().map(|m| m.chunks.len()),
        "part": part,
        "uid": uid,
    }))
}

/// [`end`] of a multi-stream episode (`named` by its id or its part recording now):
/// closed with the ending's status, every stream stopped (`ERROR{STOPPED}` to each
/// producer, and to the owner); wait until it finalized.
fn end_multi(
    st: &ControlState,
    ep: &Arc<MultiEpisode>,
    named: &str,
    uid: u32,
    timeout: Duration,
    ending: Ending,
) -> Result<Value, ControlError> {
    let verb = ending.verb();
    let reg = &st.ctx.registry;
    let episode = ep.id();
    // The part the stop finalizes (the episode itself until a split).
    let part = ep.current_part();
    let reason = ending.reason(uid);
    tracing::warn!(
        episode,
        uid,
        verb,
        outcome = reason.outcome().as_str(),
        "control: {verb} of a multi-stream episode requested by an operator"
    );
    reg.stop_multi(ep, &reason);
    let deadline = Instant::now() + timeout;
    while reg.multi(episode).is_some_and(|now| Arc::ptr_eq(&now, ep)) {
        if Instant::now() >= deadline {
            return Err(ControlError::new(
                ErrorKind::Timeout,
                Some(verb),
                format!(
                    "episode `{episode}`: its streams were asked to stop ({verb}), still finalizing after {} ms",
                    timeout.as_millis()
                ),
            )
            .with("episode", json!(episode)));
        }
        std::thread::sleep(POLL);
    }
    let index = ep.index();
    Ok(json!({
        "episode": named,
        "status": index.status.as_str(),
        "reason": reason.manifest_reason(),
        "timesteps": index.streams.iter().map(|s| s.steps).sum::<u64>(),
        "chunks": index.streams.iter().map(|s| s.chunks).sum::<u64>(),
        "streams": index.streams.iter().map(|s| json!({"stream": s.name, "status": s.status.as_str(), "timesteps": s.steps, "chunks": s.chunks})).collect::<Vec<_>>(),
        "part": part,
        "uid": uid,
    }))
}
