//! `episodes`: every episode of the data directory, open ones (from the registry, with live
//! counters) merged with finished ones (from their manifests). Bytes are named as in
//! `status`: `received_bytes` (payload received, open episodes only) and `on_disk_bytes`
//! (published chunk files). `kept`: the episode has a keep mark (`wshard keep`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::Ordering;

use serde_json::{json, Value};
use wshard::manifest::Manifest;

use super::multi_parts::MultiParts;
use super::on_disk::{chunk_files_bytes, on_disk_bytes};
use super::state::ControlState;
use super::unix_time::unix_seconds;
use crate::episode_files::read_index;
use crate::session::parts::SPLIT_MANIFEST_KEY;
use wshard::episode_dir::index::EpisodeIndex;
use wshard_storage::fsio::RealFs;
use wshard_storage::keep;
use wshard_storage::layout::{EpisodeLayout, QUARANTINE_DIR};

/// What the manifest of one episode directory says. A finished episode's received payload
/// is not kept: `received_bytes` is `null`.
fn from_manifest(data_dir: &Path, id: &str) -> Value {
    let dir = data_dir.join(id);
    if let Ok(Some(index)) = read_index(&RealFs, &dir, id) {
        return from_index(data_dir, &index);
    }
    let layout = EpisodeLayout::new(data_dir, id);
    match Manifest::read_file(layout.manifest()) {
        Ok(m) => {
            let on_disk = chunk_files_bytes(&layout, &m);
            json!({
                "episode": id,
                "open": false,
                "status": m.status.as_deref().unwrap_or("unknown"),
                "reason": m.extra.get("reason").cloned().unwrap_or(Value::Null),
                "timesteps": m.total_timesteps,
                "chunks": m.chunks.len(),
                // A flight ring's: the chunks and timesteps it evicted (no longer on disk).
                "ring_start": m.extra.get(wshard::manifest::RING_START_KEY).cloned().unwrap_or(Value::Null),
                "received_bytes": Value::Null,
                "on_disk_bytes": on_disk,
                // Deprecated alias of on_disk_bytes (protocol version 1).
                "bytes": on_disk,
                // A part of a split episode: its links (`episode`, `part`, `previous`, `next`).
                "split": m.extra.get(SPLIT_MANIFEST_KEY).cloned().unwrap_or(Value::Null),
            })
        }
        Err(e) => json!({
            "episode": id,
            "open": false,
            "status": "unreadable",
            "reason": format!("manifest {}: {e}", layout.manifest().display()),
            "timesteps": Value::Null,
            "chunks": Value::Null,
            "received_bytes": Value::Null,
            "on_disk_bytes": Value::Null,
            "bytes": Value::Null,
        }),
    }
}

/// What the index of a multi-stream episode says: its status, and its streams' timesteps,
/// chunks and chunk-file bytes summed (`streams`: how many).
fn from_index(data_dir: &Path, index: &EpisodeIndex) -> Value {
    let id = &index.episode_id;
    let on_disk: u64 = index
        .streams
        .iter()
        .filter_map(|s| {
            let layout = EpisodeLayout::stream(data_dir, id, &s.name);
            let m = Manifest::read_file(layout.manifest()).ok()?;
            Some(chunk_files_bytes(&layout, &m))
        })
        .sum();
    let window = crate::episode_files::is_flight_window(index);
    json!({
        "episode": id,
        "open": false,
        "status": index.status.as_str(),
        "reason": Value::Null,
        // A trigger window of the flight recorder: its triggers (never evicted).
        "origin": index.metadata.get(crate::flight::ORIGIN_KEY).cloned().unwrap_or(Value::Null),
        "triggers": if window { index.metadata.get("triggers").cloned().unwrap_or(Value::Null) } else { Value::Null },
        // A window given up after its retries: why (it holds what was copied, `interrupted`).
        "window_failure": if window { index.metadata.get(crate::flight::WINDOW_FAILURE_KEY).cloned().unwrap_or(Value::Null) } else { Value::Null },
        // Streams whose post-window was cut short at the deadline: the last t_ns held.
        "cut_short": if window { cut_short_of(index) } else { Value::Null },
        "timesteps": index.streams.iter().map(|s| s.steps).sum::<u64>(),
        "chunks": index.streams.iter().map(|s| s.chunks).sum::<u64>(),
        "streams": index.streams.len(),
        // A part of a split episode: its links (`episode`, `part`, `previous`, `next`).
        "split": index.metadata.get(SPLIT_MANIFEST_KEY).cloned().unwrap_or(Value::Null),
        "received_bytes": Value::Null,
        "on_disk_bytes": on_disk,
        "bytes": on_disk,
    })
}

/// A window's streams cut short: `{stream: last t_ns held}`, `null` when none was.
fn cut_short_of(index: &wshard::episode_dir::index::EpisodeIndex) -> Value {
    let cut: serde_json::Map<String, Value> = index
        .metadata
        .get("window")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|w| {
            let last = w.get(crate::flight::CUT_SHORT_KEY)?;
            Some((w.get("stream")?.as_str()?.to_owned(), last.clone()))
        })
        .collect();
    if cut.is_empty() {
        Value::Null
    } else {
        Value::Object(cut)
    }
}

