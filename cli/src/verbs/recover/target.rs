//! Which directory `wshard recover DIR` was given: an episode directory (single- or
//! multi-stream, told by the files the daemon writes, as at the daemon's start:
//! [`wshard_recorder::recovery::dir_kind`]), or a data directory. A part of something else
//! is refused, naming what to recover instead: a stream folder or the `streams/` folder
//! of a multi-stream episode, the quarantine directory of a data directory or a folder in
//! it, and a copy of an episode under another name.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use wshard_recorder::recovery::{dir_kind, DirKind, EpisodeKind, NotAnEpisode};
use wshard_recorder::runtime::lock::LOCK_FILE;
use wshard_storage::fsio::RealFs;
use wshard_storage::layout::{
    validate_episode_id, EpisodeIdError, MAX_EPISODE_ID_BYTES, QUARANTINE_DIR, STREAMS_DIR,
};

/// What `wshard recover` runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Episode `id` of `data_dir`.
    Episode { data_dir: PathBuf, id: String },
    /// Every episode of a data directory.
    DataDir(PathBuf),
}

/// Why a directory cannot be recovered as given (exit status 2); each message names the
/// path, and what to run instead where there is something.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
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
    /// A stream folder, or the `streams/` folder, of a multi-stream episode.
    #[error(
        "{}: part of the multi-stream episode {}, which is recovered as a whole: wshard recover {}",
        path.display(), episode.display(), episode.display()
    )]
    PartOfEpisode { path: PathBuf, episode: PathBuf },
    /// The quarantine directory of a data directory, or a folder in it.
    #[error(
        "{}: in the {QUARANTINE_DIR} directory of data directory {}: what recovery set aside there is kept as it is, never recovered",
        path.display(), data_dir.display()
    )]
    Quarantine { path: PathBuf, data_dir: PathBuf },
    /// A copy of another episode under another name.
    #[error("{}: not an episode directory: {reason}", path.display())]
    Copy { path: PathBuf, reason: NotAnEpisode },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> TargetError + '_ {
    move |source| TargetError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn name_of(p: &Path) -> Option<String> {
    p.file_name().map(|n| n.to_string_lossy().into_owned())
}

/// The kind of directory `dir` by its files (named by its own name), `None` when it cannot
/// be listed or has no name.
fn kind_of(dir: &Path) -> Option<DirKind> {
    dir_kind(&RealFs, dir, &name_of(dir)?).ok()
}

fn is_multi_stream(dir: &Path) -> bool {
    kind_of(dir) == Some(DirKind::Episode(EpisodeKind::MultiStream))
}

/// The data directory whose quarantine `dir` is, or is in (`data_dir/quarantine` or a
/// folder under it): a directory named `quarantine` beside the data directory's lock file,
/// which every run that can quarantine anything has taken.
fn quarantine_of(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .filter(|a| name_of(a).as_deref() == Some(QUARANTINE_DIR))
        .filter_map(Path::parent)
        .find(|data_dir| data_dir.join(LOCK_FILE).exists())
        .map(Path::to_path_buf)
}

/// A part of a multi-stream episode: the episode directory, when `dir` is its `streams/`
/// folder or a stream folder in it.
fn episode_of_part(dir: &Path) -> Option<PathBuf> {
    let parent = dir.parent()?;
    if name_of(dir).as_deref() == Some(STREAMS_DIR) && is_multi_stream(parent) {
        return Some(parent.to_path_buf());
    }
    let episode = parent.parent()?;
    (name_of(parent).as_deref() == Some(STREAMS_DIR) && is_multi_stream(episode))
        .then(|| episode.to_path_buf())
}

