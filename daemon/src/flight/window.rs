//! A trigger window and the thread that persists it (`flight-W`): it copies each stream's
//! steps in `[start_ns, end_ns]` out of the ring as the chunks appear (`copy`),
//! the pre-window at once, the rest as the post-window is recorded; when every stream
//! has reached its end (or ended), it copies the edge chunks, commits each stream's
//! manifest and the index `complete` (marked `origin: flight_window`, with the triggers),
//! writes the triggers' reasons as events, renames the episode from
//! `data_dir/.flight/build/W` into `data_dir/W`, removes the pending record and unpins
//! the rings (`finalize`). A later trigger extends the window while it is not final.
//!
//! A stream whose post-window does not arrive by the wall-clock deadline (the latest
//! trigger's arrival + `post` + `flight.post_grace_ms`: its producer went silent) has its
//! writer seal the open chunk and is cut short once that chunk is copied. A failing step
//! is tried again with a doubling backoff; after `flight.persist_retries` retries the
//! window is given up (`give_up`).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::copy::StreamCopy;
use super::failure::WindowFailure;
use super::finalize::{finish, WindowEnd};
use super::give_up::{give_up, GivenUp};
use super::pending::{self, build_dir, PendingRecord};
use super::shared::FlightShared;
use crate::error::StorageError;
use crate::session::flight_ring::FlightRing;
use wshard_storage::fsio::Fs;
use wshard_storage::layout::STREAMS_DIR;

/// How often the window thread looks for new chunks.
const POLL: Duration = Duration::from_millis(20);
pub use super::finalize::{ORIGIN_FLIGHT_WINDOW, ORIGIN_KEY};

/// A window's state.
#[derive(Debug)]
pub(crate) struct WindowState {
    pub(crate) record: PendingRecord,
    /// The live ring of each stream of `record.streams` (none after a restart).
    pub(crate) rings: Vec<Option<Arc<FlightRing>>>,
    /// The window is being finalized: no trigger extends it any more.
    pub(crate) finalizing: bool,
    pub(crate) done: bool,
    /// Given up after its retries (then also `done`).
    pub(crate) failed: Option<WindowFailure>,
    /// The last failure while it is being tried again.
    pub(crate) retrying: Option<String>,
    /// Consecutive failed attempts.
    pub(crate) attempts: u32,
    /// Streams whose post-window was cut short at the deadline: the last `t_ns` held.
    pub(crate) cut_short: BTreeMap<String, Option<i64>>,
}

/// A pending trigger window.
#[derive(Debug)]
pub struct Window {
    pub(crate) id: u64,
    pub(crate) episode: String,
    pub(crate) state: Mutex<WindowState>,
}

impl Window {
    pub(crate) fn lock(&self) -> MutexGuard<'_, WindowState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Remove `dir` and everything in it (a window's build directory: the daemon's own).
fn remove_tree(fs: &dyn Fs, dir: &Path) -> Result<(), StorageError> {
    let entries = fs
        .read_dir(dir)
        .map_err(|e| StorageError::io("list", dir, e))?;
    for p in entries {
        if fs.read_dir(&p).is_ok() {
            remove_tree(fs, &p)?;
        } else {
            fs.remove_file(&p)
                .map_err(|e| StorageError::io("remove", &p, e))?;
        }
    }
    fs.remove_dir(dir)
        .map_err(|e| StorageError::io("remove directory", dir, e))
}

/// Start building the window episode: a build directory left by a cut run is the
/// daemon's and goes first.
pub(crate) fn prepare_build(
    fs: &dyn Fs,
    data_dir: &Path,
    episode: &str,
) -> Result<PathBuf, StorageError> {
    let root = build_dir(data_dir);
    pending::ensure_dir(fs, data_dir, &root)?;
    let dir = root.join(episode);
    if fs.exists(&dir) {
        remove_tree(fs, &dir)?;
    }
    let streams = dir.join(STREAMS_DIR);
    fs.create_dir_all(&streams)
        .map_err(|e| StorageError::io("create directory", &streams, e))?;
    for d in [&dir, &root] {
        fs.sync_dir(d)
            .map_err(|e| StorageError::io("fsync directory", d, e))?;
    }
    Ok(dir)
}

/// Take a record a trigger may have extended; returns the streams whose end moved later
/// (they wait for their post-window again, even one cut short before).
fn sync_copies(copies: &mut Vec<StreamCopy>, record: &PendingRecord, root: &Path) -> Vec<String> {
    let mut later = Vec::new();
    for src in &record.streams {
        match copies.iter_mut().find(|c| c.src.name == src.name) {
            Some(c) => {
                if src.end_ns > c.src.end_ns {
                    c.reached = false;
                    c.cut_short = false;
                    later.push(src.name.clone());
                }
                c.src.end_ns = src.end_ns;
            }
            None => copies.push(StreamCopy::new(root, &record.episode, src.clone())),
        }
    }
    later
}

/// The wall-clock time past which the window no longer waits for its post-window: the
/// latest trigger's arrival + `post`, + `grace`.
#[must_use]
pub(crate) fn post_deadline_unix_ns(record: &PendingRecord, grace: Duration) -> u64 {
    let grace = u64::try_from(grace.as_nanos()).unwrap_or(u64::MAX);
    record
        .triggers
        .iter()
        .map(|t| {
            t.received_unix_ns
                .saturating_add(u64::try_from(t.post_ns).unwrap_or(0))
        })
        .max()
        .unwrap_or(0)
        .saturating_add(grace)
}

/// A failed step of the window's persistence: the window stream it concerns (none for the
/// window's own steps) and the error.
#[derive(Debug)]
struct Fault {
    stream: Option<String>,
    error: Box<StorageError>,
}

impl Fault {
    fn window(error: StorageError) -> Box<Self> {
        Box::new(Self {
            stream: None,
            error: Box::new(error),
        })
    }

