//! Per-episode counters, updated lock-free and read by status and logs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// Counters of one episode.
#[derive(Debug, Default)]
pub struct EpisodeStats {
    /// Timesteps accepted from the client.
    pub(crate) received: AtomicU64,
    /// Timesteps covered by a DURABLE ack.
    pub(crate) durable: AtomicU64,
    /// Payload bytes accepted.
    pub(crate) bytes: AtomicU64,
    /// Frames queued between the connection and the writer.
    pub(crate) queue_depth: AtomicU64,
    /// Chunks finalized.
    pub chunks: AtomicU64,
    /// Microseconds of the last journal fsync.
    pub(crate) last_fsync_us: AtomicU64,
    /// Seqs the shared-memory producer dropped (drop policies), as seen from the gaps
    /// between the seqs accepted.
    pub(crate) dropped_steps: AtomicU64,
    /// Gaps accepted (each one or more dropped batches).
    pub(crate) gaps: AtomicU64,
    /// When the writer thread last went round its loop, in [`monotonic_ms`]; the loop wakes
    /// at least every [`HEARTBEAT_EVERY`] even when idle. [`HEARTBEAT_NOT_STARTED`] before
    /// the writer runs, [`HEARTBEAT_RETIRED`] once it has returned. Read by the watchdog.
    pub(crate) last_heartbeat_ms: AtomicU64,
}

/// The writer's loop wakes at least this often, so its heartbeat stays fresh while idle.
pub(crate) const HEARTBEAT_EVERY: std::time::Duration = std::time::Duration::from_millis(250);
/// `last_heartbeat_ms` before the writer thread's first iteration.
pub(crate) const HEARTBEAT_NOT_STARTED: u64 = 0;
/// `last_heartbeat_ms` after the writer thread has returned.
pub(crate) const HEARTBEAT_RETIRED: u64 = u64::MAX;

/// Milliseconds on a process-wide monotonic clock, never [`HEARTBEAT_NOT_STARTED`] (it starts
/// at 1) and never [`HEARTBEAT_RETIRED`].
#[must_use]
pub(crate) fn monotonic_ms() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let ms = EPOCH.get_or_init(Instant::now).elapsed().as_millis();
    u64::try_from(ms)
        .unwrap_or(u64::MAX - 1)
        .saturating_add(1)
        .min(u64::MAX - 1)
}

impl EpisodeStats {
    /// The writer is alive and going round its loop.
    pub(crate) fn heartbeat(&self) {
        self.last_heartbeat_ms
            .store(monotonic_ms(), Ordering::Relaxed);
    }

    /// The writer has returned: the watchdog stops watching this episode.
    pub(crate) fn retire_heartbeat(&self) {
        self.last_heartbeat_ms
            .store(HEARTBEAT_RETIRED, Ordering::Relaxed);
    }

    /// A one-line summary for logs.
    #[must_use]
    pub(crate) fn summary(&self) -> String {
        format!(
            "received={} durable={} bytes={} chunks={} queue_depth={} last_fsync_us={} \
             dropped_steps={} gaps={}",
            self.received.load(Ordering::Relaxed),
            self.durable.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
            self.chunks.load(Ordering::Relaxed),
            self.queue_depth.load(Ordering::Relaxed),
            self.last_fsync_us.load(Ordering::Relaxed),
            self.dropped_steps.load(Ordering::Relaxed),
            self.gaps.load(Ordering::Relaxed),
        )
    }
}
