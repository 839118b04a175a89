//! The steps of recovery that change files, each honouring the [`RecoveryMode`]: applied,
//! or only recorded as an [`Action`] in a dry run. [`Run`] holds what one recovery of an
//! episode carries from step to step: the manifest being rebuilt and the report.
//!
//! The report survives a recovery that is cut: every manifest commit carries it, and before
//! a step makes evidence disappear (a file moved to quarantine, a journal whose damage was
//! reported removed) the report is committed first when it changed
//! ([`Run::save_progress`]).

use std::path::{Path, PathBuf};

use serde_json::Value;
use wshard::episode::Episode;
use wshard::manifest::{ChunkRef, Manifest};

use super::plan::{Action, RecoveryMode};
use super::report::{RecoveryReport, MANIFEST_KEY};
use crate::chunk::chunk_file::write_and_finalize_chunk;
use crate::chunk::manifest_commit::commit_manifest;
use crate::error::StorageError;
use crate::session::SessionSettings;
use wshard_storage::fsio::Fs;
use wshard_storage::layout::EpisodeLayout;

/// Manifest status while recovery is under way.
pub(crate) const RECOVERING: &str = "recovering";

pub(super) fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Where `path` goes in the quarantine directory `qdir`: its name, or with `.1`, `.2`, ...
/// appended when taken (never overwriting).
pub(crate) fn quarantine_target(fs: &dyn Fs, qdir: &Path, path: &Path) -> PathBuf {
    let mut target = qdir.join(file_name(path));
    let mut n = 1;
    while fs.exists(&target) {
        target = qdir.join(format!("{}.{n}", file_name(path)));
        n += 1;
    }
    target
}

/// Move `path` to `target` (in `data_dir/quarantine/...`) durably: the quarantine
/// directories are created and fsynced up to `data_dir` first, and the new name is durable
/// before anything can make the old one's removal durable.
pub(crate) fn move_to_quarantine(
    fs: &dyn Fs,
    data_dir: &Path,
    path: &Path,
    target: &Path,
) -> Result<(), StorageError> {
    let qdir = target.parent().unwrap_or(data_dir);
    fs.create_dir_all(qdir)
        .map_err(|e| StorageError::io("create quarantine directory", qdir, e))?;
    // The quarantine directories themselves must survive a power cut: every one from the
    // episode's (or stream's) up to the data directory.
    for dir in qdir.ancestors().skip(1) {
        fs.sync_dir(dir)
            .map_err(|e| StorageError::io("fsync directory", dir, e))?;
        if dir == data_dir {
            break;
        }
    }
    fs.move_aside(path, target)
        .map_err(|e| StorageError::io("move to quarantine", path, e))?;
    // The new name is made durable before anything (the next fsync of the episode
    // directory) can make the old one's removal durable: else a power cut in between loses
    // the file, which may hold data that exists nowhere else.
    fs.sync_dir(qdir)
        .map_err(|e| StorageError::io("fsync directory", qdir, e))
}

/// One recovery of one episode.
pub(super) struct Run<'a> {
    pub(crate) fs: &'a dyn Fs,
    pub(crate) data_dir: &'a Path,
    pub(crate) layout: EpisodeLayout,
    pub(crate) settings: &'a SessionSettings,
    pub(crate) mode: RecoveryMode,
    pub(crate) manifest: Manifest,
    pub(crate) report: RecoveryReport,
    /// The report as last committed (or as found in the manifest).
    saved: Option<Value>,
    /// Chunks listed so far.
    pub(crate) listed: u64,
    /// Global index of the next timestep.
    pub(crate) next_timestep: u64,
    /// Seq of the next timestep (timesteps plus the seqs dropped before it).
    pub(crate) next_seq: u64,
}

impl<'a> Run<'a> {
    pub(crate) fn new(
        fs: &'a dyn Fs,
        data_dir: &'a Path,
        layout: EpisodeLayout,
        settings: &'a SessionSettings,
        mode: RecoveryMode,
        manifest: Manifest,
        report: RecoveryReport,
    ) -> Self {
        let saved = manifest.extra.get(MANIFEST_KEY).cloned();
        Self {
            fs,
            data_dir,
            layout,
            settings,
            mode,
            manifest,
            report,
            saved,
            listed: 0,
            next_timestep: 0,
            next_seq: 0,
        }
    }

