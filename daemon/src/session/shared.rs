//! State shared by a session's connection, writer, chunk writer and finisher threads.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use wshard_ingest_proto::RingPolicy;

use super::failure::SessionFailure;
use super::parts::PartControl;
use super::queue_budget::ByteBudget;
use super::settings::SessionSettings;
use super::stats::EpisodeStats;
use crate::episode::EpisodeSchema;
use wshard_storage::fsio::Fs;
use wshard_storage::layout::EpisodeLayout;

/// How the daemon talks back to the client of a session.
pub trait Responder: Send + Sync {
    /// Every timestep with `seq < up_to_seq` is durable.
    fn durable(&self, up_to_seq: u64);
    /// The episode failed on storage: what was durable stays durable, nothing more is accepted.
    fn storage_failed(&self, message: &str);
}

/// Why an episode ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FinalStatus {
    Complete,
    Aborted,
    /// Ended without a CLOSE: the reason is recorded in the manifest.
    Interrupted(String),
}

impl FinalStatus {
    /// The manifest `status` value.
    #[must_use]
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::Aborted => "aborted",
            Self::Interrupted(_) => "interrupted",
        }
    }
}

/// Shared by the threads of one session.
pub struct SessionShared {
    pub(crate) fs: Arc<dyn Fs>,
    pub(crate) layout: EpisodeLayout,
    pub(crate) schema: Arc<EpisodeSchema>,
    pub(crate) settings: SessionSettings,
    pub stats: Arc<EpisodeStats>,
    /// The episode's parts (`split`, `[rolling]`).
    pub parts: Arc<PartControl>,
    /// Record bytes queued for the writer (`queues.max_pending_bytes`).
    pub queue_budget: ByteBudget,
    pub(crate) responder: Arc<dyn Responder>,
    /// Set when a write, fsync or rename failed: no more data is accepted.
    pub(crate) failed: AtomicBool,
    failure: Mutex<Option<SessionFailure>>,
    durable_mark: AtomicU64,
    /// FLUSH and CLOSE answers owed: for each, the seq its `DURABLE` must reach. Also the
    /// lock every `DURABLE` is sent under, so that they leave in order.
    owed_durable: Mutex<Vec<u64>>,
    /// The shared-memory ring's backpressure policy (`RingPolicy::code`; 0 = block, also
    /// without a ring). Set by the connection when a ring is attached.
    ring_policy: AtomicU8,
    /// What the producer's ring counters said last (`dropped_steps`, `dropped_batches`):
    /// untrusted, for the final manifest and the logs.
    producer_dropped: [AtomicU64; 2],
    /// Set (before the first timestep) when the stream records in flight mode: the
    /// finisher keeps its ring.
    flight: std::sync::OnceLock<Arc<super::flight_ring::FlightRing>>,
}

impl std::fmt::Debug for SessionShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionShared")
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}

impl SessionShared {
    /// New shared state.
    pub(crate) fn new(
        fs: Arc<dyn Fs>,
        layout: EpisodeLayout,
        schema: Arc<EpisodeSchema>,
        settings: SessionSettings,
        responder: Arc<dyn Responder>,
        parts: Arc<PartControl>,
    ) -> Self {
        Self {
            fs,
            layout,
            schema,
            queue_budget: ByteBudget::new(settings.queue_bytes),
            settings,
            stats: Arc::new(EpisodeStats::default()),
            parts,
            responder,
            failed: AtomicBool::new(false),
            failure: Mutex::new(None),
            durable_mark: AtomicU64::new(0),
            owed_durable: Mutex::new(Vec::new()),
            ring_policy: AtomicU8::new(0),
            producer_dropped: [AtomicU64::new(0), AtomicU64::new(0)],
            flight: std::sync::OnceLock::new(),
        }
    }

    /// Record in flight mode into `ring` (before the first timestep; a second call is
    /// ignored).
    pub fn set_flight(&self, ring: Arc<super::flight_ring::FlightRing>) {
        let _ = self.flight.set(ring);
    }

    /// The directory and file names of the stream.
    #[must_use]
    pub fn layout(&self) -> &EpisodeLayout {
        &self.layout
    }

