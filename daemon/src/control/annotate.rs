//! `annotate EPISODE`: add an operator annotation to an episode, recording or finalized,
//! single- or multi-stream. The episode's `{EP}_annotations.json` is replaced atomically
//! with one more entry (`episode_files::annotate`, through the daemon's `Fs`); chunks and
//! manifests are never touched. Requests are serialized (one annotation commit at a time).
//!
//! A relative time (`+12.5s`) counts from the episode's first timestamp: the earliest first
//! `t_ns` of its streams (from the index, or from a stream's first published chunk), or of
//! its first chunk for a single-stream episode; before any timestep is published there is
//! none, and only an absolute `t_ns` is accepted.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use wshard::episode::names::TIMESTAMPS_NS;
use wshard::manifest::Manifest;
use wshard::read::ShardReader;

use super::annotate_request::{AnnotateAt, AnnotateRequest};
use super::protocol::{ControlError, ErrorKind};
use super::state::ControlState;
use crate::episode_files::{annotate as commit, index_path, read_index, NewAnnotation};
use wshard_storage::layout::{validate_episode_id, EpisodeLayout, MAX_EPISODE_ID_BYTES};

const VERB: &str = "annotate";

/// The first `t_ns` of the chunks `layout`'s manifest lists, if any.
fn first_published(layout: &EpisodeLayout) -> Option<i64> {
    let m = Manifest::read_file(layout.manifest()).ok()?;
    let chunk = m.chunks.first()?;
    let block = ShardReader::open(layout.dir.join(&chunk.uri))
        .ok()?
        .read_block(TIMESTAMPS_NS)
        .ok()?;
    block
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .map(i64::from_le_bytes)
}

/// The first timestamp of episode `id` (see the module doc).
fn first_t_ns(st: &ControlState, data_dir: &Path, id: &str) -> Option<i64> {
    let dir = data_dir.join(id);
    match read_index(&*st.ctx.fs, &dir, id) {
        Ok(Some(index)) => index
            .streams
            .iter()
            .filter_map(|s| {
                s.first_t_ns
                    .or_else(|| first_published(&EpisodeLayout::stream(data_dir, id, &s.name)))
            })
            .min(),
        _ => first_published(&EpisodeLayout::new(data_dir, id)),
    }
}

/// Add `req`'s annotation on behalf of `uid` (the caller checked the admin allowlist).
///
/// # Errors
/// `BAD_REQUEST` (a bad episode id, a relative time without a timestamp to count from),
/// `UNKNOWN_EPISODE`, `STORAGE` (the file unreadable, or its commit failed).
pub fn annotate(st: &ControlState, req: AnnotateRequest, uid: u32) -> Result<Value, ControlError> {
    // An open episode that was split: its annotations go to the part recording now.
    let current = st
        .ctx
        .registry
        .episode(&req.episode)
        .and_then(|l| l.parts.as_ref().map(|p| p.current()));
    let id = current.as_deref().unwrap_or(req.episode.as_str());
    let refuse = |kind, message: String| {
        ControlError::new(kind, Some(VERB), message).with("episode", json!(id))
    };
    if let Err(e) = validate_episode_id(id, MAX_EPISODE_ID_BYTES) {
        return Err(refuse(ErrorKind::BadRequest, format!("`episode`: {e}")));
    }
    let data_dir = &st.ctx.data_dir;
    let layout = EpisodeLayout::new(data_dir, id);
    let fs = &*st.ctx.fs;
    if !fs.exists(&layout.manifest()) && !fs.exists(&index_path(&layout.dir, id)) {
        return Err(refuse(
            ErrorKind::UnknownEpisode,
            format!("episode `{id}` does not exist in the data directory"),
        ));
    }
    let t_ns = match req.at {
        AnnotateAt::Absolute(t) => t,
        AnnotateAt::AfterStart(ns) => {
            let Some(first) = first_t_ns(st, data_dir, id) else {
                return Err(refuse(
                    ErrorKind::BadRequest,
                    format!(
                        "`at`: episode `{id}` has no published timestep to count from yet; give an absolute t_ns"
                    ),
                ));
            };
            first
                .checked_add(ns)
                .ok_or_else(|| refuse(ErrorKind::BadRequest, "`at`: out of range".to_owned()))?
        }
    };
    let kind = req.data.kind().as_str();
    let new = NewAnnotation {
        t_ns,
        label: req.label.clone(),
        data: req.data,
        author: format!("uid {uid}"),
        created_unix_ns: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
    };
    let done = {
        let _one_at_a_time = st
            .annotations
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        commit(fs, &layout.dir, id, new)
    };
    let (seq, file) = done.map_err(|e| refuse(ErrorKind::Storage, e.to_string()))?;
    tracing::info!(episode = id, uid, seq, t_ns, label = %req.label, "control: annotation added");
    Ok(json!({
        "episode": id,
        "seq": seq,
        "t_ns": t_ns,
        "label": req.label,
        "kind": kind,
        "file": file.display().to_string(),
        "uid": uid,
    }))
}
