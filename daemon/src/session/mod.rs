//! An open episode's threads: the writer (journal, columns, group commit, rotation), the
//! chunk writer and the finisher (chunk files, manifest). It may call `journal`, `chunk`,
//! `episode`, `fsio` and `error`; `ingest` drives it.
//!
//! One recording episode: a writer thread and a chunk writer thread with its finisher, fed
//! by the connection through a bounded queue. When the queue is full the connection blocks,
//! so it stops reading its socket and the client blocks in turn: memory stays bounded by the
//! queue and two chunks (plus the idle record buffers kept for reuse, at most a quarter of
//! the queue's bytes, see `recycle`).
//!
//! - `writer`: the writer thread `wr-EPISODE`: journal and column appends, FLUSH, CLOSE;
//!   it calls `group_commit` (when the journal is fdatasynced) and `rotation` (when the
//!   open chunk is sealed, and the chunk slots).
//! - `chunk_writer`: the thread `chunk-EPISODE` compressing and writing each sealed chunk's
//!   file; `finisher`: its thread `fin-EPISODE` making each one durable, in order, and
//!   committing the manifest.
//! - `split`: cutting the episode into parts while it records (`wshard split`,
//!   `[rolling]`): the writer creates the next part and seals the open chunk as the finished
//!   part's last; `parts`: what the threads, the registry and the control socket share
//!   about the parts (the part recording now, split requests, part ids); `cut_reason`:
//!   why the last part was cut (`split`, or the `[rolling]` bound).
//! - `memory` (the chunk memory budget), `queue_budget` (the queue's bytes), `recycle`
//!   (record buffers), `shared` (what the threads and the connection share: the durable
//!   watermark, the failure), `stats`, `settings`, `failure`.

pub(crate) mod chunk_writer;
pub mod cut_reason;
pub(crate) mod failure;
pub(crate) mod finisher;
pub mod flight_ring;
pub(crate) mod group_commit;
pub(crate) mod memory;
pub mod parts;
pub(crate) mod queue_budget;
pub(crate) mod recycle;
pub(crate) mod rotation;
pub(crate) mod settings;
pub(crate) mod shared;
pub(crate) mod split;
pub(crate) mod stats;
pub(crate) mod writer;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::Sender;
use wshard::manifest::Manifest;

pub(crate) use failure::SessionFailure;
pub(crate) use memory::CHUNKS_IN_MEMORY;
pub use settings::{Rolling, Rotation, SessionSettings};
pub use shared::{FinalStatus, Responder, SessionShared};
pub(crate) use stats::EpisodeStats;
pub use wshardd_config::FsyncPolicy;

use crate::chunk::manifest_commit::commit_manifest;
use crate::episode::{Durability, EpisodeSchema};
use crate::error::StorageError;
use crate::journal::record::SegmentHeader;
use crate::journal::segment::JournalSegment;
use recycle::RecordPool;
use writer::{Writer, WriterMsg};
use wshard_storage::fsio::Fs;
use wshard_storage::layout::EpisodeLayout;

/// Why an episode could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("episode `{0}` already exists in the data directory")]
    Exists(String),
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("cannot start the episode's threads: {0}")]
    Spawn(std::io::Error),
}

/// Capacity of the channel returning slots (never full: at most every slot is in it).
fn slots_capacity() -> usize {
    usize::try_from(CHUNKS_IN_MEMORY).unwrap_or(2)
}

/// What a session ended with (CLOSE, or finalized without one): the daemon's side; the
/// client's is `wshard_client::CloseSummary`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionSummary {
    pub timesteps: u64,
    pub chunks: u64,
    pub(crate) status: String,
    /// Set when the episode failed on storage (its files are left for recovery).
    pub failure: Option<SessionFailure>,
}

