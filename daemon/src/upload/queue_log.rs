//! The upload queue's log, `data_dir/.upload/queue.log` ([`QueueLog`]).
//!
//! Records ([`Record`], JSON) are framed like the episode journals (`journal::format`:
//! 32 KiB blocks, CRC32C per fragment), appended through [`Fs`] and synced
//! (`sync_data`) before [`QueueLog::append`] returns: the step a record describes is only
//! relied on once it is durable. A torn or damaged tail reads as far as its records verify.
//!
//! Opening replays the log and then compacts it: the replayed state is written as a
//! snapshot to `queue.log.tmp`, synced, renamed over `queue.log` and the directory synced.
//! The same happens when the log has grown to [`COMPACT_MIN_RECORDS`] records and four
//! times its snapshot. A crash at any point leaves either the old log or the new one, both
//! whole. After a failed write or sync the log is dead ([`QueueLogError::Failed`]): a
//! sync is never retried on the same file.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::record::Record;
use super::state::QueueState;
use crate::journal::format::JournalWriter;
use crate::journal::scan::scan;
use wshard_storage::fsio::{DurableFile, FailStop, Fs};

/// The log's file name in the queue's directory ([`super::settings::UPLOAD_DIR`]).
pub const QUEUE_LOG: &str = "queue.log";
/// The compaction's temporary file.
pub const QUEUE_LOG_TMP: &str = "queue.log.tmp";
/// The log is compacted once it holds at least this many records (and four times its
/// snapshot).
pub const COMPACT_MIN_RECORDS: usize = 4096;

/// What can go wrong with the queue's log. Never holds a credential.
#[derive(Debug, thiserror::Error)]
pub enum QueueLogError {
    /// A file-system call failed.
    #[error("upload queue {}: {step}: {source}", path.display())]
    Io {
        path: PathBuf,
        step: &'static str,
        #[source]
        source: io::Error,
    },
    /// A record whose CRC verifies but whose body is not a record this daemon writes.
    #[error("upload queue {}: record at offset {offset}: {detail}", path.display())]
    BadRecord {
        path: PathBuf,
        offset: u64,
        detail: String,
    },
    /// An earlier write or sync failed: the log takes nothing more until a restart.
    #[error("upload queue {}: an earlier write or sync failed; restart wshardd", path.display())]
    Failed { path: PathBuf },
}

impl QueueLogError {
    /// A short kind name for status and metrics.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Io { .. } | Self::Failed { .. } => "queue_io",
            Self::BadRecord { .. } => "queue_bad_record",
        }
    }
}

/// What opening found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// Records replayed.
    pub records: usize,
    /// Bytes of the old log that did not verify (a torn tail).
    pub discarded_bytes: u64,
}

/// The open log.
pub struct QueueLog {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    writer: Option<JournalWriter<Box<dyn DurableFile>>>,
    /// Records in the file now.
    records: usize,
    /// Records in the last snapshot.
    snapshot_records: usize,
}

impl std::fmt::Debug for QueueLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueLog")
            .field("dir", &self.dir)
            .field("records", &self.records)
            .finish_non_exhaustive()
    }
}

pub(super) fn io_err(path: &Path, step: &'static str) -> impl FnOnce(io::Error) -> QueueLogError {
    let path = path.to_path_buf();
    move |source| QueueLogError::Io { path, step, source }
}

