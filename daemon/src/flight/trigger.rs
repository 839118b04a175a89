//! The trigger entry every front end calls (control verb `trigger`, and later the clients,
//! the ROS bridge and producer events): [`trigger`].
//!
//! The clock of `t`: steps' `t_ns` are on each producer's timebase, so by default `t` is,
//! per stream, the latest `t_ns` received on that stream when the trigger arrives; with
//! `at_ns` it is that value on every stream. Each stream's window is `[t - pre, t + post]`.
//! A trigger while a window is still pending (its post-window recording, or its copy not
//! final) extends that window (`merged`): its end becomes the later one, its streams the
//! union. The window is durable (pending record) before the reply. A trigger after a
//! window of the same stream was persisted starts that stream after the earlier window's
//! end (`follows` in the new index): no step is copied twice, none is skipped.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use super::pending::{self, PendingRecord, TriggerNote, WindowSource};
use super::registry::FlightRegistry;
use super::window::{Window, WindowState};
use crate::error::StorageError;
use crate::session::flight_ring::FlightRing;

/// The longest `pre` or `post` a trigger may ask for (one hour).
pub const MAX_WINDOW_NS: i64 = 3_600 * 1_000_000_000;
/// Window episodes are named `{WINDOW_ID_PREFIX}{unix_ms}-{n}`.
pub const WINDOW_ID_PREFIX: &str = "flight-";

/// A trigger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TriggerRequest {
    pub pre_ns: i64,
    pub post_ns: i64,
    pub reason: String,
    /// `EPISODE` or `EPISODE/STREAM` names; `None`: every flight stream.
    pub streams: Option<Vec<String>>,
    pub at_ns: Option<i64>,
}

/// The answer: the window episode, at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TriggerReply {
    pub episode: String,
    pub merged: bool,
    pub window_start_ns: i64,
    pub window_end_ns: i64,
}