/// A recording episode.
pub struct Session {
    shared: Arc<SessionShared>,
    tx: Option<Sender<WriterMsg>>,
    /// Record buffers the writer is done with, for the connection's next batches.
    recycled: Arc<RecordPool>,
    writer: Option<JoinHandle<()>>,
    /// The chunk writer thread; it returns the manifest as last committed.
    chunk_writer: Option<JoinHandle<Manifest>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("episode", &self.shared.layout.episode_id)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Create the episode directory, commit a `recording` manifest with no chunks, create
    /// journal segment 0 (durability `ack`), and start the threads. When this returns, the
    /// episode exists durably.
    ///
    /// # Errors
    /// [`OpenError::Exists`] when the directory exists; storage errors naming the step.
    pub fn open(
        fs: Arc<dyn Fs>,
        data_dir: &Path,
        schema: EpisodeSchema,
        settings: SessionSettings,
        responder: Arc<dyn Responder>,
    ) -> Result<Self, OpenError> {
        let layout = EpisodeLayout::new(data_dir, &schema.episode_id);
        Self::open_in(fs, layout, schema, settings, responder, true)
    }

    /// [`Session::open`] in `layout`'s directory, whose parent must exist: a stream of a
    /// multi-stream episode ([`EpisodeLayout::stream`]) is recorded exactly like an
    /// episode, in its folder. The directory is created and its parent fsynced.
    ///
    /// # Errors
    /// As [`Session::open`].
    pub fn open_at(
        fs: Arc<dyn Fs>,
        layout: EpisodeLayout,
        schema: EpisodeSchema,
        settings: SessionSettings,
        responder: Arc<dyn Responder>,
    ) -> Result<Self, OpenError> {
        Self::open_in(fs, layout, schema, settings, responder, false)
    }