impl QueueLog {
    /// Open (or create) the log in `dir` (`data_dir/.upload`), replay it and compact it.
    ///
    /// # Errors
    /// [`QueueLogError`] of the step that failed.
    pub fn open(
        fs: Arc<dyn Fs>,
        dir: &Path,
    ) -> Result<(Self, QueueState, OpenReport), QueueLogError> {
        if !fs.exists(dir) {
            fs.create_dir_all(dir)
                .map_err(io_err(dir, "create directory"))?;
            if let Some(parent) = dir.parent() {
                fs.sync_dir(parent)
                    .map_err(io_err(parent, "fsync directory"))?;
            }
        }
        let log = dir.join(QUEUE_LOG);
        let bytes = match fs.read(&log) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io_err(&log, "read")(e)),
        };
        let scanned = scan(&bytes);
        let mut records = Vec::with_capacity(scanned.records.len());
        for r in &scanned.records {
            let rec = Record::from_bytes(&r.data).map_err(|e| QueueLogError::BadRecord {
                path: log.clone(),
                offset: r.offset,
                detail: e.to_string(),
            })?;
            records.push(rec);
        }
        let state = QueueState::replay(&records);
        let report = OpenReport {
            records: records.len(),
            discarded_bytes: scanned.len.saturating_sub(scanned.valid_end),
        };
        let mut me = Self {
            fs,
            dir: dir.to_path_buf(),
            writer: None,
            records: 0,
            snapshot_records: 0,
        };
        me.compact(&state)?;
        Ok((me, state, report))
    }

    /// The log's path.
    #[must_use]
    pub fn path(&self) -> PathBuf {
        self.dir.join(QUEUE_LOG)
    }

    /// Append `r` and sync it. After an error the log is dead.
    ///
    /// # Errors
    /// [`QueueLogError::Io`] for the failed write or sync, [`QueueLogError::Failed`] after
    /// an earlier failure.
    pub fn append(&mut self, r: &Record) -> Result<(), QueueLogError> {
        let path = self.path();
        let Some(w) = self.writer.as_mut() else {
            return Err(QueueLogError::Failed { path });
        };
        let body = r.to_bytes().map_err(|e| QueueLogError::BadRecord {
            path: path.clone(),
            offset: w.offset(),
            detail: e.to_string(),
        })?;
        let res = w
            .append(&[&body])
            .map_err(io_err(&path, "write"))
            .and_then(|_| w.get_mut().sync_data().map_err(io_err(&path, "fsync")));
        if res.is_err() {
            self.writer = None;
        }
        res?;
        self.records += 1;
        Ok(())
    }

    /// True when the log is worth compacting.
    #[must_use]
    pub fn needs_compaction(&self) -> bool {
        self.records >= COMPACT_MIN_RECORDS && self.records >= 4 * self.snapshot_records.max(1)
    }

    /// Rewrite the log as the snapshot of `state`: `queue.log.tmp`, fsync, rename, fsync
    /// the directory; then continue appending to it. After an error the log is dead.
    ///
    /// # Errors
    /// [`QueueLogError::Io`] of the failed step.
    pub fn compact(&mut self, state: &QueueState) -> Result<(), QueueLogError> {
        self.writer = None;
        let tmp = self.dir.join(QUEUE_LOG_TMP);
        let log = self.path();
        let snapshot = state.snapshot();
        let f = self
            .fs
            .create(&tmp)
            .map_err(io_err(&tmp, "create temp file"))?;
        let mut w = JournalWriter::new(FailStop::wrap(f), 0);
        for r in &snapshot {
            let body = r.to_bytes().map_err(|e| QueueLogError::BadRecord {
                path: tmp.clone(),
                offset: w.offset(),
                detail: e.to_string(),
            })?;
            w.append(&[&body])
                .map_err(io_err(&tmp, "write temp file"))?;
        }
        let end = w.offset();
        let mut f = w.into_inner();
        f.sync_all().map_err(io_err(&tmp, "fsync temp file"))?;
        drop(f);
        self.fs
            .rename(&tmp, &log)
            .map_err(io_err(&log, "rename temp file"))?;
        self.fs
            .sync_dir(&self.dir)
            .map_err(io_err(&self.dir, "fsync directory"))?;
        let f = self
            .fs
            .open_append(&log)
            .map_err(io_err(&log, "open for append"))?;
        self.writer = Some(JournalWriter::new(FailStop::wrap(f), end));
        self.records = snapshot.len();
        self.snapshot_records = snapshot.len();
        Ok(())
    }
}
