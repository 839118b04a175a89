//! The durable upload queue ([`UploadQueue`]): the log and the state it replays, kept in
//! step, and the view's queue figures refreshed at every record.

use std::path::Path;
use std::sync::Arc;

use super::queue_log::{OpenReport, QueueLog, QueueLogError};
use super::record::Record;
use super::state::QueueState;
use super::view::UploadShared;
use wshard_storage::fsio::Fs;

/// The queue: every change is a record appended to the log (synced) before it is applied.
#[derive(Debug)]
pub struct UploadQueue {
    log: QueueLog,
    state: QueueState,
    shared: Arc<UploadShared>,
}

impl UploadQueue {
    /// Open the log in `dir` (replayed, compacted) and show the queue in `shared`.
    ///
    /// # Errors
    /// The queue log's.
    pub fn open(
        fs: Arc<dyn Fs>,
        dir: &Path,
        shared: Arc<UploadShared>,
    ) -> Result<(Self, OpenReport), QueueLogError> {
        let (log, state, report) = QueueLog::open(fs, dir)?;
        shared.set_queue(&state);
        Ok((Self { log, state, shared }, report))
    }

    /// The queue as replayed and changed since.
    #[must_use]
    pub fn state(&self) -> &QueueState {
        &self.state
    }

    /// Append `r` to the log (synced), then apply it and show it; compact the log when it
    /// has grown.
    ///
    /// # Errors
    /// The queue log's: after one, the log takes nothing more until a restart.
    pub fn record(&mut self, r: Record) -> Result<(), QueueLogError> {
        self.log.append(&r)?;
        self.state.apply(&r);
        self.shared.set_queue(&self.state);
        if self.log.needs_compaction() {
            self.log.compact(&self.state)?;
        }
        Ok(())
    }
}
