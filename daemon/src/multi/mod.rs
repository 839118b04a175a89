//! A multi-stream episode while it is open: its index, the streams recording in it, its
//! events log, and the rules of protocol v2 (join, end, close, finalize).
//! It may call `episode_files`, `episode`, `fsio`, `error` and `session::parts` (part ids,
//! the streams' parts, for a split); the registry holds the open ones, ingest and control
//! drive them.
//!
//! Each stream is recorded by its own `Session` in its folder; this object only keeps the
//! index (`{EP}_index.json`) in step, committed atomically at the points of
//! docs/DURABILITY.md ("Multi-stream episodes"): at creation; when a stream joins (listed
//! `recording` before its folder exists and before it is acknowledged); when a stream ends
//! (its final counts); when the episode is closed; when it finalizes (closed, and every
//! stream ended).
//!
//! - [`schema`]: a stream's index entry from its schema.
//! - [`parts`]: a split (`split EP`): the next part and its index, the finished part's.

pub mod parts;
pub mod schema;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{Map, Value};
use wshard::episode_dir::index::{EpisodeIndex, EpisodeStatus, StreamEntry};
use wshard_ingest_proto::OpenEpisode;

use crate::episode_files::{commit_index, EventError, EventsLog, NewEvent};
use crate::error::StorageError;
use wshard_storage::fsio::Fs;
use wshard_storage::layout::{EpisodeLayout, STREAMS_DIR};

/// What `EPISODE_OPEN` asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct NewMulti {
    pub episode_id: String,
    pub env_id: String,
    pub metadata: Map<String, Value>,
    pub created_unix_ns: u64,
}

/// Why a multi-stream episode could not be created.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error("episode `{0}` already exists in the data directory")]
    Exists(String),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// Why a stream could not join.
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    /// The episode was closed (or finalized): no more streams.
    #[error("episode `{episode}` is closed: no stream may join it any more")]
    Closed { episode: String },
    /// The name is used in this episode, with the same schema.
    #[error("stream `{stream}` already exists in episode `{episode}` (status {status})")]
    Exists {
        episode: String,
        stream: String,
        status: EpisodeStatus,
    },
    /// The name is used in this episode with another schema (the protocol's
    /// `OpenEpisode::schema_difference`: clock, durability, channels).
    #[error("stream `{stream}` of episode `{episode}`: schema change: {message}")]
    SchemaChanged {
        episode: String,
        stream: String,
        field: String,
        message: String,
    },
    /// The index could not be committed (now or earlier).
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// How a stream ended, for its index entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamEnd {
    pub status: EpisodeStatus,
    pub steps: u64,
    pub chunks: u64,
    pub first_t_ns: Option<i64>,
    pub last_t_ns: Option<i64>,
}

/// Where an episode stands after a change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Streams still recording.
    pub recording: u64,
    /// The episode finalized with this change (the registry then forgets it).
    pub finalized: bool,
    /// The index commit of this change failed (now or earlier): the index is left for
    /// recovery, which rebuilds it from the streams' manifests.
    pub index_error: Option<String>,
}

/// An open multi-stream episode.
pub struct MultiEpisode {
    id: String,
    fs: Arc<dyn Fs>,
    data_dir: PathBuf,
    dir: PathBuf,
    state: Mutex<State>,
    events: Mutex<EventsLog>,
    finalized: AtomicBool,
    /// Set when someone other than the owner closed the episode (an operator, the disk,
    /// the daemon's shutdown): the reason, for the owner's `ERROR{STOPPED}`.
    stopped: Mutex<Option<(String, EpisodeStatus)>>,
    /// `[rolling]`: a cut is being made (`Some(false)`), or rolling stopped for the
    /// episode after a refused cut (the reason).
    rolling: parts::RollingState,
    /// Where the final episode (and each finished part) is handed to the uploader.
    handoff: std::sync::OnceLock<crate::upload::Handoff>,
}

impl std::fmt::Debug for MultiEpisode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiEpisode")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

