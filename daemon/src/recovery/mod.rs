//! Recovery: finishing the episodes a stopped or crashed daemon left open.
//! It may call `session`, `episode_files`, `journal`, `chunk`, `episode`, `fsio` and `error`;
//! never `ingest`.
//!
//! Recovery on start (and offline, for `wshard recover`): every episode whose manifest is
//! not final gets its journal replayed past the last finalized chunk, the rest finalized,
//! and its manifest committed with `status: recovered` and a report. A directory of the
//! data directory that is not an episode (`dir_kind`) is left exactly as it is, and
//! reported.
//!
//! Every step is atomic and ordered like the live path (write and finalize the chunk,
//! commit the manifest, then delete the journal), so recovery can be killed at any point
//! and run again; the report of a run that was cut is carried forward by the next
//! (`report`). The plan's action for a chunk written from a journal keeps its name
//! `publish_chunk` (the report's JSON, which `wshard recover` prints).
//!
//! Nothing that may hold the only copy of data is deleted: a journal segment is removed
//! only when `fate::journal_fate` finds everything intact in it in a listed chunk, and a
//! listed chunk is verified before the journal that could rebuild it goes (`listed`).
//!
//! With [`RecoveryMode::DryRun`] every decision is the same but no file changes: each step
//! that would change one is only recorded in [`RecoveryReport::actions`].

mod changes;
mod chunks;
mod dir_kind;
pub(crate) mod fate;
mod files;
mod journals;
mod listed;
pub mod multi;
pub(crate) mod plan;
pub(crate) mod replay;
pub(crate) mod report;
mod settle;

use std::path::Path;
use std::sync::Arc;

pub use dir_kind::{dir_kind, DirKind, EpisodeKind, LeftAlone, NotAnEpisode};
pub use multi::MultiRecovery;
pub use plan::{Action, RecoveryMode};
pub use report::{Discarded, RecoveryReport};

use crate::error::StorageError;
use crate::session::SessionSettings;
use changes::file_name;
use files::recover_layout;
use wshard_storage::fsio::Fs;
use wshard_storage::layout::{
    validate_episode_id, EpisodeLayout, MAX_EPISODE_ID_BYTES, QUARANTINE_DIR,
};

/// Recover one episode directory. Returns `None` when it needed nothing.
///
/// # Errors
/// A storage step that failed; recovery can be run again.
pub fn recover_episode(
    fs: &Arc<dyn Fs>,
    data_dir: &Path,
    episode_id: &str,
    settings: &SessionSettings,
) -> Result<Option<RecoveryReport>, StorageError> {
    recover_episode_with(fs, data_dir, episode_id, settings, RecoveryMode::Apply)
}

/// [`recover_episode`], or with [`RecoveryMode::DryRun`] the same decisions without
/// changing any file (the report then says what would be done). The directory is taken
/// for an episode as it is: [`dir_kind`] tells whether it is one.
///
/// # Errors
/// A storage step that failed (in a dry run, reading or validating); recovery can be run
/// again.
pub fn recover_episode_with(
    fs: &Arc<dyn Fs>,
    data_dir: &Path,
    episode_id: &str,
    settings: &SessionSettings,
    mode: RecoveryMode,
) -> Result<Option<RecoveryReport>, StorageError> {
    let dir = data_dir.join(episode_id);
    multi::drop_annotations_tmp(&**fs, &dir, episode_id, mode)?;
    if multi::is_multi_stream(&**fs, &dir, episode_id) {
        return multi::recover_multi(fs, data_dir, episode_id, settings, mode)
            .map(|r| r.map(MultiRecovery::into_episode_report));
    }
    let layout = EpisodeLayout::new(data_dir, episode_id);
    let mut report = recover_layout(fs, data_dir, layout, episode_id, settings, mode)?;
    // Events sent beside a single-stream episode (version 2): a torn last line is cut.
    if let Some(r) = &mut report {
        multi::cut_events_tail(&**fs, &dir, episode_id, mode, r)?;
    }
    Ok(report)
}

/// Recover every episode under `data_dir` (the quarantine directory and hidden entries such
/// as `.upload` are skipped; directories that are not episodes are left alone).
/// Failures are reported per episode and do not stop the others.
#[must_use]
pub fn recover_all(
    fs: &Arc<dyn Fs>,
    data_dir: &Path,
    settings: &SessionSettings,
) -> Vec<Result<RecoveryReport, (String, StorageError)>> {
    recover_all_with(fs, data_dir, settings, RecoveryMode::Apply)
}

/// [`recover_all`] in the given mode.
#[must_use]
pub fn recover_all_with(
    fs: &Arc<dyn Fs>,
    data_dir: &Path,
    settings: &SessionSettings,
    mode: RecoveryMode,
) -> Vec<Result<RecoveryReport, (String, StorageError)>> {
    recover_data_dir_with(fs, data_dir, settings, mode).episodes
}

/// What recovering a data directory did.
#[derive(Debug, Default)]
pub struct DataDirRecovery {
    /// One result per episode that needed recovery (in the order of the directory).
    pub episodes: Vec<Result<RecoveryReport, (String, StorageError)>>,
    /// The directories that are not episodes, left exactly as they were (sorted by name).
    pub left_alone: Vec<LeftAlone>,
}

/// Recover every episode under `data_dir`, as the daemon does at start: the quarantine
/// directory and hidden entries (the daemon's own: `.upload`, the lock) are skipped, and a
/// directory that is not an episode ([`dir_kind`]) is left alone, logged and reported.
#[must_use]
pub fn recover_data_dir(
    fs: &Arc<dyn Fs>,
    data_dir: &Path,
    settings: &SessionSettings,
) -> DataDirRecovery {
    recover_data_dir_with(fs, data_dir, settings, RecoveryMode::Apply)
}

/// [`recover_data_dir`] in the given mode.
#[must_use]
pub fn recover_data_dir_with(
    fs: &Arc<dyn Fs>,
    data_dir: &Path,
    settings: &SessionSettings,
    mode: RecoveryMode,
) -> DataDirRecovery {
    let mut out = DataDirRecovery::default();
    let Ok(entries) = fs.read_dir(data_dir) else {
        return out;
    };
    for dir in entries {
        let name = file_name(&dir);
        // Hidden entries are the daemon's own (`.upload`: the upload queue and the
        // episodes being evicted), never episodes.
        if name == QUARANTINE_DIR || name.starts_with('.') {
            continue;
        }
        // Through `fs` (not `Path::is_dir`), so that recovery sees what the `Fs` holds; a
        // file, or a directory that cannot be listed, is skipped.
        let kind = match validate_episode_id(&name, MAX_EPISODE_ID_BYTES) {
            Err(e) if fs.read_dir(&dir).is_ok() => DirKind::NotAnEpisode(e.into()),
            Err(_) => continue,
            Ok(()) => match dir_kind(&**fs, &dir, &name) {
                Ok(k) => k,
                Err(_) => continue,
            },
        };
        if let DirKind::NotAnEpisode(reason) = kind {
            let left = LeftAlone {
                name,
                path: dir,
                reason,
            };
            tracing::warn!("{left}");
            out.left_alone.push(left);
            continue;
        }
        match recover_episode_with(fs, data_dir, &name, settings, mode) {
            Ok(Some(r)) => out.episodes.push(Ok(r)),
            Ok(None) => {}
            Err(e) => out.episodes.push(Err((name, e))),
        }
    }
    out.left_alone.sort_by(|a, b| a.name.cmp(&b.name));
    out
}
