//! `episodes`: every episode of the data directory, open ones (from the registry, with live
//! counters) merged with finished ones (from their manifests).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::Ordering;

use serde_json::{json, Value};
use wshard::manifest::Manifest;

use super::status::unix_seconds;
use super::ControlState;
use crate::episode::layout::{EpisodeLayout, QUARANTINE_DIR};

/// What the manifest of one episode directory says.
fn from_manifest(data_dir: &Path, id: &str) -> Value {
    let layout = EpisodeLayout::new(data_dir, id);
    match Manifest::read_file(layout.manifest()) {
        Ok(m) => {
            let bytes: u64 = m
                .chunks
                .iter()
                .filter_map(|c| std::fs::metadata(layout.dir.join(&c.uri)).ok())
                .map(|md| md.len())
                .sum();
            json!({
                "episode": id,
                "open": false,
                "status": m.status.as_deref().unwrap_or("unknown"),
                "reason": m.extra.get("reason").cloned().unwrap_or(Value::Null),
                "timesteps": m.total_timesteps,
                "chunks": m.chunks.len(),
                "bytes": bytes,
            })
        }
        Err(e) => json!({
            "episode": id,
            "open": false,
            "status": "unreadable",
            "reason": format!("manifest {}: {e}", layout.manifest().display()),
            "timesteps": Value::Null,
            "chunks": Value::Null,
            "bytes": Value::Null,
        }),
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
    for e in st.ctx.registry.episodes() {
        let s = &e.stats;
        let bytes_on_disk = all
            .get(&e.episode_id)
            .and_then(|v| v["bytes"].as_u64())
            .unwrap_or(0);
        all.insert(
            e.episode_id.clone(),
            json!({
                "episode": e.episode_id,
                "open": true,
                "status": "recording",
                "reason": Value::Null,
                "timesteps": s.received.load(Ordering::Relaxed),
                "durable": s.durable.load(Ordering::Relaxed),
                "chunks": s.chunks.load(Ordering::Relaxed),
                "bytes": bytes_on_disk,
                "received_bytes": s.bytes.load(Ordering::Relaxed),
                "client": e.client_name,
                "opened_at_unix_s": unix_seconds(e.opened_at),
            }),
        );
    }
    json!({ "episodes": all.into_values().collect::<Vec<_>>() })
}