    /// Move `path` into `data_dir/quarantine/{episode}/` (a stream's files: into
    /// `data_dir/quarantine/{episode}/streams/{stream}/`), never overwriting. The report
    /// naming it is committed first, so that a cut after the move cannot lose the record
    /// of it (except for the manifest itself, which is what a commit would replace).
    pub(crate) fn quarantine(&mut self, path: &Path, reason: &str) -> Result<(), StorageError> {
        self.set_aside(path, reason, false)
    }

    /// [`Run::quarantine`] a listed chunk that is about to be rebuilt whole from its
    /// journal: kept, but not lost data ([`RecoveryReport::quarantined_rebuilt`]). It is
    /// noted so before the move, with the report that names it: a run cut after the move
    /// rebuilds the chunk all the same (the file is missing then, the journal still there).
    pub(crate) fn quarantine_rebuilt(
        &mut self,
        path: &Path,
        reason: &str,
    ) -> Result<(), StorageError> {
        self.set_aside(path, reason, true)
    }

    fn set_aside(&mut self, path: &Path, reason: &str, rebuilt: bool) -> Result<(), StorageError> {
        let qdir = self.layout.quarantine_dir(self.data_dir);
        let target = quarantine_target(self.fs, &qdir, path);
        self.report.note_quarantined(target.display().to_string());
        if rebuilt {
            self.report
                .note_quarantined_rebuilt(target.display().to_string());
        }
        let is_manifest = path == self.layout.manifest();
        if !is_manifest {
            self.save_progress()?;
        }
        if self.mode.applies() {
            move_to_quarantine(self.fs, self.data_dir, path, &target)?;
        }
        self.report.actions.push(Action::Quarantine {
            from: path.to_path_buf(),
            to: target,
            reason: reason.to_owned(),
        });
        Ok(())
    }

    /// Remove a file whose content exists elsewhere.
    pub(crate) fn remove(&mut self, path: &Path) -> Result<(), StorageError> {
        if self.mode.applies() {
            self.fs
                .remove_file(path)
                .map_err(|e| StorageError::io("remove", path, e))?;
        }
        self.report.note_removed(file_name(path));
        self.report.actions.push(Action::Remove {
            path: path.to_path_buf(),
        });
        Ok(())
    }

    /// Replace the manifest with the one being rebuilt, with `status` and the report so
    /// far (in a dry run, only record that it would be).
    pub(crate) fn commit(&mut self, status: &str) -> Result<(), StorageError> {
        self.manifest.status = Some(status.to_owned());
        let report = self.report.to_json();
        self.manifest
            .extra
            .insert(MANIFEST_KEY.into(), report.clone());
        if self.mode.applies() {
            commit_manifest(self.fs, &self.layout, &self.manifest)?;
        }
        self.saved = Some(report);
        self.report.actions.push(Action::CommitManifest {
            path: self.layout.manifest(),
            status: status.to_owned(),
        });
        Ok(())
    }

    /// Commit the manifest as `recovering` when the report changed since it was last
    /// committed: what a cut recovery must not forget.
    pub(crate) fn save_progress(&mut self) -> Result<(), StorageError> {
        if self.saved.as_ref() == Some(&self.report.to_json()) {
            return Ok(());
        }
        self.commit(RECOVERING)
    }

    /// Write chunk `ep`'s file and finalize it; in a dry run, validate it as writing would
    /// and describe the chunk without writing it (its `sha256` is left empty).
    pub(crate) fn write_chunk(&self, ep: &mut Episode) -> Result<ChunkRef, StorageError> {
        let settings = self.settings;
        if self.mode.applies() {
            return write_and_finalize_chunk(
                self.fs,
                &self.layout,
                ep,
                &settings.write_options,
                settings.compression_workers,
                settings.preallocate,
            );
        }
        let k = ep.chunk.map_or(0, |c| c.chunk_index);
        ep.validate()
            .map_err(|e| StorageError::format(format!("chunk {k}"), e))?;
        let start = ep.timestep_range.map_or(0, |r| r[0]);
        Ok(ChunkRef {
            chunk_index: k,
            uri: file_name(&self.layout.chunk(k)),
            sha256: String::new(),
            timestep_range: [start, (start + ep.length).saturating_sub(1)],
            length_t: ep.length,
            extra: serde_json::Map::new(),
        })
    }
}
