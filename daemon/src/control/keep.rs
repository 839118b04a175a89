//! `keep EPISODE` (and `keep EPISODE` with `release`): mark an episode kept, so that
//! retention, the quota and the low watermark never evict it, or remove the mark. The mark
//! is `data_dir/.keep/EP`, made durable before the reply (`wshard_storage::keep`).
//!
//! Any episode of the data directory may be kept: open or finished, single- or
//! multi-stream, recorded or imported, a part of a split episode (the producer's id of an
//! open split episode marks the part recording now too), a trigger window. The uploader's eviction lock is held from finding
//! the episode to making its mark, so an eviction either happened before (the episode is
//! gone: `UNKNOWN_EPISODE`) or sees the mark.

use std::path::Path;

use serde_json::{json, Value};

use super::part_target::{resolve, Target};
use super::protocol::{ControlError, ErrorKind};
use super::state::ControlState;
use crate::episode_files::index_path;
use wshard_storage::keep;
use wshard_storage::layout::{validate_episode_id, EpisodeLayout, MAX_EPISODE_ID_BYTES};

/// The verb's name on the wire.
const VERB: &str = "keep";

/// Whether `episode` is an episode of the data directory now: open (single- or
/// multi-stream), or a directory holding its manifest or its index.
fn exists(st: &ControlState, episode: &str) -> bool {
    let reg = &st.ctx.registry;
    if reg.episode(episode).is_some()
        || reg.multi(episode).is_some()
        || st.ctx.flight.is_pending_window(episode)
    {
        return true;
    }
    let data_dir: &Path = &st.ctx.data_dir;
    let layout = EpisodeLayout::new(data_dir, episode);
    let fs = st.ctx.fs.as_ref();
    layout.dir.is_dir()
        && (fs.exists(&layout.manifest()) || fs.exists(&index_path(&layout.dir, episode)))
}

/// The part recording now when `episode` is the producer's id of an open split episode
/// (single- or multi-stream): `keep EP` marks it too.
fn recording_part(st: &ControlState, episode: &str) -> Option<String> {
    let current = match resolve(st, episode) {
        Target::Multi(m) if m.id() == episode => m.current_part(),
        Target::Live(l) if l.episode_id == episode => l.parts.as_ref()?.current(),
        _ => return None,
    };
    (current != episode).then_some(current)
}

/// Mark `episode` kept (`release`: remove the mark) on behalf of `uid` (the caller checked
/// the allowlist); the producer's id of an open split episode marks (releases) the part
/// recording now too, named in the reply's `part`. A finished part is marked alone. The
/// reply: `{"episode", "kept", "changed", "part", "uid"}`.
///
/// # Errors
/// `BAD_REQUEST` for an id that is no episode id (a stream `EP/STREAM` included: a whole
/// episode is kept), `UNKNOWN_EPISODE` for an episode that does not exist (and, on
/// release, has no mark), `STORAGE` when the mark could not be made or removed (the
/// message names the step and the file).
pub fn keep(
    st: &ControlState,
    episode: &str,
    release: bool,
    uid: u32,
) -> Result<Value, ControlError> {
    if let Err(e) = validate_episode_id(episode, MAX_EPISODE_ID_BYTES) {
        let whole = if episode.contains('/') {
            " (a whole episode is kept, not one of its streams)"
        } else {
            ""
        };
        return Err(ControlError::new(
            ErrorKind::BadRequest,
            Some(VERB),
            format!("keep: {e}{whole}"),
        )
        .with("episode", json!(episode)));
    }
    let fs = st.ctx.fs.as_ref();
    let data_dir: &Path = &st.ctx.data_dir;
    let was_kept = keep::is_kept(fs, data_dir, episode);
    let guard = st.ctx.upload.hold_evictions();
    // A mark is released even when its episode is gone (deleted by hand, evicted before
    // it was kept): what was marked can be unmarked.
    let releasable = release && was_kept;
    if !releasable && !exists(st, episode) {
        drop(guard);
        return Err(ControlError::new(
            ErrorKind::UnknownEpisode,
            Some(VERB),
            format!(
                "keep: episode `{episode}` is not in the data directory {}",
                data_dir.display()
            ),
        )
        .with("episode", json!(episode)));
    }
    let part = recording_part(st, episode);
    let done = std::iter::once(episode)
        .chain(part.as_deref())
        .try_for_each(|id| {
            if release {
                keep::release(fs, data_dir, id).map(|_| ())
            } else {
                keep::mark(fs, data_dir, id)
            }
        });
    drop(guard);
    if let Err(e) = done {
        tracing::error!(episode, uid, release, "control: keep failed: {e}");
        return Err(
            ControlError::new(ErrorKind::Storage, Some(VERB), e.to_string())
                .with("episode", json!(episode)),
        );
    }
    let kept = !release;
    tracing::info!(
        episode,
        uid,
        kept,
        "control: keep mark {}",
        if release { "released" } else { "set" }
    );
    Ok(json!({
        "episode": episode,
        "kept": kept,
        "changed": was_kept != kept,
        "part": part,
        "uid": uid,
    }))
}
