//! The steps of recovery that change files, each honouring the [`RecoveryMode`]: applied,
//! or only recorded as an [`Action`] in a dry run.

use std::path::Path;

use wshard::episode::Episode;
use wshard::manifest::{ChunkRef, Manifest};

use super::plan::{Action, RecoveryMode};
use super::report::RecoveryReport;
use crate::chunk::publish::{commit_manifest, publish_chunk};
use crate::episode::layout::{EpisodeLayout, QUARANTINE_DIR};
use crate::error::StorageError;
use crate::fsio::Fs;
use crate::session::SessionSettings;

pub(super) fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Move `path` into `data_dir/quarantine/{episode}/`, never overwriting.
pub(super) fn quarantine(
    fs: &dyn Fs,
    data_dir: &Path,
    episode: &str,
    path: &Path,
    report: &mut RecoveryReport,
    mode: RecoveryMode,
) -> Result<(), StorageError> {
    let qdir = data_dir.join(QUARANTINE_DIR).join(episode);
    if mode.applies() {
        fs.create_dir_all(&qdir)
            .map_err(|e| StorageError::io("create quarantine directory", &qdir, e))?;
        // The quarantine directories themselves must survive a power cut.
        let qroot = data_dir.join(QUARANTINE_DIR);
        for dir in [&qroot, data_dir] {
            fs.sync_dir(dir)
                .map_err(|e| StorageError::io("fsync directory", dir, e))?;
        }
    }
    let mut target = qdir.join(file_name(path));
    let mut n = 1;
    while fs.exists(&target) {
        target = qdir.join(format!("{}.{n}", file_name(path)));
        n += 1;
    }
    if mode.applies() {
        fs.move_aside(path, &target)
            .map_err(|e| StorageError::io("move to quarantine", path, e))?;
        // The new name is made durable before anything (the next fsync of the episode
        // directory) can make the old one's removal durable: else a power cut in between
        // loses the file, which may hold data that exists nowhere else.
        fs.sync_dir(&qdir)
            .map_err(|e| StorageError::io("fsync directory", &qdir, e))?;
    }
    report.quarantined.push(target.display().to_string());
    report.actions.push(Action::Quarantine {
        from: path.to_path_buf(),
        to: target,
    });
    Ok(())
}

pub(super) fn remove(
    fs: &dyn Fs,
    path: &Path,
    report: &mut RecoveryReport,
    mode: RecoveryMode,
) -> Result<(), StorageError> {
    if mode.applies() {
        fs.remove_file(path)
            .map_err(|e| StorageError::io("remove", path, e))?;
    }
    report.removed.push(file_name(path));
    report.actions.push(Action::Remove {
        path: path.to_path_buf(),
    });
    Ok(())
}

/// Replace the manifest with `manifest` (in a dry run, only record that it would be).
pub(super) fn commit(
    fs: &dyn Fs,
    layout: &EpisodeLayout,
    manifest: &Manifest,
    report: &mut RecoveryReport,
    mode: RecoveryMode,
) -> Result<(), StorageError> {
    if mode.applies() {
        commit_manifest(fs, layout, manifest)?;
    }
    report.actions.push(Action::CommitManifest {
        path: layout.manifest(),
        status: manifest.status.clone().unwrap_or_default(),
    });
    Ok(())
}

/// Publish chunk `ep` durably; in a dry run, validate it as publishing would and describe
/// the chunk without writing it (its `sha256` is left empty).
pub(super) fn publish(
    fs: &dyn Fs,
    layout: &EpisodeLayout,
    ep: &mut Episode,
    settings: &SessionSettings,
    mode: RecoveryMode,
) -> Result<ChunkRef, StorageError> {
    if mode.applies() {
        return publish_chunk(
            fs,
            layout,
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
        uri: file_name(&layout.chunk(k)),
        sha256: String::new(),
        timestep_range: [start, (start + ep.length).saturating_sub(1)],
        length_t: ep.length,
        extra: serde_json::Map::new(),
    })
}
