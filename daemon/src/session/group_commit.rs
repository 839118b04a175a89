//! Group commit: when the writer thread fdatasyncs the journal, per `fsync.policy`.
//!
//! The writer appends every batch it drains to the journal segment, then commits once for
//! the whole group: `always` after each drained group, `interval` at most `interval` after
//! the first unsynced write (less the last fdatasync's duration), `never` not at all (the
//! chunk's own fsync is then what makes timesteps durable). This file keeps the clock of
//! the first unsynced write and runs the fdatasync; the writer raises the durable watermark
//! when it succeeds.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use wshardd_config::FsyncPolicy;

use super::stats::EpisodeStats;
use crate::error::StorageError;
use crate::journal::segment::JournalSegment;

/// The journal's sync state: the policy, and since when something is unsynced.
pub(crate) struct GroupCommit {
    policy: FsyncPolicy,
    /// When the first write not yet synced arrived (the connection's hand-over time).
    dirty_since: Option<Instant>,
}

impl GroupCommit {
    pub(crate) fn new(policy: FsyncPolicy) -> Self {
        Self {
            policy,
            dirty_since: None,
        }
    }

    /// Records that reached the connection at `arrived` were appended to the journal: the
    /// interval sync's clock starts at the earliest unsynced arrival.
    pub(crate) fn appended(&mut self, arrived: Instant) {
        self.dirty_since = Some(self.dirty_since.map_or(arrived, |d| d.min(arrived)));
    }

    /// When the interval sync is due, if one is pending.
    pub(crate) fn deadline(&self, stats: &EpisodeStats) -> Option<Instant> {
        match (self.policy, self.dirty_since) {
            (FsyncPolicy::Interval(d), Some(t)) => Some(t + sync_lead(stats, d)),
            _ => None,
        }
    }

    /// Whether the policy wants a sync now (after a drained group, or at the deadline).
    pub(crate) fn is_due(&self, stats: &EpisodeStats) -> bool {
        match (self.policy, self.dirty_since) {
            (FsyncPolicy::Always, Some(_)) => true,
            (FsyncPolicy::Interval(d), Some(t)) => t.elapsed() >= sync_lead(stats, d),
            _ => false,
        }
    }

    /// fdatasync `journal` if anything is unsynced, recording how long it took. `Ok(true)`
    /// when it synced: everything appended so far is durable.
    ///
    /// # Errors
    /// The failed sync (never retried: the caller fails the episode).
    pub(crate) fn commit(
        &mut self,
        journal: &mut JournalSegment,
        stats: &EpisodeStats,
    ) -> Result<bool, StorageError> {
        if !journal.is_dirty() && self.dirty_since.is_none() {
            return Ok(false);
        }
        let t = Instant::now();
        journal.sync()?;
        let us = u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX);
        stats.last_fsync_us.store(us, Ordering::Relaxed);
        self.dirty_since = None;
        Ok(true)
    }
}

/// How long after the first unsynced write the interval sync starts: the interval less
/// the last fdatasync's duration, so that the DURABLE ack (which follows the sync) lands
/// within `interval` of that write rather than `interval + fsync` after it.
fn sync_lead(stats: &EpisodeStats, interval: Duration) -> Duration {
    let last = Duration::from_micros(stats.last_fsync_us.load(Ordering::Relaxed));
    interval.saturating_sub(last.min(interval / 2))
}