/// Why a trigger was refused; nothing was recorded for it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TriggerError {
    #[error("trigger: no stream is recording in flight mode")]
    NoFlightStream,
    #[error("trigger: `{field}` is {value} ns: a window cannot be negative")]
    Negative { field: &'static str, value: i64 },
    #[error("trigger: `{field}` is {value} ns, more than the {MAX_WINDOW_NS} ns allowed")]
    TooLong { field: &'static str, value: i64 },
    #[error("trigger: stream `{name}` is not recording in flight mode")]
    UnknownStream { name: String },
    #[error("trigger: no flight stream has received a timestep yet (give `at_ns`)")]
    NothingRecorded,
    #[error("trigger: the window could not be made durable: {0}")]
    Storage(#[from] StorageError),
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn check(field: &'static str, value: i64) -> Result<(), TriggerError> {
    if value < 0 {
        return Err(TriggerError::Negative { field, value });
    }
    if value > MAX_WINDOW_NS {
        return Err(TriggerError::TooLong { field, value });
    }
    Ok(())
}

/// The rings a trigger takes, each with its `t`.
fn chosen(
    registry: &FlightRegistry,
    req: &TriggerRequest,
) -> Result<Vec<(Arc<FlightRing>, i64)>, TriggerError> {
    let live = registry.live_rings();
    if live.is_empty() {
        return Err(TriggerError::NoFlightStream);
    }
    let picked: Vec<Arc<FlightRing>> = match &req.streams {
        None => live,
        Some(names) => {
            let mut out = Vec::new();
            for n in names {
                let r = live
                    .iter()
                    .find(|r| r.identity.name() == *n)
                    .ok_or_else(|| TriggerError::UnknownStream { name: n.clone() })?;
                out.push(r.clone());
            }
            out
        }
    };
    let with_t: Vec<_> = picked
        .into_iter()
        .filter_map(|r| {
            let t = req.at_ns.or_else(|| r.latest_t_ns())?;
            Some((r, t))
        })
        .collect();
    if with_t.is_empty() {
        return Err(TriggerError::NothingRecorded);
    }
    Ok(with_t)
}

fn source_of(
    registry: &FlightRegistry,
    ring: &FlightRing,
    t: i64,
    req: &TriggerRequest,
    taken: &[WindowSource],
) -> WindowSource {
    let id = &ring.identity;
    let base = id.stream.clone().unwrap_or_else(|| id.episode_id.clone());
    let mut name = base.clone();
    let mut n = 2;
    while taken.iter().any(|s| s.name == name) {
        name = format!("{base}_{n}");
        n += 1;
    }
    WindowSource {
        name,
        source: id.name(),
        dir: id
            .dir
            .strip_prefix(&registry.shared.data_dir)
            .map_or_else(|_| id.dir.clone(), std::path::Path::to_path_buf),
        files_id: id.files_id.clone(),
        start_ns: t.saturating_sub(req.pre_ns),
        end_ns: t.saturating_add(req.post_ns),
        latched: id.latched,
    }
}

fn bounds(record: &PendingRecord) -> (i64, i64) {
    let start = record.streams.iter().map(|s| s.start_ns).min().unwrap_or(0);
    let end = record.streams.iter().map(|s| s.end_ns).max().unwrap_or(0);
    (start, end)
}

/// Ask each ring's writer to seal its open chunk once it holds a timestep past the
/// window's end for that stream (see [`FlightRing::seal_after`]).
fn request_seals(rings: &[(Arc<FlightRing>, i64)], streams: &[WindowSource]) {
    for (ring, _) in rings {
        let name = ring.identity.name();
        if let Some(s) = streams.iter().find(|s| s.source == name) {
            ring.seal_after(s.end_ns);
        }
    }
}

/// Persist the window of `request`: a new window episode, or the pending one extended.
/// Returns at once; the copy runs on the window's thread.
///
/// # Errors
/// [`TriggerError`], naming the field or stream; nothing is recorded then.
pub fn trigger(
    registry: &Arc<FlightRegistry>,
    request: &TriggerRequest,
) -> Result<TriggerReply, TriggerError> {
    check("pre_ns", request.pre_ns)?;
    check("post_ns", request.post_ns)?;
    let rings = chosen(registry, request)?;
    let note = |t: i64| TriggerNote {
        reason: request.reason.clone(),
        t_ns: t,
        pre_ns: request.pre_ns,
        post_ns: request.post_ns,
        received_unix_ns: unix_ns(),
    };
    let first_t = rings[0].1;
    // One trigger at a time decides between merging and a new window.
    let mut windows = registry.windows();
    windows.retain(|w| !w.lock().done);
    if let Some(w) = windows.iter().rev().find(|w| {
        let st = w.lock();
        !st.finalizing && st.failed.is_none()
    }) {
        let mut st = w.lock();
        let mut record = st.record.clone();
        let mut new_rings = Vec::new();
        for (ring, t) in &rings {
            let fresh = source_of(registry, ring, *t, request, &record.streams);
            match record.streams.iter_mut().find(|s| s.source == fresh.source) {
                Some(s) => s.end_ns = s.end_ns.max(fresh.end_ns),
                None => {
                    ring.pin(w.id, fresh.start_ns);
                    record.streams.push(fresh);
                    new_rings.push(Some(ring.clone()));
                }
            }
        }
        record.triggers.push(note(first_t));
        pending::persist(&*registry.shared.fs, &registry.shared.data_dir, &record)?;
        request_seals(&rings, &record.streams);
        st.record = record;
        st.rings.extend(new_rings);
        registry
            .counters()
            .triggers
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        registry
            .counters()
            .merged
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (start, end) = bounds(&st.record);
        return Ok(TriggerReply {
            episode: w.episode.clone(),
            merged: true,
            window_start_ns: start,
            window_end_ns: end,
        });
    }
    let id = registry.next_window_id();
    let created = unix_ns();
    let episode = format!("{WINDOW_ID_PREFIX}{}-{id}", created / 1_000_000);
    let mut streams: Vec<WindowSource> = Vec::new();
    let mut follows: Vec<String> = Vec::new();
    for (ring, t) in &rings {
        let mut s = source_of(registry, ring, *t, request, &streams);
        // A window persisted already holds this stream up to its end: start after it (a
        // latched stream's last value goes into every window all the same).
        if let Some((end, earlier)) = registry.shared.persisted_end(&s.source) {
            if !s.latched && s.start_ns <= end {
                s.start_ns = end.saturating_add(1);
                if !follows.contains(&earlier) {
                    follows.push(earlier);
                }
            }
        }
        ring.pin(id, s.start_ns);
        streams.push(s);
    }
    let record = PendingRecord {
        episode: episode.clone(),
        created_unix_ns: created,
        triggers: vec![note(first_t)],
        streams,
        follows,
        failed: None,
    };
    if let Err(e) = pending::persist(&*registry.shared.fs, &registry.shared.data_dir, &record) {
        for (ring, _) in &rings {
            ring.unpin(id);
        }
        return Err(e.into());
    }
    request_seals(&rings, &record.streams);
    let (start, end) = bounds(&record);
    let window = Arc::new(Window {
        id,
        episode: episode.clone(),
        state: std::sync::Mutex::new(WindowState {
            record,
            rings: rings.iter().map(|(r, _)| Some(r.clone())).collect(),
            finalizing: false,
            done: false,
            failed: None,
            retrying: None,
            attempts: 0,
            cut_short: std::collections::BTreeMap::new(),
        }),
    });
    drop(windows);
    registry
        .counters()
        .triggers
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    registry.spawn(window);
    Ok(TriggerReply {
        episode,
        merged: false,
        window_start_ns: start,
        window_end_ns: end,
    })
}