    /// The stream's flight ring, when it records in flight mode.
    #[must_use]
    pub fn flight(&self) -> Option<&Arc<super::flight_ring::FlightRing>> {
        self.flight.get()
    }

    /// Record the policy of the episode's shared-memory ring.
    pub(crate) fn set_ring_policy(&self, policy: RingPolicy) {
        self.ring_policy.store(policy.code(), Ordering::Release);
    }

    /// The policy of the episode's shared-memory ring (`Block` without one).
    #[must_use]
    pub(crate) fn ring_policy(&self) -> RingPolicy {
        RingPolicy::from_code(self.ring_policy.load(Ordering::Acquire)).unwrap_or_default()
    }

    /// Record the producer's ring counters (`dropped_steps`, `dropped_batches`) as read
    /// from the ring header.
    pub(crate) fn set_producer_dropped(&self, steps: u64, batches: u64) {
        self.producer_dropped[0].store(steps, Ordering::Release);
        self.producer_dropped[1].store(batches, Ordering::Release);
    }

    /// The producer's ring counters as last recorded: `(dropped_steps, dropped_batches)`.
    #[must_use]
    pub(crate) fn producer_dropped(&self) -> (u64, u64) {
        (
            self.producer_dropped[0].load(Ordering::Acquire),
            self.producer_dropped[1].load(Ordering::Acquire),
        )
    }

    fn owed_durable(&self) -> MutexGuard<'_, Vec<u64>> {
        // A poisoned lock only means a sender panicked; the list is still right.
        self.owed_durable
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Raise the durable watermark; tell the client only when it moved forward. That
    /// `DURABLE` also answers every FLUSH or CLOSE it covers.
    pub(crate) fn advance_durable(&self, up_to_seq: u64) {
        let mut owed = self.owed_durable();
        let prev = self.durable_mark.fetch_max(up_to_seq, Ordering::AcqRel);
        if up_to_seq > prev {
            self.stats.durable.store(up_to_seq, Ordering::Relaxed);
            self.responder.durable(up_to_seq);
            owed.retain(|&want| want > up_to_seq);
        }
    }

    /// Answer a FLUSH or CLOSE: the client gets a `DURABLE` covering every timestep received
    /// before it (`received_end`, one past the last seq), once they are durable. When they
    /// already are, the watermark is sent now, even if it repeats the last `DURABLE` (or is
    /// 0: no timestep yet); otherwise the [`SessionShared::advance_durable`] that reaches
    /// `received_end` is the answer. A failed episode never gets there: its client got (or
    /// is getting) `ERROR{STORAGE}` instead, which is the answer.
    pub(crate) fn answer_durable(&self, received_end: u64) {
        let mut owed = self.owed_durable();
        if self.is_failed() {
            return;
        }
        let mark = self.durable_mark.load(Ordering::Acquire);
        if mark >= received_end {
            self.responder.durable(mark);
        } else {
            owed.push(received_end);
        }
    }

    /// The durable watermark.
    #[must_use]
    pub fn durable(&self) -> u64 {
        self.durable_mark.load(Ordering::Acquire)
    }

    /// Mark the session failed (first failure wins) and tell the client.
    pub(crate) fn fail(&self, failure: SessionFailure) {
        // The failure is in place before the flag is raised: whoever sees `is_failed()`
        // (e.g. the connection refusing the next frame) also sees why.
        let message = failure.to_string();
        // A cut of a multi-stream episode waiting for this stream's part stops waiting.
        self.parts.failed.store(true, Ordering::Release);
        let first = match self.failure.lock() {
            Ok(mut f) if f.is_none() => {
                *f = Some(failure);
                true
            }
            Ok(_) => false,
            Err(_) => true,
        };
        if first && !self.failed.swap(true, Ordering::AcqRel) {
            tracing::error!(episode = %self.layout.episode_id, "episode failed: {message}");
            self.responder.storage_failed(&message);
        }
    }

    /// True once failed.
    #[must_use]
    pub fn is_failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// The first failure, if any.
    #[must_use]
    pub fn failure(&self) -> Option<SessionFailure> {
        self.failure.lock().ok().and_then(|f| f.clone())
    }
}
