//! `wshard recover DIR [--apply]`: offline recovery of one episode directory or of a whole
//! data directory, with the daemon's own code ([`wshard_recorder::recovery`]). A dry run by default:
//! every decision is made and reported, nothing is changed. Refuses to run while a live
//! `wshardd` (or another `wshard recover --apply`) holds the data directory's lock.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use wshard::manifest::MANIFEST_FILE_SUFFIX;
use wshard_recorder::episode::layout::{
    validate_episode_id, EpisodeIdError, JOURNAL_PREFIX, JOURNAL_SUFFIX, MAX_EPISODE_ID_BYTES,
};
use wshard_recorder::error::StorageError;
use wshard_recorder::fsio::{Fs, RealFs};
use wshard_recorder::recovery::{
    recover_all_with, recover_episode_with, RecoveryMode, RecoveryReport,
};
use wshard_recorder::runtime::lock::{self, LockError};
use wshard_recorder::session::SessionSettings;

/// How `wshard recover` runs and prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoverOptions {
    /// Change the files (else a dry run).
    pub apply: bool,
    /// One JSON object instead of text.
    pub json: bool,
}

/// The outcome, ordered from best to worst.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum RecoverStatus {
    /// Nothing lost (including nothing to do): exit 0.
    #[default]
    Clean,
    /// Corrupt regions were (or would be) discarded, or files quarantined: exit 3.
    LostData,
    /// Recovery failed on input it cannot handle: exit 1.
    Failed,
    /// Usage or I/O error, or the data directory is in use: exit 2.
    Error,
}

impl RecoverStatus {
    /// The process exit code.
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            Self::Clean => 0,
            Self::LostData => 3,
            Self::Failed => 1,
            Self::Error => 2,
        }
    }
}

/// What recovering one episode gave.
#[derive(Debug)]
pub enum EpisodeOutcome {
    /// It needed nothing.
    NothingToDo(String),
    Recovered(RecoveryReport),
    Failed(String, StorageError),
}

impl EpisodeOutcome {
    /// This episode's share of the exit status.
    #[must_use]
    pub fn status(&self) -> RecoverStatus {
        match self {
            Self::NothingToDo(_) => RecoverStatus::Clean,
            Self::Recovered(r) if r.lost_data() => RecoverStatus::LostData,
            Self::Recovered(_) => RecoverStatus::Clean,
            Self::Failed(_, e) if is_io(e) => RecoverStatus::Error,
            Self::Failed(..) => RecoverStatus::Failed,
        }
    }
}

/// An I/O failure (exit 2), as opposed to input recovery cannot handle (exit 1).
fn is_io(e: &StorageError) -> bool {
    match e {
        StorageError::Io { .. } => true,
        StorageError::Format { source, .. } => source.is_io(),
        StorageError::Internal(_) => false,
    }
}

/// Everything one run did or would do.
#[derive(Debug)]
pub struct RecoverRun {
    pub target: PathBuf,
    pub data_dir: PathBuf,
    /// True when `target` was one episode directory.
    pub single_episode: bool,
    pub mode: RecoveryMode,
    pub episodes: Vec<EpisodeOutcome>,
}

impl RecoverRun {
    /// The worst outcome.
    #[must_use]
    pub fn status(&self) -> RecoverStatus {
        self.episodes
            .iter()
            .map(EpisodeOutcome::status)
            .max()
            .unwrap_or_default()
    }
}

/// Why `wshard recover` could not run at all (exit status 2); each message names the path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecoverError {
    /// The directory (or one of its entries) could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The path is not a directory.
    #[error("{}: not a directory", path.display())]
    NotADirectory { path: PathBuf },
    /// An episode directory whose name cannot be read.
    #[error("{}: cannot tell the episode id", path.display())]
    NoEpisodeId { path: PathBuf },
    /// Holds episode files but its name is not an episode id.
    #[error("{}: not an episode directory: {source}", path.display())]
    NotAnEpisodeDirectory {
        path: PathBuf,
        #[source]
        source: EpisodeIdError,
    },
    /// A live `wshardd` (or another `wshard recover --apply`) holds the data directory.
    #[error(
        "{0}: a live wshardd is using it (it recovers its episodes itself on start); stop it first"
    )]
    Locked(#[source] LockError),
    /// The lock file could not be opened or locked.
    #[error(transparent)]
    Lock(LockError),
}