    fn stream(c: &StreamCopy, error: StorageError) -> Box<Self> {
        Box::new(Self {
            stream: Some(c.src.name.clone()),
            error: Box::new(error),
        })
    }
}

/// What the window thread has built so far.
#[derive(Debug, Default)]
struct Build {
    dir: Option<PathBuf>,
    copies: Vec<StreamCopy>,
    /// Set once the window's bounds are final: the record it is finished with.
    final_record: Option<PendingRecord>,
    /// Streams whose writer was asked to seal at the deadline: the latest `t_ns` received
    /// then (the window holds everything up to it once a chunk reaching it is copied).
    seal_targets: HashMap<String, Option<i64>>,
}

fn unix_ns_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Past the window's wall-clock deadline: every stream still waiting for its post-window
/// has its writer seal what it holds, and is cut short once that chunk is copied.
fn cut_at_deadline(
    registry: &FlightShared,
    window: &Window,
    b: &mut Build,
    record: &PendingRecord,
) {
    if unix_ns_now() < post_deadline_unix_ns(record, registry.policy.post_grace) {
        return;
    }
    let rings = window.lock().rings.clone();
    let mut cut = Vec::new();
    for (i, src) in record.streams.iter().enumerate() {
        let Some(c) = b.copies.iter_mut().find(|c| c.src.name == src.name) else {
            continue;
        };
        if c.reached || c.exhausted || c.src.latched || c.cut_short {
            continue;
        }
        let ring = rings.get(i).cloned().flatten();
        let done = match ring {
            // After a restart its source is finished: `exhausted` ends it.
            None => false,
            Some(ring) => {
                // Asked again on each pass until the chunk is there: a batch queued
                // behind the first request lands in the next open chunk.
                ring.seal_now();
                let target = *b
                    .seal_targets
                    .entry(src.name.clone())
                    .or_insert_with(|| ring.latest_t_ns());
                target.map_or(true, |t| c.seen_t_ns.is_some_and(|s| s >= t))
            }
        };
        if done {
            c.cut_short = true;
            cut.push(c.src.name.clone());
        }
    }
    if !cut.is_empty() {
        let mut st = window.lock();
        for name in cut {
            let last = b
                .copies
                .iter()
                .find(|c| c.src.name == name)
                .and_then(StreamCopy::last_t_ns);
            tracing::warn!(episode = %window.episode, stream = %name, last_t_ns = ?last,
                "trigger window: post-window cut short at its deadline (the stream is silent)");
            st.cut_short.insert(name, last);
        }
    }
}

/// One pass: copy what the rings have now; once every stream reached its end (or ended,
/// or was cut short), the window's bounds become final and it is finished. True once the
/// episode is in place.
fn pass(registry: &FlightShared, window: &Window, b: &mut Build) -> Result<bool, Box<Fault>> {
    let fs = &registry.fs;
    let data_dir = &registry.data_dir;
    let dir = match &b.dir {
        Some(d) => d.clone(),
        None => {
            let d = prepare_build(&**fs, data_dir, &window.episode).map_err(Fault::window)?;
            b.dir = Some(d.clone());
            d
        }
    };
    if let Some(record) = b.final_record.clone() {
        for c in &mut b.copies {
            c.advance(&**fs, data_dir, &registry.settings, true)
                .map_err(|e| Fault::stream(c, e))?;
        }
        finish(
            fs,
            &registry.settings.handoff,
            data_dir,
            &record,
            &mut b.copies,
            &dir,
            &WindowEnd::complete(),
        )
        .map_err(Fault::window)?;
        return Ok(true);
    }
    let root = build_dir(data_dir);
    let record = window.lock().record.clone();
    let later = sync_copies(&mut b.copies, &record, &root);
    if !later.is_empty() {
        let mut st = window.lock();
        for name in &later {
            b.seal_targets.remove(name);
            st.cut_short.remove(name);
        }
    }
    for c in &mut b.copies {
        c.advance(&**fs, data_dir, &registry.settings, false)
            .map_err(|e| Fault::stream(c, e))?;
    }
    cut_at_deadline(registry, window, b, &record);
    // A latched stream never holds a window up: what it has is in its chunks.
    if b.copies
        .iter()
        .all(|c| c.reached || c.exhausted || c.src.latched || c.cut_short)
    {
        let mut st = window.lock();
        if st.record == record {
            // From here on the window's bounds are final (a trigger no longer merges
            // into it): a later window of these streams starts after it, even one
            // triggered before this one is in place. Noted under the window's lock, so no
            // trigger sees it neither mergeable nor persisted. Should finishing fail, the
            // pending record keeps these bounds and the next start builds the window with
            // them.
            st.finalizing = true;
            for s in &st.record.streams {
                registry.note_persisted(&s.source, s.end_ns, &window.episode);
            }
            if !st.cut_short.is_empty() {
                registry.counters.cut_short.fetch_add(1, Ordering::Relaxed);
            }
            drop(st);
            b.final_record = Some(record);
        }
    }
    Ok(false)
}

/// Sleep `d`, waking early when the daemon stops.
fn pause(registry: &FlightShared, d: Duration) {
    let until = std::time::Instant::now() + d;
    while !registry.shutdown.load(Ordering::Acquire) {
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(POLL));
    }
}