struct State {
    /// The part recording now (the episode itself until a split, see [`parts`]).
    part: parts::PartNow,
    /// Finished parts some stream of which still records (its cut was refused).
    left_behind: Vec<parts::LeftBehind>,
    index: EpisodeIndex,
    /// Streams recording now.
    recording: BTreeSet<String>,
    /// Each stream's schema as its `STREAM_OPEN` gave it (the same name with another
    /// schema is a schema change).
    schemas: BTreeMap<String, OpenEpisode>,
    /// The status the episode finalizes with, once closed.
    outcome: Option<EpisodeStatus>,
    /// An index commit failed: the index is no longer written (recovery rebuilds it from
    /// the streams' manifests), and no stream may join.
    failed: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MultiEpisode {
    /// Create the episode durably: its directory (the data directory fsynced), its
    /// `streams/` folder, and its index (`recording`, no streams), whose commit makes both
    /// durable. When this returns, the episode exists.
    ///
    /// # Errors
    /// [`CreateError::Exists`] when the directory exists; the failing storage step.
    pub fn create(
        fs: Arc<dyn Fs>,
        data_dir: &Path,
        new: NewMulti,
    ) -> Result<Arc<Self>, CreateError> {
        let dir = data_dir.join(&new.episode_id);
        match fs.create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(CreateError::Exists(new.episode_id))
            }
            Err(e) => return Err(StorageError::io("create episode directory", &dir, e).into()),
        }
        fs.sync_dir(data_dir)
            .map_err(|e| StorageError::io("fsync directory", data_dir, e))?;
        let streams = dir.join(STREAMS_DIR);
        fs.create_dir(&streams)
            .map_err(|e| StorageError::io("create streams directory", &streams, e))?;
        let index = EpisodeIndex::new(
            new.episode_id.clone(),
            new.env_id,
            new.metadata,
            new.created_unix_ns,
        );
        // Its directory fsync makes `streams/` durable too.
        commit_index(&*fs, &dir, &index)?;
        let events = EventsLog::new(fs.clone(), &dir, &new.episode_id);
        let part = parts::PartNow {
            number: 0,
            id: new.episode_id.clone(),
            dir: dir.clone(),
        };
        Ok(Arc::new(Self {
            id: new.episode_id,
            data_dir: data_dir.to_path_buf(),
            dir,
            state: Mutex::new(State {
                part,
                left_behind: Vec::new(),
                index,
                recording: BTreeSet::new(),
                schemas: BTreeMap::new(),
                outcome: None,
                failed: None,
            }),
            events: Mutex::new(events),
            handoff: std::sync::OnceLock::new(),
            fs,
            finalized: AtomicBool::new(false),
            stopped: Mutex::new(None),
            rolling: parts::RollingState::default(),
        }))
    }

    /// The episode id.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The episode directory.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The index as last changed (committed unless an index commit failed).
    #[must_use]
    pub fn index(&self) -> EpisodeIndex {
        lock(&self.state).index.clone()
    }

    /// True once closed (no more joins).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        lock(&self.state).index.closed
    }

    /// True once finalized.
    #[must_use]
    pub fn is_finalized(&self) -> bool {
        self.finalized.load(Ordering::Acquire)
    }

    /// Commit the index; a failure is remembered and every later commit refused.
    fn commit(&self, st: &mut State) -> Result<(), StorageError> {
        if let Some(why) = &st.failed {
            return Err(StorageError::Internal(format!(
                "episode `{}`: an earlier index commit failed, the index is left for recovery: {why}",
                self.id
            )));
        }
        commit_index(&*self.fs, &st.part.dir, &st.index).inspect_err(|e| {
            tracing::error!(episode = %self.id, "index commit failed: {e}");
            st.failed = Some(e.to_string());
        })
    }

    /// Hand the final episode (or a finished part) in `dir` to the uploader, given by
    /// [`MultiEpisode::hand_finished_to`].
    pub(crate) fn hand_off(&self, dir: &Path) {
        if let Some(h) = self.handoff.get() {
            h.finished(dir);
        }
    }

    /// Where the final episode and its finished parts are handed (the uploader); set once,
    /// after [`MultiEpisode::create`].
    pub(crate) fn hand_finished_to(&self, handoff: crate::upload::Handoff) {
        let _ = self.handoff.set(handoff);
    }

    /// Finalize when closed and no stream records: status from the close, committed.
    fn settle(&self, st: &mut State, mut index_error: Option<String>) -> Progress {
        let recording = st.recording.len() as u64;
        let mut finalized = false;
        if let Some(outcome) = st.outcome.filter(|_| recording == 0) {
            if !self.finalized.swap(true, Ordering::AcqRel) {
                finalized = true;
                st.index.status = outcome;
                if let Err(e) = self.commit(st) {
                    index_error = Some(e.to_string());
                }
                tracing::info!(episode = %self.id, status = %outcome, streams = st.index.streams.len(), "multi-stream episode finalized");
                if index_error.is_none() {
                    self.hand_off(&st.part.dir);
                }
            }
        }
        Progress {
            recording,
            finalized,
            index_error,
        }
    }

    /// Let stream `entry.name` join: listed `recording` in a committed index before the
    /// caller creates its folder. Returns the stream's layout.
    ///
    /// # Errors
    /// [`JoinError`]: closed, the name taken (same schema, or another: naming the first
    /// differing field), or the index commit failed.
    pub fn join(
        &self,
        entry: StreamEntry,
        requested: OpenEpisode,
    ) -> Result<EpisodeLayout, JoinError> {
        let mut st = lock(&self.state);
        if st.index.closed || self.is_finalized() {
            return Err(JoinError::Closed {
                episode: self.id.clone(),
            });
        }
        if let Some(old) = st.index.stream(&entry.name) {
            let status = old.status;
            let diff = st
                .schemas
                .get(&entry.name)
                .and_then(|was| was.schema_difference(&requested));
            return Err(match diff {
                Some(d) => JoinError::SchemaChanged {
                    episode: self.id.clone(),
                    stream: entry.name.clone(),
                    field: d.field.clone(),
                    message: d.to_string(),
                },
                None => JoinError::Exists {
                    episode: self.id.clone(),
                    stream: entry.name.clone(),
                    status,
                },
            });
        }
        let name = entry.name.clone();
        st.schemas.insert(name.clone(), requested);
        st.index.streams.push(entry);
        st.recording.insert(name.clone());
        if let Err(e) = self.commit(&mut st) {
            st.recording.remove(&name);
            if let Some(s) = st.index.stream_mut(&name) {
                s.status = EpisodeStatus::Interrupted;
            }
            return Err(e.into());
        }
        Ok(EpisodeLayout::stream(&self.data_dir, &st.part.id, &name))
    }

    /// Stream `name` ended (its session is finalized): its final counts and status are
    /// committed, and the episode finalizes when it was closed and this was the last. A
    /// failed index commit is in [`Progress::index_error`] (the stream's own files are
    /// final all the same).
    pub fn end_stream(&self, name: &str, end: StreamEnd) -> Progress {
        let mut st = lock(&self.state);
        if self.end_left_behind(&mut st, name, end) {
            return Progress {
                recording: st.recording.len() as u64,
                finalized: false,
                index_error: None,
            };
        }
        if let Some(s) = st.index.stream_mut(name) {
            s.status = end.status;
            s.steps = end.steps;
            s.chunks = end.chunks;
            s.first_t_ns = end.first_t_ns;
            s.last_t_ns = end.last_t_ns;
        }
        st.recording.remove(name);
        // Finalizing commits once for both changes.
        let settles = st.outcome.is_some() && st.recording.is_empty();
        let error = if settles {
            None
        } else {
            self.commit(&mut st).err().map(|e| e.to_string())
        };
        self.settle(&mut st, error)
    }

    /// Close the episode with `outcome` (`complete`, `aborted`, `interrupted`): no more
    /// joins; it finalizes now if no stream records, else when the last one ends. A
    /// second close changes nothing.
    pub fn close(&self, outcome: EpisodeStatus) -> Progress {
        let mut st = lock(&self.state);
        if st.outcome.is_some() {
            return Progress {
                recording: st.recording.len() as u64,
                finalized: false,
                index_error: None,
            };
        }
        st.index.closed = true;
        st.outcome = Some(outcome);
        let error = if st.recording.is_empty() {
            None
        } else {
            self.commit(&mut st).err().map(|e| e.to_string())
        };
        self.settle(&mut st, error)
    }

    /// Closed by someone other than the owner (`reason`): closed, and finalized `outcome`
    /// (`interrupted`; `complete` or `aborted` for an operator's `stop` or `abort`), also
    /// over the owner's `EPISODE_CLOSE` when streams still record; the owner is told
    /// ([`MultiEpisode::take_stopped`]). The caller stops the streams.
    pub fn stop(&self, reason: &str, outcome: EpisodeStatus) -> Progress {
        {
            let mut s = lock(&self.stopped);
            if s.is_none() {
                *s = Some((reason.to_owned(), outcome));
            }
        }
        tracing::warn!(episode = %self.id, outcome = outcome.as_str(), "multi-stream episode closed: {reason}");
        let mut st = lock(&self.state);
        // Over an owner's close whose streams still record: they are stopped, so the
        // episode ends as the one who stopped them says, whatever the owner said.
        st.outcome = Some(outcome);
        let error = if st.recording.is_empty() || st.index.closed {
            None
        } else {
            st.index.closed = true;
            self.commit(&mut st).err().map(|e| e.to_string())
        };
        st.index.closed = true;
        self.settle(&mut st, error)
    }

    /// Why someone other than the owner closed the episode, and the status it ends
    /// with, taken (once).
    #[must_use]
    pub fn take_stopped(&self) -> Option<(String, EpisodeStatus)> {
        lock(&self.stopped).take()
    }

    /// Record an event durably; returns its seq (what the acknowledgement carries).
    ///
    /// # Errors
    /// [`EventError::Finalized`] once the episode is finalized; the log failed (now or
    /// earlier).
    pub fn record_event(&self, event: NewEvent) -> Result<u64, EventError> {
        let mut log = lock(&self.events);
        if self.is_finalized() {
            return Err(EventError::Finalized {
                episode: self.id.clone(),
            });
        }
        log.append(event)
    }
}
