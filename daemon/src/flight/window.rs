//! A trigger window and the thread that persists it (`flight-W`): it copies each stream's
//! steps in `[start_ns, end_ns]` out of the ring as the chunks appear (`copy`),
//! the pre-window at once, the rest as the post-window is recorded; when every stream
//! has reached its end (or ended), it copies the edge chunks, commits each stream's
//! manifest and the index `complete` (marked `origin: flight_window`, with the triggers),
//! writes the triggers' reasons as events, renames the episode from
//! `data_dir/.flight/build/W` into `data_dir/W`, removes the pending record and unpins
//! the rings. A later trigger extends the window while it is not final.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Map, Value};
use wshard::episode_dir::events::EventData;
use wshard::episode_dir::index::{EpisodeIndex, EpisodeStatus};

use super::copy::StreamCopy;
use super::pending::{self, build_dir, PendingRecord};
use super::shared::FlightShared;
use crate::episode_files::{commit_index, EventsLog, NewEvent, NewEventData};
use crate::error::StorageError;
use crate::session::flight_ring::FlightRing;
use wshard_storage::fsio::Fs;
use wshard_storage::layout::STREAMS_DIR;

/// How often the window thread looks for new chunks.
const POLL: Duration = Duration::from_millis(20);
pub use crate::episode_files::index::{ORIGIN_FLIGHT_WINDOW, ORIGIN_KEY};

/// A window's state.
#[derive(Debug)]
pub(crate) struct WindowState {
    pub(crate) record: PendingRecord,
    /// The live ring of each stream of `record.streams` (none after a restart).
    pub(crate) rings: Vec<Option<Arc<FlightRing>>>,
    /// The window is being finalized: no trigger extends it any more.
    pub(crate) finalizing: bool,
    pub(crate) done: bool,
    pub(crate) failed: Option<String>,
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

fn sync_copies(copies: &mut Vec<StreamCopy>, record: &PendingRecord, root: &Path) {
    for src in &record.streams {
        match copies.iter_mut().find(|c| c.src.name == src.name) {
            Some(c) => {
                if src.end_ns > c.src.end_ns {
                    c.reached = false;
                }
                c.src.end_ns = src.end_ns;
            }
            None => copies.push(StreamCopy::new(root, &record.episode, src.clone())),
        }
    }
}

/// The index of the finished window.
fn window_index(
    record: &PendingRecord,
    streams: Vec<wshard::episode_dir::index::StreamEntry>,
) -> EpisodeIndex {
    let mut meta = Map::new();
    meta.insert(ORIGIN_KEY.into(), json!(ORIGIN_FLIGHT_WINDOW));
    meta.insert(
        "triggers".into(),
        serde_json::to_value(&record.triggers).unwrap_or(Value::Null),
    );
    meta.insert(
        "window".into(),
        json!(record
            .streams
            .iter()
            .map(|s| json!({
                "stream": s.name, "source": s.source, "start_ns": s.start_ns, "end_ns": s.end_ns,
                "latched": s.latched,
            }))
            .collect::<Vec<_>>()),
    );
    if !record.follows.is_empty() {
        meta.insert("follows".into(), json!(record.follows));
    }
    let mut index = EpisodeIndex::new(record.episode.clone(), "", meta, record.created_unix_ns);
    index.streams = streams;
    index.status = EpisodeStatus::Complete;
    index.closed = true;
    index
}

fn finish(
    fs: &Arc<dyn Fs>,
    data_dir: &Path,
    record: &PendingRecord,
    copies: &mut [StreamCopy],
    dir: &Path,
) -> Result<(), StorageError> {
    let mut entries = Vec::new();
    for c in copies.iter_mut() {
        if let Some(e) = c.finish(&**fs)? {
            entries.push(e);
        }
    }
    let index = window_index(record, entries);
    let mut events = EventsLog::new(fs.clone(), dir, &record.episode);
    for t in &record.triggers {
        events
            .append(NewEvent {
                t_ns: t.t_ns,
                label: "trigger".into(),
                source: "flight".into(),
                data: NewEventData::Data(EventData::Text(t.reason.clone())),
            })
            .map_err(|e| {
                StorageError::io(
                    "append event",
                    events.path(),
                    std::io::Error::other(e.to_string()),
                )
            })?;
    }
    commit_index(&**fs, dir, &index)?;
    let target = data_dir.join(&record.episode);
    fs.rename(dir, &target)
        .map_err(|e| StorageError::io("rename window episode", dir, e))?;
    for d in [build_dir(data_dir), data_dir.to_path_buf()] {
        fs.sync_dir(&d)
            .map_err(|e| StorageError::io("fsync directory", &d, e))?;
    }
    pending::remove(&**fs, data_dir, &record.episode)
}

/// The window thread's body: copy until every stream reached its end, then finalize.
pub(crate) fn run(registry: &FlightShared, window: &Window) {
    let fs = registry.fs.clone();
    let data_dir = registry.data_dir.clone();
    let result = (|| -> Result<(), StorageError> {
        let dir = prepare_build(&*fs, &data_dir, &window.episode)?;
        let root = build_dir(&data_dir);
        let mut copies: Vec<StreamCopy> = Vec::new();
        loop {
            let record = window.lock().record.clone();
            sync_copies(&mut copies, &record, &root);
            for c in &mut copies {
                c.advance(&*fs, &data_dir, &registry.settings, false)?;
            }
            if registry.shutdown.load(Ordering::Acquire) {
                // The pending record stays; the next start finishes the window.
                return Err(StorageError::io(
                    "finish window",
                    &dir,
                    std::io::Error::other("the daemon is stopping: finished at the next start"),
                ));
            }
            // A latched stream never holds a window up: what it has is in its chunks.
            if copies
                .iter()
                .all(|c| c.reached || c.exhausted || c.src.latched)
            {
                let mut st = window.lock();
                if st.record == record {
                    // From here on the window's bounds are final (a trigger no longer
                    // merges into it): a later window of these streams starts after it, even
                    // one triggered before this one is in place. Noted under the window's
                    // lock, so no trigger sees it neither mergeable nor persisted. Should
                    // finishing fail, the pending record keeps these bounds and the next
                    // start builds the window with them.
                    st.finalizing = true;
                    for s in &st.record.streams {
                        registry.note_persisted(&s.source, s.end_ns, &window.episode);
                    }
                    break;
                }
                continue;
            }
            std::thread::sleep(POLL);
        }
        let record = window.lock().record.clone();
        for c in &mut copies {
            c.advance(&*fs, &data_dir, &registry.settings, true)?;
        }
        finish(&fs, &data_dir, &record, &mut copies, &dir)
    })();
    let mut st = window.lock();
    match result {
        Ok(()) => {
            for r in st.rings.iter().flatten() {
                r.unpin(window.id);
            }
            st.done = true;
            registry.counters.persisted.fetch_add(1, Ordering::Relaxed);
            tracing::info!(episode = %window.episode, "trigger window persisted");
        }
        Err(e) => {
            // The pending record stays, and so do the pins (the chunks it names are kept):
            // the next start builds the window again.
            st.failed = Some(e.to_string());
            if registry.shutdown.load(Ordering::Acquire) {
                tracing::info!(episode = %window.episode, "trigger window left pending at shutdown: {e}");
            } else {
                tracing::error!(episode = %window.episode, "trigger window not persisted: {e}");
                registry.counters.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
