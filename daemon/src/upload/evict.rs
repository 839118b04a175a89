//! Retention and the quota: removing the local copy of published episodes.
//!
//! Only an episode recorded `published` (every blob verified on the store by size and
//! SHA-256, and the dataset's `latest.json` moved to a version holding it) is ever
//! evicted, oldest (first enqueued) first:
//! - `delete_after_publish`: every published episode;
//! - `quota_bytes`: while the data directory holds more than the quota;
//! - free space under `disk.low_watermark_free_bytes` + [`low_watermark_margin`].
//!
//! Eviction: journal `evicting` (synced), rename the episode directory to
//! `.upload/evicting/<id>`, fsync both directories, journal `evicted`, then delete the
//! files. A crash before the rename leaves the episode in place and `evicting`: opening
//! the queue finishes the eviction; after it, the directory is only under
//! `.upload/evicting/`, never half-deleted in the data directory. An evicted episode stays
//! listed (`evicted`: remote only).

use std::io;
use std::path::{Path, PathBuf};

use super::queue_log::QueueLogError;
use super::record::Record;
use super::state::EpisodeUpload;
use super::uploader::{CycleError, Uploader};

/// The directory under the queue's directory that episodes being evicted are moved to.
pub const EVICTING_DIR: &str = "evicting";

/// What may be evicted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EvictPolicy {
    pub delete_after_publish: bool,
    /// 0: no quota.
    pub quota_bytes: u64,
    /// `disk.low_watermark_free_bytes`.
    pub low_watermark_free_bytes: u64,
}

/// Free space kept above the low watermark by evicting published episodes: a tenth of it.
#[must_use]
pub fn low_watermark_margin(low: u64) -> u64 {
    low / 10
}

pub(super) fn io_err(path: &Path, step: &'static str) -> impl FnOnce(io::Error) -> QueueLogError {
    let path = path.to_path_buf();
    move |source| QueueLogError::Io { path, step, source }
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
fn tree_bytes(dir: &Path) -> u64 {
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

impl Uploader {
    fn evicting_dir(&self) -> PathBuf {
        self.settings.queue_dir.join(EVICTING_DIR)
    }

    /// Finish the evictions a crash interrupted (`evicting` without `evicted`).
    pub(super) fn finish_evictions(&mut self) -> Result<(), QueueLogError> {
        let open: Vec<String> = self
            .state
            .episodes
            .iter()
            .filter(|(_, e)| e.stage == EpisodeUpload::Evicting)
            .map(|(id, _)| id.clone())
            .collect();
        for id in open {
            self.move_and_delete(&id)?;
        }
        // Leftovers of an eviction recorded `evicted` whose deletion was cut short.
        let dir = self.evicting_dir();
        if let Ok(entries) = self.fs.read_dir(&dir) {
            for p in entries {
                self.remove_tree(&p)?;
            }
        }
        Ok(())
    }

    /// Evict what the policy asks for.
    pub(super) fn evict(&mut self) -> Result<(), CycleError> {
        let policy = self.settings.evict;
        let published: Vec<String> = self
            .state
            .in_order()
            .into_iter()
            .filter(|(_, e)| e.stage == EpisodeUpload::Published)
            .map(|(id, _)| id.clone())
            .collect();
        if published.is_empty() {
            return Ok(());
        }
        let data_dir = self.settings.data_dir.clone();
        let mut over_quota = if policy.quota_bytes > 0 {
            tree_bytes(&data_dir).saturating_sub(policy.quota_bytes)
        } else {
            0
        };
        let floor = policy
            .low_watermark_free_bytes
            .saturating_add(low_watermark_margin(policy.low_watermark_free_bytes));
        let mut short = free_bytes_of(&data_dir).map_or(0, |f| floor.saturating_sub(f));
        for id in published {
            if self.stopped() {
                return Err(CycleError::Stopped);
            }
            if !policy.delete_after_publish && over_quota == 0 && short == 0 {
                break;
            }
            let size = tree_bytes(&data_dir.join(&id));
            let reason = if policy.delete_after_publish {
                "delete_after_publish"
            } else if over_quota > 0 {
                "quota"
            } else {
                "low_watermark"
            };
            tracing::info!(episode = %id, bytes = size, reason, "upload: evicting the local copy of a published episode");
            self.evict_one(&id)?;
            over_quota = over_quota.saturating_sub(size);
            short = short.saturating_sub(size);
            self.shared.update(|v| {
                v.counters.episodes_evicted += 1;
                v.counters.evicted_bytes += size;
            });
        }
        Ok(())
    }

    /// Evict one published episode.
    fn evict_one(&mut self, id: &str) -> Result<(), QueueLogError> {
        self.record(Record::Evicting {
            episode: id.to_owned(),
        })?;
        self.move_and_delete(id)
    }

    /// Rename the episode's directory under `.upload/evicting/`, sync both directories,
    /// record `evicted`, delete the files.
    fn move_and_delete(&mut self, id: &str) -> Result<(), QueueLogError> {
        let fs = self.fs.clone();
        let src = self.settings.data_dir.join(id);
        let evicting = self.evicting_dir();
        let dst = evicting.join(id);
        if !fs.exists(&evicting) {
            fs.create_dir_all(&evicting)
                .map_err(io_err(&evicting, "create directory"))?;
            fs.sync_dir(&self.settings.queue_dir)
                .map_err(io_err(&self.settings.queue_dir, "fsync directory"))?;
        }
        if fs.exists(&src) {
            if fs.exists(&dst) {
                // A copy left by an earlier attempt: the one in the data directory wins.
                self.remove_tree(&dst)?;
            }
            fs.rename(&src, &dst)
                .map_err(io_err(&src, "rename to .upload/evicting"))?;
            fs.sync_dir(&self.settings.data_dir)
                .map_err(io_err(&self.settings.data_dir, "fsync directory"))?;
            fs.sync_dir(&evicting)
                .map_err(io_err(&evicting, "fsync directory"))?;
        }
        self.record(Record::Evicted {
            episode: id.to_owned(),
        })?;
        if fs.exists(&dst) {
            self.remove_tree(&dst)?;
            fs.sync_dir(&evicting)
                .map_err(io_err(&evicting, "fsync directory"))?;
        }
        Ok(())
    }

    /// Delete a directory tree (or a file) through the `Fs`.
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
