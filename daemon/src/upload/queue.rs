//! The durable upload queue ([`UploadQueue`]): the log and the state it replays, kept in
//! step, and the view's queue figures refreshed at every record.

use std::path::Path;
use std::sync::Arc;

use super::queue_log::{OpenReport, QueueLog, QueueLogError};
use super::record::Record;
use super::state::{EpisodeUpload, QueueState};
use super::view::UploadShared;
use wshard_publish::blob::MultipartUpload;
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

    /// One more failed attempt at blob `sha256`'s multipart upload in progress
    /// (`mpu_failed`); at `restart_after` in a row the upload is given up (`mpu_restart`:
    /// the next attempt starts a new one) and returned with the count, for the caller to
    /// abort on the store. `None`: no upload in progress, or not given up yet.
    ///
    /// # Errors
    /// The queue log's.
    pub fn multipart_failed(
        &mut self,
        sha256: &str,
        restart_after: u32,
    ) -> Result<Option<(MultipartUpload, u32)>, QueueLogError> {
        let Some(m) = self.state.multipart.get(sha256).cloned() else {
            return Ok(None);
        };
        let failures = self.state.failures_of(sha256).saturating_add(1);
        self.record(Record::MpuFailed {
            sha256: sha256.to_owned(),
            upload_id: m.upload_id.clone(),
            failures,
        })?;
        if failures < restart_after {
            return Ok(None);
        }
        self.record(Record::MpuRestart {
            sha256: sha256.to_owned(),
            upload_id: m.upload_id.clone(),
        })?;
        Ok(Some((m, failures)))
    }

    /// Drop `episode` from the queue (`dropped`) when it is in it, not dropped and not yet
    /// published. True when it was dropped now.
    ///
    /// # Errors
    /// The queue log's.
    pub fn drop_episode(&mut self, episode: &str) -> Result<bool, QueueLogError> {
        let droppable = self
            .state
            .episodes
            .get(episode)
            .is_some_and(|e| !e.dropped && e.stage < EpisodeUpload::Published);
        if droppable {
            self.record(Record::Dropped {
                episode: episode.to_owned(),
            })?;
        }
        Ok(droppable)
    }
}