/// Episode directories under `data_dir` (not the quarantine, not hidden entries).
fn episode_dirs(data_dir: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(data_dir) else {
        return Vec::new();
    };
    rd.filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| n != QUARANTINE_DIR && !n.starts_with('.'))
        .collect()
}

/// The `episodes` result: `{"episodes": [...]}` sorted by id, open ones with
/// `"open": true` and status `recording`.
#[must_use]
pub fn list(st: &ControlState) -> Value {
    let mut all: BTreeMap<String, Value> = BTreeMap::new();
    for id in episode_dirs(&st.ctx.data_dir) {
        let v = from_manifest(&st.ctx.data_dir, &id);
        all.insert(id, v);
    }
    // An open multi-stream episode: its streams follow as `EP/STREAM`.
    // After a split, the part recording now is the open one (the finished parts are
    // listed from their indexes).
    for m in st.ctx.registry.multis() {
        let parts = MultiParts::of(&st.ctx.registry, &m);
        if let Some(v) = all.get_mut(&parts.part) {
            v["open"] = json!(true);
            if parts.part != m.id() {
                v["part_of"] = json!(m.id());
            }
            // The parts so far and the last cut, as `status` shows them.
            v["parts"] = parts.to_json();
        }
    }
    for e in st.ctx.registry.episodes() {
        let s = &e.stats;
        // A split episode is listed under the part recording now (the finished parts
        // are listed from their manifests).
        let part = e.parts.as_ref().filter(|p| p.number() > 0);
        let id = part.map_or_else(|| e.episode_id.clone(), |p| p.current());
        // The same figure `status` reports for this episode.
        let on_disk = on_disk_bytes(&st.ctx.data_dir, &id);
        all.insert(
            id.clone(),
            json!({
                "episode": id,
                "part_of": part.map(|p| p.base()),
                "open": true,
                "status": "recording",
                "reason": Value::Null,
                "timesteps": s.received.load(Ordering::Relaxed),
                "durable": s.durable.load(Ordering::Relaxed),
                "chunks": s.chunks.load(Ordering::Relaxed),
                "received_bytes": s.bytes.load(Ordering::Relaxed),
                "on_disk_bytes": on_disk,
                // Deprecated alias of on_disk_bytes (protocol version 1).
                "bytes": on_disk,
                "client": e.client_name,
                "opened_at_unix_s": unix_seconds(e.opened_at),
                // The parts so far and the last cut (`null` for a stream), as in `status`.
                "parts": e.parts.as_ref().filter(|p| p.splittable()).map(|p| p.to_json()),
            }),
        );
    }
    // The uploader's view of each episode; an evicted one has no directory left: listed
    // from the queue (remote only).
    let up = st.ctx.upload.snapshot();
    for (id, (state, _)) in &up.episodes {
        if *state == "evicted" && !all.contains_key(id) {
            all.insert(
                id.clone(),
                json!({
                    "episode": id,
                    "open": false,
                    "status": Value::Null,
                    "reason": Value::Null,
                    "timesteps": Value::Null,
                    "chunks": Value::Null,
                    "received_bytes": Value::Null,
                    "on_disk_bytes": 0,
                    "bytes": 0,
                }),
            );
        }
    }
    // A trigger window given up whose steps could not be finalized (or that held none):
    // no episode directory, listed from its failure.
    for f in st.ctx.flight.failed_windows() {
        if f.kept != crate::flight::FailedWindowKept::Interrupted && !all.contains_key(&f.window) {
            all.insert(
                f.window.clone(),
                json!({
                    "episode": f.window,
                    "open": false,
                    "status": "failed",
                    "reason": f.to_string(),
                    "origin": crate::flight::ORIGIN_FLIGHT_WINDOW,
                    "window_failure": f,
                    "timesteps": Value::Null,
                    "chunks": Value::Null,
                    "received_bytes": Value::Null,
                    "on_disk_bytes": Value::Null,
                    "bytes": Value::Null,
                }),
            );
        }
    }
    let kept = keep::kept(st.ctx.fs.as_ref(), &st.ctx.data_dir);
    // A stream recording in flight mode: its ring.
    for ring in st.ctx.flight.live_rings() {
        if let Some(v) = all.get_mut(&ring.identity.name()) {
            let r = ring.view();
            v["flight"] = json!({
                "ring_seconds": ring.bounds.max_ns as f64 / 1e9,
                "ring_bytes": ring.bounds.max_bytes,
                "held_bytes": r.bytes,
                "held_chunks": r.chunks,
                "oldest_t_ns": r.oldest_t_ns,
                "newest_t_ns": r.newest_t_ns,
                "latched": ring.identity.latched,
            });
        }
    }
    for (id, v) in &mut all {
        v["upload"] = super::upload::episode_upload(&up, id);
        // A stream (`EP/STREAM`) is kept with its episode.
        let whole = id.split('/').next().unwrap_or(id);
        v["kept"] = json!(kept.iter().any(|k| k == whole));
    }
    json!({ "episodes": all.into_values().collect::<Vec<_>>() })
}
