//! Retention and the quota: which published episodes lose their local copy
//! ([`EvictionNeed`]) and how the copy is removed ([`LocalCopies`]). The uploader records
//! each step in its queue between these calls.
//!
//! Only an episode recorded `published` (every blob verified on the store by size and
//! SHA-256, and the dataset's `latest.json` moved to a version holding it) is ever
//! evicted, oldest (first enqueued) first:
//! - `delete_after_publish`: every published episode;
//! - `quota_bytes`: while the data directory holds more than the quota;
//! - free space under `disk.low_watermark_free_bytes` + [`low_watermark_margin`].
//!
//! Eviction: journal `evicting` (synced), rename the episode directory to
//! `.upload/evicting/<id>` and fsync both directories ([`LocalCopies::move_out`]), journal
//! `evicted`, then delete the files ([`LocalCopies::delete_moved`]). A crash before the
//! rename leaves the episode in place and `evicting`: opening the queue finishes the
//! eviction; after it, the directory is only under `.upload/evicting/`, never half-deleted
//! in the data directory. An evicted episode stays listed (`evicted`: remote only).

use std::io;
use std::path::{Path, PathBuf};

use super::queue_log::{io_err, QueueLogError};
use super::settings::EvictPolicy;
use wshard_storage::fsio::Fs;

/// The directory under the queue's directory that episodes being evicted are moved to.
pub const EVICTING_DIR: &str = "evicting";

/// Free space kept above the low watermark by evicting published episodes: a tenth of it.
#[must_use]
pub fn low_watermark_margin(low: u64) -> u64 {
    low / 10
}

/// What a pass of eviction has to free, measured when it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EvictionNeed {
    /// `delete_after_publish`: every published episode goes.
    all: bool,
    /// Bytes of the data directory over the quota.
    over_quota: u64,
    /// Bytes of free space short of the low watermark and its margin.
    short: u64,
}

impl EvictionNeed {
    /// Measure the data directory against `policy`.
    #[must_use]
    pub fn measure(policy: &EvictPolicy, data_dir: &Path) -> Self {
        let over_quota = if policy.quota_bytes > 0 {
            tree_bytes(data_dir).saturating_sub(policy.quota_bytes)
        } else {
            0
        };
        let floor = policy
            .low_watermark_free_bytes
            .saturating_add(low_watermark_margin(policy.low_watermark_free_bytes));
        let short = free_bytes_of(data_dir).map_or(0, |f| floor.saturating_sub(f));
        Self {
            all: policy.delete_after_publish,
            over_quota,
            short,
        }
    }

    /// Why the next published episode goes (`delete_after_publish`, `quota`,
    /// `low_watermark`), `None` when nothing more needs to.
    #[must_use]
    pub fn reason(&self) -> Option<&'static str> {
        if self.all {
            Some("delete_after_publish")
        } else if self.over_quota > 0 {
            Some("quota")
        } else if self.short > 0 {
            Some("low_watermark")
        } else {
            None
        }
    }

    /// An episode of `bytes` was evicted.
    pub fn evicted(&mut self, bytes: u64) {
        self.over_quota = self.over_quota.saturating_sub(bytes);
        self.short = self.short.saturating_sub(bytes);
    }
}

/// Free bytes for unprivileged users on the filesystem holding `path` (`statvfs`
/// `f_bavail * f_frsize`, as the disk monitor measures; measured here so that this module
/// does not call `runtime`, which holds the uploader's view).
fn free_bytes_of(path: &Path) -> io::Result<u64> {
    let s = nix::sys::statvfs::statvfs(path).map_err(io::Error::from)?;
    #[allow(clippy::useless_conversion)] // the field widths differ between targets
    let (avail, frag) = (u64::from(s.blocks_available()), s.fragment_size());
    Ok(avail.saturating_mul(frag))
}

/// Bytes of the files under `dir` (not following links).
#[must_use]
pub fn tree_bytes(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => tree_bytes(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

/// The episodes' local copies in the data directory, and `.upload/evicting/` where a copy
/// being evicted is moved; every step through the [`Fs`].
#[derive(Clone, Copy)]
pub struct LocalCopies<'a> {
    pub fs: &'a dyn Fs,
    pub data_dir: &'a Path,
    /// The queue's directory (`data_dir/.upload`).
    pub queue_dir: &'a Path,
}

impl LocalCopies<'_> {
    fn evicting_dir(&self) -> PathBuf {
        self.queue_dir.join(EVICTING_DIR)
    }

    /// Rename episode `id`'s directory to `.upload/evicting/<id>` (a copy an earlier
    /// attempt left there is deleted first: the one in the data directory wins), then sync
    /// both directories. Nothing to move when it is gone already.
    ///
    /// # Errors
    /// [`QueueLogError::Io`] of the step that failed.
    pub fn move_out(&self, id: &str) -> Result<(), QueueLogError> {
        let src = self.data_dir.join(id);
        let evicting = self.evicting_dir();
        let dst = evicting.join(id);
        if !self.fs.exists(&evicting) {
            self.fs
                .create_dir_all(&evicting)
                .map_err(io_err(&evicting, "create directory"))?;
            self.fs
                .sync_dir(self.queue_dir)
                .map_err(io_err(self.queue_dir, "fsync directory"))?;
        }
        if self.fs.exists(&src) {
            if self.fs.exists(&dst) {
                self.remove_tree(&dst)?;
            }
            self.fs
                .rename(&src, &dst)
                .map_err(io_err(&src, "rename to .upload/evicting"))?;
            self.fs
                .sync_dir(self.data_dir)
                .map_err(io_err(self.data_dir, "fsync directory"))?;
            self.fs
                .sync_dir(&evicting)
                .map_err(io_err(&evicting, "fsync directory"))?;
        }
        Ok(())
    }

    /// Delete the moved copy of episode `id` (recorded `evicted`) and sync the directory.
    ///
    /// # Errors
    /// [`QueueLogError::Io`] of the step that failed.
    pub fn delete_moved(&self, id: &str) -> Result<(), QueueLogError> {
        let evicting = self.evicting_dir();
        let dst = evicting.join(id);
        if self.fs.exists(&dst) {
            self.remove_tree(&dst)?;
            self.fs
                .sync_dir(&evicting)
                .map_err(io_err(&evicting, "fsync directory"))?;
        }
        Ok(())
    }

    /// Delete whatever is under `.upload/evicting/`: leftovers of evictions recorded
    /// `evicted` whose deletion was cut short.
    ///
    /// # Errors
    /// [`QueueLogError::Io`] of the step that failed.
    pub fn delete_leftovers(&self) -> Result<(), QueueLogError> {
        if let Ok(entries) = self.fs.read_dir(&self.evicting_dir()) {
            for p in entries {
                self.remove_tree(&p)?;
            }
        }
        Ok(())
    }

    /// Delete a directory tree (or a file).
    fn remove_tree(&self, path: &Path) -> Result<(), QueueLogError> {
        match self.fs.read_dir(path) {
            Ok(entries) => {
                for p in entries {
                    self.remove_tree(&p)?;
                }
                self.fs
                    .remove_dir(path)
                    .map_err(io_err(path, "remove directory"))
            }
            Err(_) => match self.fs.remove_file(path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(io_err(path, "remove file")(e)),
            },
        }
    }
}