    /// [`Session::open_at`]; `splittable`: the episode may be split into parts (a
    /// single-stream episode, not a stream).
    fn open_in(
        fs: Arc<dyn Fs>,
        layout: EpisodeLayout,
        schema: EpisodeSchema,
        settings: SessionSettings,
        responder: Arc<dyn Responder>,
        splittable: bool,
    ) -> Result<Self, OpenError> {
        match fs.create_dir(&layout.dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(OpenError::Exists(schema.episode_id))
            }
            Err(e) => {
                return Err(StorageError::io("create episode directory", &layout.dir, e).into())
            }
        }
        let parent = layout.dir.parent().unwrap_or_else(|| Path::new("."));
        fs.sync_dir(parent)
            .map_err(|e| StorageError::io("fsync directory", parent, e))?;
        let schema = Arc::new(schema);
        let parts = Arc::new(match schema.stream_of() {
            // A stream is cut with its multi-stream episode, in the part it records in.
            Some(part) => parts::PartControl::for_stream(
                &schema.episode_id,
                part,
                settings.max_episode_id_bytes,
            ),
            None => parts::PartControl::new(
                &schema.episode_id,
                splittable,
                settings.max_episode_id_bytes,
            ),
        });
        let shared = Arc::new(SessionShared::new(
            fs.clone(),
            layout,
            schema.clone(),
            settings,
            responder,
            parts,
        ));
        let manifest = finisher::recorder_manifest(&shared);
        commit_manifest(&*fs, &shared.layout, &manifest)?;
        let journal = match schema.durability {
            Durability::Ack => {
                let header = SegmentHeader {
                    schema: (*schema).clone(),
                    chunk_index: 0,
                    first_timestep: 0,
                };
                Some(JournalSegment::create(
                    &*fs,
                    &shared.layout.journal(0),
                    &header,
                )?)
            }
            Durability::Chunk => None,
        };
        let (tx, rx) = crossbeam_channel::bounded(shared.settings.queue_frames.max(1));
        // One sealed chunk may wait for the chunk writer; what bounds memory is the chunk slots
        // below, not this queue.
        let (sealed_tx, sealed_rx) = crossbeam_channel::bounded(1);
        // Chunk slots coming back from the chunk writer, with the buffers to fill next.
        let (rtx, rrx) = crossbeam_channel::bounded(slots_capacity());
        let name = &schema.episode_id;
        let cw_shared = shared.clone();
        let chunk_writer = std::thread::Builder::new()
            .name(format!("chunk-{name}"))
            .spawn(move || chunk_writer::run(&cw_shared, &sealed_rx, &rtx, manifest))
            .map_err(OpenError::Spawn)?;
        let recycled = Arc::new(RecordPool::for_queue(
            shared.settings.queue_frames.max(1),
            shared.settings.queue_bytes,
        ));
        let w = Writer::new(shared.clone(), journal, sealed_tx, rrx, recycled.clone());
        let writer = std::thread::Builder::new()
            .name(format!("wr-{name}"))
            .spawn(move || w.run(&rx))
            .map_err(OpenError::Spawn)?;
        Ok(Self {
            shared,
            tx: Some(tx),
            recycled,
            writer: Some(writer),
            chunk_writer: Some(chunk_writer),
        })
    }

    /// The shared state (stats, failure, durable watermark).
    #[must_use]
    pub fn shared(&self) -> &Arc<SessionShared> {
        &self.shared
    }

    /// Queue checked timestep records. Blocks while the queue is full (backpressure).
    /// Returns `false` when the session can take no more (failed or closed).
    pub fn submit(&self, records: Vec<u8>, steps: u64) -> bool {
        if self.shared.is_failed() {
            return false;
        }
        let Some(tx) = &self.tx else { return false };
        let arrived = std::time::Instant::now();
        let len = records.len() as u64;
        // Blocks while the writer has `queues.max_pending_bytes` to process (and, in
        // `send`, while it has `queues.max_pending_frames` messages).
        if !self.shared.queue_budget.acquire(len) {
            return false;
        }
        self.shared
            .stats
            .received
            .fetch_add(steps, Ordering::Relaxed);
        self.shared.stats.bytes.fetch_add(len, Ordering::Relaxed);
        let sent = tx.send(WriterMsg::Steps { records, arrived }).is_ok();
        if !sent {
            self.shared.queue_budget.release(len);
        }
        sent
    }

    /// A records buffer the writer is done with (its old contents still in it), to receive
    /// the next batch into; `None` when there is none idle.
    #[must_use]
    pub(crate) fn recycled_records(&self) -> Option<Vec<u8>> {
        self.recycled.take()
    }

    /// FLUSH: make everything submitted durable now, and answer with a `DURABLE` covering
    /// it (see `SessionShared::answer_durable`).
    pub fn flush(&self) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(WriterMsg::Flush);
        }
    }

    /// Finalize: last chunk, manifest with the final status. Returns when it is durable.
    #[must_use]
    pub fn close(self, status: FinalStatus) -> SessionSummary {
        self.finalize(status, false)
    }

    /// [`Session::close`] for the client's CLOSE: before the manifest is final the client
    /// gets a `DURABLE` covering every timestep (the caller then sends `ACCEPTED{CLOSE}`).
    #[must_use]
    pub(crate) fn close_answering(self, status: FinalStatus) -> SessionSummary {
        self.finalize(status, true)
    }

    fn finalize(mut self, status: FinalStatus, answer: bool) -> SessionSummary {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(WriterMsg::Close { status, answer });
        }
        self.join()
    }

    fn join(&mut self) -> SessionSummary {
        self.tx = None;
        if let Some(w) = self.writer.take() {
            if w.join().is_err() {
                self.shared.fail(SessionFailure::WriterPanicked);
            }
        }
        let manifest = self.chunk_writer.take().map(JoinHandle::join);
        let (timesteps, chunks, status) = match manifest {
            // With parts: the count covers every part (the producer's whole stream).
            Some(Ok(m)) => (
                m.total_timesteps + self.shared.parts.finished_steps.load(Ordering::Relaxed),
                m.chunks.len() as u64 + self.shared.parts.finished_chunks.load(Ordering::Relaxed),
                m.status.unwrap_or_default(),
            ),
            Some(Err(_)) => {
                self.shared.fail(SessionFailure::ChunkWriterPanicked);
                (0, 0, String::new())
            }
            None => (0, 0, String::new()),
        };
        SessionSummary {
            timesteps,
            chunks,
            status,
            failure: self.shared.failure(),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Without CLOSE: dropping the sender makes the writer finalize as interrupted.
        if self.writer.is_some() {
            let _ = self.join();
        }
    }
}
