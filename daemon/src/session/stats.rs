//! Per-episode counters, updated lock-free and read by status and logs.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of one episode.
#[derive(Debug, Default)]
pub struct EpisodeStats {
    /// Timesteps accepted from the client.
    pub received: AtomicU64,
    /// Timesteps covered by a DURABLE ack.
    pub durable: AtomicU64,
    /// Payload bytes accepted.
    pub bytes: AtomicU64,
    /// Frames queued between the connection and the writer.
    pub queue_depth: AtomicU64,
    /// Chunks finalized.
    pub chunks: AtomicU64,
    /// Microseconds of the last journal fsync.
    pub last_fsync_us: AtomicU64,
    /// Seqs the shared-memory producer dropped (drop policies), as seen from the gaps
    /// between the seqs accepted.
    pub dropped_steps: AtomicU64,
    /// Gaps accepted (each one or more dropped batches).
    pub gaps: AtomicU64,
}

impl EpisodeStats {
    /// A one-line summary for logs.
    #[must_use]
    pub fn summary(&self) -> String {
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
