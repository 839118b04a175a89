//! Version 2, the owner's side of a multi-stream episode: `EPISODE_OPEN` creates it (the
//! connection owns it), `EPISODE_CLOSE` closes it, and the owner going away (or the daemon
//! closing it on its own) closes it `interrupted`. Owning is beside the connection's state:
//! the owner may record a stream, or anything else, meanwhile.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};
use wshard::episode_dir::index::EpisodeStatus;
use wshard_ingest_proto::{AcceptedWhat, EpisodeOpen, ErrorCode, Frame, Outcome, SchemaLimits};

use super::link::{Closing, Link, Stop};
use crate::multi::{CreateError, MultiEpisode, NewMulti};
use wshard_storage::layout::validate_episode_id;

/// The schema limits of the server, for a request's checks.
pub(super) fn schema_limits(link: &Link) -> SchemaLimits {
    let l = &link.ctx.limits;
    SchemaLimits {
        max_channels: l.max_channels,
        max_frame_bytes: l.max_frame_bytes,
        max_episode_id_bytes: l.max_episode_id_bytes,
    }
}

/// Refuse with `DISK_LOW` (and `true`) while free space is below the low watermark;
/// `what` names the request.
pub(super) fn refused_for_disk(link: &Link, what: &str) -> bool {
    let ctx = &link.ctx;
    // One statvfs: the decision uses the free space of now, not of the last tick.
    ctx.disk.check_now();
    if !ctx.registry.disk_low.load(Ordering::Acquire) {
        return false;
    }
    let free = ctx.registry.disk_free_bytes.load(Ordering::Relaxed);
    ctx.registry
        .counters
        .episodes_refused_disk
        .fetch_add(1, Ordering::Relaxed);
    tracing::warn!(peer = %link.peer, free, "{what} refused: disk below the low watermark");
    link.error(
        ErrorCode::DiskLow,
        format!(
            "{what}: {free} bytes free on the data directory's filesystem, below \
             disk.low_watermark_free_bytes; new episodes are refused until space returns"
        ),
    );
    true
}

fn now_unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// `EPISODE_OPEN`: create the multi-stream episode durably, owned by this connection, and
/// answer `ACCEPTED{EPISODE_OPEN}`; or refuse it with the `ERROR` the protocol names.
pub(super) fn episode_open(open: EpisodeOpen, link: &mut Link) {
    if let Some(owned) = &link.owned {
        link.error(
            ErrorCode::AlreadyOpen,
            format!(
                "EPISODE_OPEN `{}`: this connection owns episode `{}` already; EPISODE_CLOSE it first",
                open.episode_id,
                owned.id()
            ),
        );
        return;
    }
    if let Err(e) = open.validate(&schema_limits(link)) {
        link.responder.send(&e.to_error_frame());
        return;
    }
    let id = open.episode_id.clone();
    if let Err(msg) = validate_episode_id(&id, link.ctx.limits.max_episode_id_bytes) {
        link.error(
            ErrorCode::BadEpisodeId,
            format!("EPISODE_OPEN episode_id: {msg}"),
        );
        return;
    }
    let metadata = match open.metadata_json.trim() {
        "" => Map::new(),
        text => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => m,
            _ => {
                link.error(
                    ErrorCode::BadSchema,
                    "EPISODE_OPEN metadata_json: must be a JSON object",
                );
                return;
            }
        },
    };
    if refused_for_disk(link, &format!("EPISODE_OPEN `{id}`")) {
        return;
    }
    let ctx = link.ctx.clone();
    let new = NewMulti {
        episode_id: id.clone(),
        env_id: open.env_id,
        metadata,
        created_unix_ns: now_unix_ns(),
    };
    match MultiEpisode::create(ctx.fs.clone(), &ctx.data_dir, new) {
        Ok(ep) => {
            ep.hand_finished_to(ctx.upload.handoff.clone());
            ctx.registry.add_multi(ep.clone());
            tracing::info!(peer = %link.peer, episode = %id, "multi-stream episode opened");
            link.owned = Some(ep);
            link.responder.send(&Frame::Accepted {
                what: AcceptedWhat::EpisodeOpen,
                up_to_seq: 0,
            });
        }
        Err(CreateError::Exists(id)) => link.error(
            ErrorCode::EpisodeExists,
            format!("EPISODE_OPEN episode_id `{id}`: an episode with this id already exists"),
        ),
        Err(CreateError::Storage(e)) => {
            link.error(ErrorCode::Storage, format!("EPISODE_OPEN `{id}`: {e}"));
        }
    }
}

/// `EPISODE_CLOSE` from the owner: no more joins; answered `ACCEPTED{EPISODE_CLOSE, streams
/// still recording}` (0: finalized before the reply).
pub(super) fn episode_close(outcome: Outcome, link: &mut Link) {
    let Some(ep) = link.owned.take() else {
        link.error(
            ErrorCode::NotOpen,
            "EPISODE_CLOSE: this connection owns no open multi-stream episode",
        );
        return;
    };
    let status = match outcome {
        Outcome::Completed => EpisodeStatus::Complete,
        Outcome::Aborted => EpisodeStatus::Aborted,
    };
    let progress = ep.close(status);
    link.ctx.registry.settle_multi(&ep, &progress);
    tracing::info!(peer = %link.peer, episode = %ep.id(), status = %status, recording = progress.recording, "multi-stream episode closed by its owner");
    // Still recording: the owner's events are taken until it is finalized.
    link.closing = Some(Closing {
        id: ep.id().to_owned(),
        episode: Arc::downgrade(&ep),
    });
    match progress.index_error {
        Some(e) => link.error(
            ErrorCode::Storage,
            format!(
                "EPISODE_CLOSE `{}`: the index could not be committed: {e}",
                ep.id()
            ),
        ),
        None => link.responder.send(&Frame::Accepted {
            what: AcceptedWhat::EpisodeClose,
            up_to_seq: progress.recording,
        }),
    }
}

/// The owner's episode was closed by someone else (an operator's `close`, `stop` or
/// `abort`, the disk): tell the owner
/// (`ERROR{STOPPED}`) and let go of it.
pub(super) fn obey_stop(link: &mut Link) {
    let Some((reason, outcome)) = link.owned.as_ref().and_then(|ep| ep.take_stopped()) else {
        return;
    };
    if let Some(ep) = link.owned.take() {
        link.error(
            ErrorCode::Stopped,
            format!(
                "episode `{}` closed as {} ({reason}); its streams are stopped",
                ep.id(),
                outcome.as_str()
            ),
        );
    }
}

/// The connection ends (`stop`) owning an episode: it is closed `interrupted`.
pub(super) fn owner_gone(stop: Stop, link: &mut Link) {
    let Some(ep) = link.owned.take() else {
        return;
    };
    let reason = match stop {
        Stop::Shutdown => "daemon shutdown",
        _ => "the owner disconnected without EPISODE_CLOSE",
    };
    let progress = ep.close(EpisodeStatus::Interrupted);
    link.ctx.registry.settle_multi(&ep, &progress);
    tracing::info!(peer = %link.peer, episode = %ep.id(), recording = progress.recording, "multi-stream episode closed as interrupted: {reason}");
}