impl RecoverError {
    fn io(path: &Path) -> impl FnOnce(io::Error) -> Self + '_ {
        move |source| Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

impl From<LockError> for RecoverError {
    fn from(e: LockError) -> Self {
        match e {
            LockError::Held { .. } => Self::Locked(e),
            LockError::Io { .. } => Self::Lock(e),
        }
    }
}

/// True when `name` is a file of an episode directory: its manifest, a journal segment, or
/// a chunk (finished or partial).
fn is_episode_file(name: &str) -> bool {
    name.ends_with(MANIFEST_FILE_SUFFIX)
        || (name.starts_with(JOURNAL_PREFIX) && name.ends_with(JOURNAL_SUFFIX))
        || (name.contains("_chunk_")
            && (name.ends_with(".wshard") || name.ends_with(".wshard.partial")))
}

/// `(data_dir, Some(episode_id))` for an episode directory, `(dir, None)` for a data
/// directory.
fn classify(dir: &Path) -> Result<(PathBuf, Option<String>), RecoverError> {
    let md = fs::metadata(dir).map_err(RecoverError::io(dir))?;
    if !md.is_dir() {
        return Err(RecoverError::NotADirectory {
            path: dir.to_path_buf(),
        });
    }
    let entries = fs::read_dir(dir).map_err(RecoverError::io(dir))?;
    let mut episode = false;
    for entry in entries {
        let entry = entry.map_err(RecoverError::io(dir))?;
        if is_episode_file(&entry.file_name().to_string_lossy()) {
            episode = true;
            break;
        }
    }
    if !episode {
        return Ok((dir.to_path_buf(), None));
    }
    // `.`, `..` or a path ending in them has no usable name or parent: resolve it first.
    let resolved = match (dir.file_name(), dir.parent()) {
        (Some(_), Some(_)) => dir.to_path_buf(),
        _ => fs::canonicalize(dir).map_err(RecoverError::io(dir))?,
    };
    let id = resolved
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| RecoverError::NoEpisodeId {
            path: dir.to_path_buf(),
        })?;
    validate_episode_id(&id, MAX_EPISODE_ID_BYTES).map_err(|source| {
        RecoverError::NotAnEpisodeDirectory {
            path: dir.to_path_buf(),
            source,
        }
    })?;
    let data_dir = match resolved.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((data_dir, Some(id)))
}

pub(super) fn recover(dir: &Path, opts: RecoverOptions) -> Result<RecoverRun, RecoverError> {
    let (data_dir, episode) = classify(dir)?;
    let mode = if opts.apply {
        RecoveryMode::Apply
    } else {
        RecoveryMode::DryRun
    };
    // Held until the run is over.
    let _lock = if opts.apply {
        Some(lock::acquire(&data_dir)?)
    } else {
        lock::ensure_free(&data_dir)?;
        None
    };
    let fs: Arc<dyn Fs> = Arc::new(RealFs);
    let settings = SessionSettings::default();
    let episodes = match &episode {
        Some(id) => vec![
            match recover_episode_with(&fs, &data_dir, id, &settings, mode) {
                Ok(Some(r)) => EpisodeOutcome::Recovered(r),
                Ok(None) => EpisodeOutcome::NothingToDo(id.clone()),
                Err(e) => EpisodeOutcome::Failed(id.clone(), e),
            },
        ],
        None => {
            // recover_all skips a directory it cannot list; say so instead.
            fs.read_dir(&data_dir)
                .map_err(RecoverError::io(&data_dir))?;
            recover_all_with(&fs, &data_dir, &settings, mode)
                .into_iter()
                .map(|r| match r {
                    Ok(r) => EpisodeOutcome::Recovered(r),
                    Err((id, e)) => EpisodeOutcome::Failed(id, e),
                })
                .collect()
        }
    };
    Ok(RecoverRun {
        target: dir.to_path_buf(),
        data_dir,
        single_episode: episode.is_some(),
        mode,
        episodes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recover_exit_codes_order_by_severity() {
        assert!(RecoverStatus::Clean < RecoverStatus::LostData);
        assert!(RecoverStatus::LostData < RecoverStatus::Failed);
        assert!(RecoverStatus::Failed < RecoverStatus::Error);
        assert_eq!(
            [
                RecoverStatus::Clean,
                RecoverStatus::LostData,
                RecoverStatus::Failed,
                RecoverStatus::Error
            ]
            .map(RecoverStatus::code),
            [0, 3, 1, 2]
        );
        assert!(is_episode_file("ep_manifest.wshard"));
        assert!(is_episode_file("journal_0003.wal"));
        assert!(is_episode_file("ep_chunk_0000.wshard.partial"));
        assert!(!is_episode_file("notes.txt"));
    }
}