/// Tell what `dir` is.
///
/// # Errors
/// [`TargetError`]: not a directory, unreadable, or a part of something else.
pub fn classify(dir: &Path) -> Result<Target, TargetError> {
    let md = fs::metadata(dir).map_err(io_error(dir))?;
    if !md.is_dir() {
        return Err(TargetError::NotADirectory {
            path: dir.to_path_buf(),
        });
    }
    // `.`, `..` or a path ending in them has no usable name or parent: resolve it first.
    let resolved = match (dir.file_name(), dir.parent()) {
        (Some(_), Some(_)) => dir.to_path_buf(),
        _ => fs::canonicalize(dir).map_err(io_error(dir))?,
    };
    let absolute = fs::canonicalize(dir).map_err(io_error(dir))?;
    if let Some(data_dir) = quarantine_of(&absolute) {
        return Err(TargetError::Quarantine {
            path: dir.to_path_buf(),
            data_dir,
        });
    }
    if let Some(episode) = episode_of_part(&absolute) {
        return Err(TargetError::PartOfEpisode {
            path: dir.to_path_buf(),
            episode,
        });
    }
    let id = name_of(&resolved).ok_or_else(|| TargetError::NoEpisodeId {
        path: dir.to_path_buf(),
    })?;
    match dir_kind(&RealFs, dir, &id).map_err(io_error(dir))? {
        DirKind::Episode(_) => {}
        DirKind::NotAnEpisode(reason @ NotAnEpisode::CopyOf { .. }) => {
            return Err(TargetError::Copy {
                path: dir.to_path_buf(),
                reason,
            })
        }
        DirKind::NotAnEpisode(_) => return Ok(Target::DataDir(dir.to_path_buf())),
    }
    validate_episode_id(&id, MAX_EPISODE_ID_BYTES).map_err(|source| {
        TargetError::NotAnEpisodeDirectory {
            path: dir.to_path_buf(),
            source,
        }
    })?;
    let data_dir = match resolved.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok(Target::Episode { data_dir, id })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"x").unwrap();
    }

    #[test]
    fn recovery_target_of_each_layout() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        touch(&data.join(LOCK_FILE));
        touch(&data.join("single/single_manifest.wshard"));
        touch(&data.join("multi/multi_index.json"));
        touch(&data.join("multi/streams/joints/joints_manifest.wshard"));
        touch(&data.join("early/streams/.keep"));
        touch(&data.join("ep.bak/ep_manifest.wshard"));
        touch(&data.join("quarantine/old/journal_0000.wal"));
        std::fs::create_dir_all(data.join("scratch")).unwrap();
        let episode = |id: &str| Target::Episode {
            data_dir: data.clone(),
            id: id.into(),
        };
        for id in ["single", "multi", "early"] {
            assert_eq!(classify(&data.join(id)).unwrap(), episode(id), "{id}");
        }
        assert_eq!(classify(&data).unwrap(), Target::DataDir(data.clone()));
        let scratch = data.join("scratch");
        assert_eq!(classify(&scratch).unwrap(), Target::DataDir(scratch));
        for part in ["multi/streams", "multi/streams/joints"] {
            let e = classify(&data.join(part)).unwrap_err();
            assert!(
                matches!(e, TargetError::PartOfEpisode { .. }),
                "{part}: {e}"
            );
            assert!(e.to_string().contains("wshard recover "), "{e}");
        }
        for q in ["quarantine", "quarantine/old"] {
            let e = classify(&data.join(q)).unwrap_err();
            assert!(matches!(e, TargetError::Quarantine { .. }), "{q}: {e}");
        }
        let e = classify(&data.join("ep.bak")).unwrap_err();
        assert!(e.to_string().contains("episode `ep`"), "{e}");
        let e = classify(&data.join("single/single_manifest.wshard")).unwrap_err();
        assert!(matches!(e, TargetError::NotADirectory { .. }), "{e}");
        // A directory named `quarantine` that is no data directory's is a data directory.
        let other = root.path().join("quarantine");
        std::fs::create_dir_all(&other).unwrap();
        assert_eq!(classify(&other).unwrap(), Target::DataDir(other.clone()));
    }
}
