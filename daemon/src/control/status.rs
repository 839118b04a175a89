//! `status`: a snapshot of the daemon (version, uptime, disk, counters, recovery) and of
//! every open episode (counters and rates), as one JSON document.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{json, Value};

use super::multi_parts::MultiParts;
use super::on_disk::{on_disk_bytes, total_timesteps};
use super::state::ControlState;
use super::unix_time::unix_seconds;
use crate::multi::MultiEpisode;
use crate::recovery::RecoveryReport;
use crate::registry::{DaemonCounters, LiveEpisode};
use wshard_storage::keep;

/// Where free space stands against the watermarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiskState {
    /// No measurement yet.
    Unknown,
    Ok,
    /// Below the low watermark (or flagged low by the disk monitor): new episodes refused.
    Low,
    /// Below the high watermark: open episodes are being stopped.
    High,
}

impl DiskState {
    /// `unknown`, `ok`, `low` or `high`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Ok => "ok",
            Self::Low => "low",
            Self::High => "high",
        }
    }
}

/// The disk state of `st`'s data directory.
#[must_use]
pub fn disk_state(st: &ControlState) -> (Option<u64>, DiskState) {
    let reg = &st.ctx.registry;
    let free = reg.disk_free_bytes.load(Ordering::Relaxed);
    let low_flag = reg.disk_low.load(Ordering::Relaxed);
    if free == u64::MAX {
        let s = if low_flag {
            DiskState::Low
        } else {
            DiskState::Unknown
        };
        return (None, s);
    }
    let cfg = st.ctx.disk.config();
    let s = if free < cfg.high_watermark_free_bytes {
        DiskState::High
    } else if low_flag || free < cfg.low_watermark_free_bytes {
        DiskState::Low
    } else {
        DiskState::Ok
    };
    (Some(free), s)
}

/// The daemon counters as a JSON object.
#[must_use]
pub fn counters_json(c: &DaemonCounters) -> Value {
    let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
    json!({
        "connections_accepted": l(&c.connections_accepted),
        "connections_refused": l(&c.connections_refused),
        "connections_cut_handshake": l(&c.connections_cut_handshake),
        "connections_cut_no_episode": l(&c.connections_cut_no_episode),
        "connections_cut_write": l(&c.connections_cut_write),
        "episodes_opened": l(&c.episodes_opened),
        "episodes_finalized": l(&c.episodes_finalized),
        "episodes_refused_disk": l(&c.episodes_refused_disk),
        "episodes_stopped": l(&c.episodes_stopped),
    })
}

/// One recovery result, summarized: `timesteps_recovered` is what recovery replayed from
/// journals, `total_timesteps` the episode's length (its manifest's, `null` when it cannot
/// be read).
#[must_use]
pub fn recovery_json(data_dir: &Path, r: &RecoveryReport) -> Value {
    json!({
        "episode": r.episode_id,
        "previous_status": r.previous_status,
        "timesteps_recovered": r.timesteps_recovered,
        "total_timesteps": total_timesteps(data_dir, &r.episode_id),
        "chunks_recovered": r.chunks_recovered,
        "bytes_discarded": r.bytes_discarded(),
        "regions_discarded": r.discarded.len(),
        "files_quarantined": r.quarantined.len(),
        "lost_data": r.lost_data(),
    })
}