/// The window thread's body: copy until every stream reached its end, then finalize;
/// a failing step is tried again `persist_retries` times with a doubling backoff, then
/// the window is given up ([`give_up::give_up`]).
pub(crate) fn run(registry: &FlightShared, window: &Window) {
    let mut b = Build::default();
    let mut failures: u32 = 0;
    loop {
        if registry.shutdown.load(Ordering::Acquire) {
            // The pending record stays, and so do the pins: the next start finishes it.
            window.lock().retrying =
                Some("the daemon is stopping: finished at the next start".into());
            tracing::info!(episode = %window.episode, "trigger window left pending at shutdown");
            return;
        }
        match pass(registry, window, &mut b) {
            Ok(true) => {
                let mut st = window.lock();
                for r in st.rings.iter().flatten() {
                    r.unpin(window.id);
                }
                st.done = true;
                st.retrying = None;
                registry.counters.persisted.fetch_add(1, Ordering::Relaxed);
                tracing::info!(episode = %window.episode, "trigger window persisted");
                return;
            }
            Ok(false) => {
                if failures > 0 {
                    failures = 0;
                    let mut st = window.lock();
                    st.retrying = None;
                    st.attempts = 0;
                }
                if b.final_record.is_none() {
                    std::thread::sleep(POLL);
                }
            }
            Err(fault) => {
                failures = failures.saturating_add(1);
                {
                    let mut st = window.lock();
                    st.attempts = failures;
                    st.retrying = Some(fault.error.to_string());
                }
                if failures > registry.policy.persist_retries {
                    let record = window.lock().record.clone();
                    let given = GivenUp {
                        record,
                        dir: b.dir.as_deref(),
                        copies: &mut b.copies,
                        stream: fault.stream.clone(),
                        error: &fault.error,
                        attempts: failures,
                    };
                    let failure = give_up(registry, given, || {
                        let st = window.lock();
                        for r in st.rings.iter().flatten() {
                            r.unpin(window.id);
                        }
                    });
                    let mut st = window.lock();
                    st.record.failed = Some(failure.clone());
                    st.failed = Some(failure);
                    st.done = true;
                    return;
                }
                registry.counters.retries.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(episode = %window.episode, stream = ?fault.stream, attempt = failures,
                    "trigger window: persisting failed, trying again: {}", fault.error);
                pause(registry, registry.policy.backoff(failures));
            }
        }
    }
}
