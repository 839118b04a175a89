//! `wshard recover DIR [--apply]`: offline recovery of one episode directory or of a whole
//! data directory, with the daemon's own code ([`wshard_recorder::recovery`]). A dry run by default:
//! every decision is made and reported, nothing is changed. Refuses to run while a live
//! `wshardd` (or another `wshard recover --apply`) holds the data directory's lock. Which
//! kind of directory it was given is told by `target`.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::target::{classify, Target, TargetError};
use wshard_recorder::error::StorageError;
use wshard_recorder::recovery::{
    recover_data_dir_with, recover_episode_with, LeftAlone, RecoveryMode, RecoveryReport,
};
use wshard_recorder::runtime::lock::{self, LockError};
use wshard_recorder::session::SessionSettings;
use wshard_storage::fsio::{Fs, RealFs};

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
        StorageError::Io(_) => true,
        StorageError::Format { source, .. } => source.is_io(),
        StorageError::Internal(_) | StorageError::WindowSourceBlock { .. } => false,
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
    /// Directories of the data directory that are not episodes: left as they are.
    pub left_alone: Vec<LeftAlone>,
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
    /// Not a directory recovery can run on as given.
    #[error(transparent)]
    Target(#[from] TargetError),
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

pub(super) fn recover(dir: &Path, opts: RecoverOptions) -> Result<RecoverRun, RecoverError> {
    let (data_dir, episode) = match classify(dir)? {
        Target::Episode { data_dir, id } => (data_dir, Some(id)),
        Target::DataDir(d) => (d, None),
    };
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
    let (episodes, left_alone) = match &episode {
        Some(id) => (
            vec![
                match recover_episode_with(&fs, &data_dir, id, &settings, mode) {
                    Ok(Some(r)) => EpisodeOutcome::Recovered(r),
                    Ok(None) => EpisodeOutcome::NothingToDo(id.clone()),
                    Err(e) => EpisodeOutcome::Failed(id.clone(), e),
                },
            ],
            Vec::new(),
        ),
        None => {
            // recover_data_dir skips a directory it cannot list; say so instead.
            fs.read_dir(&data_dir)
                .map_err(RecoverError::io(&data_dir))?;
            let all = recover_data_dir_with(&fs, &data_dir, &settings, mode);
            let episodes = all
                .episodes
                .into_iter()
                .map(|r| match r {
                    Ok(r) => EpisodeOutcome::Recovered(r),
                    Err((id, e)) => EpisodeOutcome::Failed(id, e),
                })
                .collect();
            (episodes, all.left_alone)
        }
    };
    Ok(RecoverRun {
        target: dir.to_path_buf(),
        data_dir,
        single_episode: episode.is_some(),
        mode,
        episodes,
        left_alone,
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
    }
}