/// One open episode with its counters and rates. Bytes are named as in `episodes`:
/// `received_bytes` (payload received) and `on_disk_bytes` (published chunk files).
#[must_use]
pub fn episode_json(st: &ControlState, e: &LiveEpisode) -> Value {
    let s = &e.stats;
    let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let received_bytes = l(&s.bytes);
    let rates = st.rates.rates(e);
    // A stream (`EP/STREAM`) is kept with its episode; a split episode when the part
    // recording now is.
    let part_now = match (&e.parts, &e.stream_parts) {
        (Some(p), _) => p.current(),
        (None, Some(sp)) => sp.current(),
        (None, None) => e.multi.clone().unwrap_or_else(|| e.episode_id.clone()),
    };
    let kept = keep::is_kept(st.ctx.fs.as_ref(), &st.ctx.data_dir, &part_now);
    json!({
        "episode": e.episode_id,
        "client": e.client_name,
        "connection": e.peer,
        "peer_uid": e.cred.map(|c| c.uid),
        "peer_gid": e.cred.map(|c| c.gid),
        "peer_pid": e.cred.map(|c| c.pid),
        "durability": e.durability.as_str(),
        "transport": e.transport().name(),
        "opened_at_unix_s": unix_seconds(e.opened_at),
        "age_s": e.opened.elapsed().as_secs_f64(),
        "received": l(&s.received),
        "durable": l(&s.durable),
        "received_bytes": received_bytes,
        // Of the part recording now, for a split episode.
        "on_disk_bytes": on_disk_bytes(
            &st.ctx.data_dir,
            &e.parts.as_ref().map_or_else(|| e.episode_id.clone(), |p| p.current())
        ),
        // Deprecated alias of received_bytes (protocol version 1).
        "bytes": received_bytes,
        "queue_depth": l(&s.queue_depth),
        "chunks": l(&s.chunks),
        "last_fsync_us": l(&s.last_fsync_us),
        "dropped_steps": l(&s.dropped_steps),
        "gaps": l(&s.gaps),
        "timesteps_per_s": rates.timesteps_per_s,
        "bytes_per_s": rates.bytes_per_s,
        // The producer's latest COUNTERS (protocol version 2), by name; `{}` before any.
        "producer_counters": e.producer_counters(),
        "kept": kept,
        // The part recording now and the parts so far (`split`, `[rolling]`).
        "parts": e.parts.as_ref().map(|p| p.to_json()),
    })
}

/// `[rolling]` as the daemon applies it to new episodes.
#[must_use]
pub fn rolling_json(st: &ControlState) -> Value {
    let r = st.ctx.settings().rolling;
    json!({
        "enabled": r.is_on(),
        "max_bytes": r.max_bytes,
        "max_duration_ms": r.max_duration_ns / 1_000_000,
    })
}

/// The `status` result.
#[must_use]
pub fn snapshot(st: &ControlState) -> Value {
    let reg = &st.ctx.registry;
    let (free, disk) = disk_state(st);
    let watermarks = st.ctx.disk.config();
    let recovery: Vec<Value> = reg
        .recovery
        .lock()
        .map(|r| {
            r.iter()
                .map(|x| recovery_json(&st.ctx.data_dir, x))
                .collect()
        })
        .unwrap_or_default();
    let left_alone: Vec<Value> = reg
        .recovery_left_alone
        .lock()
        .map(|l| {
            l.iter()
                .map(|x| {
                    json!({
                        "directory": x.name,
                        "path": x.path.display().to_string(),
                        "reason": x.reason.to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let episodes: Vec<Value> = reg.episodes().iter().map(|e| episode_json(st, e)).collect();
    let multi: Vec<Value> = reg.multis().iter().map(|m| multi_json(st, m)).collect();
    json!({
        "daemon": {
            "version": env!("CARGO_PKG_VERSION"),
            "pid": std::process::id(),
            "started_at_unix_s": unix_seconds(reg.started_at),
            "uptime_s": reg.started.elapsed().as_secs_f64(),
            "data_dir": st.ctx.data_dir.display().to_string(),
            "control_socket": st.settings.socket_path.display().to_string(),
            "shutting_down": st.ctx.shutdown.load(Ordering::Relaxed),
            "connections_active": st.ctx.active_connections.load(Ordering::Relaxed),
            "disk": {
                "free_bytes": free,
                "state": disk.name(),
                "low_watermark_free_bytes": watermarks.low_watermark_free_bytes,
                "high_watermark_free_bytes": watermarks.high_watermark_free_bytes,
            },
            "counters": counters_json(&reg.counters),
            "recovery": recovery,
            "recovery_left_alone": left_alone,
            // Episodes marked kept (`wshard keep`), open or not: never evicted.
            "kept_episodes": keep::kept(st.ctx.fs.as_ref(), &st.ctx.data_dir),
            "rolling": rolling_json(st),
            // The quota beyond eviction (`rolling.quota_policy`), after the last pass.
            "quota": st.ctx.upload.quota.to_json(),
        },
        "upload": super::upload::status_json(st),
        "flight": st.ctx.flight.status_json(),
        "episodes": episodes,
        "multi_episodes": multi,
    })
}

/// One open multi-stream episode: its streams recording now, whether the part recording
/// now is kept, and its parts (the fields of a single-stream episode's `parts`).
#[must_use]
pub fn multi_json(st: &ControlState, m: &MultiEpisode) -> Value {
    let p = MultiParts::of(&st.ctx.registry, m);
    json!({
        "episode": p.episode,
        "streams": p.streams,
        "kept": keep::is_kept(st.ctx.fs.as_ref(), &st.ctx.data_dir, &p.part),
        "parts": p.to_json(),
    })
}
