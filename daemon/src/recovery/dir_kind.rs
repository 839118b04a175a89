//! What a directory of the data directory is, told by the files the daemon writes into an
//! episode directory. Recovery (at start, and `wshard recover`) takes only episodes; any
//! other directory is left exactly as it is, and reported ([`LeftAlone`]).
//!
//! A directory `D` is an episode when its name is an episode id and it holds
//!
//! - a file named for it: `D_manifest.wshard`, `D_chunk_NNNN.wshard`,
//!   `D_chunk_NNNN.wshard.partial`, `D_index.json`, `D_events.jsonl`,
//!   `D_annotations.json`, or the temporary file of the manifest, the index or the
//!   annotations (`D_manifest.wshard.tmp`, ...);
//! - the `streams/` folder of a multi-stream episode; or
//! - a journal segment `journal_NNNN.wal`, unless a manifest or an index beside it names
//!   another episode (then it is a copy of that episode under another name).
//!
//! The daemon creates an episode's directory and commits its manifest (a multi-stream
//! episode: creates `streams/` and commits its index) before it acknowledges anything, so
//! an episode cut at its earliest moment holds at least the manifest's temporary file or
//! `streams/`; one left with only journals or a partial chunk (its manifest moved to
//! quarantine by a recovery that was then cut) is still an episode. An empty directory is
//! not: the daemon was cut between creating it and its first commit, and acknowledged
//! nothing.

use std::io;
use std::path::{Path, PathBuf};

use wshard::episode_dir::names::{
    annotations_file_name, events_file_name, index_file_name, INDEX_FILE_SUFFIX,
};
use wshard::manifest::{manifest_file_name, MANIFEST_FILE_SUFFIX};

use super::changes::file_name;
use wshard_storage::fsio::Fs;
use wshard_storage::layout::{EpisodeIdError, EpisodeLayout, STREAMS_DIR};

/// Suffix of the temporary file of an atomic replace.
const TMP_SUFFIX: &str = ".tmp";

/// The layout of an episode directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EpisodeKind {
    /// Manifest, chunks and journals at its top.
    SingleStream,
    /// An index and one folder per stream under `streams/`.
    MultiStream,
}

/// What a directory holds, by its files (its name is not checked here).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DirKind {
    /// An episode directory.
    Episode(EpisodeKind),
    /// Not an episode: why.
    NotAnEpisode(NotAnEpisode),
}

/// Why a directory is not an episode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotAnEpisode {
    /// Its name is no episode id.
    #[error("its name is not an episode id: {0}")]
    Name(#[from] EpisodeIdError),
    /// It holds another episode's manifest or index, and nothing of its own.
    #[error(
        "it holds {file} of episode `{other}`, not the files of an episode `{id}`: a copy under another name"
    )]
    CopyOf {
        id: String,
        other: String,
        file: String,
    },
    /// It holds nothing the daemon writes into an episode directory.
    #[error(
        "it holds none of the files wshardd writes into an episode `{id}` (manifest, chunks, journals, index, events, streams/)"
    )]
    NoEpisodeFiles { id: String },
}

/// A directory of the data directory recovery did not touch, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("directory {} is not an episode, left alone: {reason}", path.display())]
pub struct LeftAlone {
    /// Its name in the data directory.
    pub name: String,
    pub path: PathBuf,
    pub reason: NotAnEpisode,
}

/// True when `file` (a name) is one the daemon writes into the directory of episode `id`,
/// named for it (journals aside: they carry no episode name).
fn names_episode(file: &str, id: &str) -> bool {
    let replaced = [
        manifest_file_name(id),
        index_file_name(id),
        annotations_file_name(id),
    ];
    let base = file.strip_suffix(TMP_SUFFIX).unwrap_or(file);
    if replaced.iter().any(|f| *f == base) || file == events_file_name(id) {
        return true;
    }
    let layout = EpisodeLayout::new(Path::new(""), id);
    layout.partial_index(Path::new(file)).is_some()
        || file
            .strip_prefix(&format!("{id}_chunk_"))
            .and_then(|s| s.strip_suffix(".wshard"))
            .is_some_and(|k| k.parse::<u64>().is_ok())
}

/// The episode another episode's manifest or index names (`X` of `X_manifest.wshard`).
fn other_episode<'a>(file: &'a str, id: &str) -> Option<&'a str> {
    [MANIFEST_FILE_SUFFIX, INDEX_FILE_SUFFIX]
        .iter()
        .find_map(|s| file.strip_suffix(s))
        .filter(|other| *other != id)
}

/// What directory `dir`, named `name`, holds (see the module doc); `name` itself is not
/// checked as an episode id.
///
/// # Errors
/// Listing the directory failed.
pub fn dir_kind(fs: &dyn Fs, dir: &Path, name: &str) -> io::Result<DirKind> {
    let mut own = false;
    let mut streams = false;
    let mut journal = false;
    let mut other = None;
    for p in fs.read_dir(dir)? {
        let file = file_name(&p);
        if file == STREAMS_DIR && fs.read_dir(&p).is_ok() {
            streams = true;
        } else if names_episode(&file, name) {
            own = true;
        } else if EpisodeLayout::journal_index(&p).is_some() {
            journal = true;
        } else if let Some(o) = other_episode(&file, name) {
            other.get_or_insert((o.to_owned(), file.clone()));
        }
    }
    let multi = streams || {
        let index = dir.join(index_file_name(name));
        fs.exists(&index) || fs.exists(&dir.join(format!("{}{TMP_SUFFIX}", file_name(&index))))
    };
    Ok(match other {
        _ if multi => DirKind::Episode(EpisodeKind::MultiStream),
        _ if own => DirKind::Episode(EpisodeKind::SingleStream),
        None if journal => DirKind::Episode(EpisodeKind::SingleStream),
        Some((other, file)) => DirKind::NotAnEpisode(NotAnEpisode::CopyOf {
            id: name.to_owned(),
            other,
            file,
        }),
        None => DirKind::NotAnEpisode(NotAnEpisode::NoEpisodeFiles {
            id: name.to_owned(),
        }),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use wshard_storage::fsio::RealFs;

    fn kind_of(files: &[&str], dirs: &[&str]) -> DirKind {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("ep");
        std::fs::create_dir(&dir).unwrap();
        for f in files {
            std::fs::write(dir.join(f), b"x").unwrap();
        }
        for d in dirs {
            std::fs::create_dir(dir.join(d)).unwrap();
        }
        dir_kind(&RealFs, &dir, "ep").unwrap()
    }

    #[test]
    fn recovery_dir_kind_by_the_files_the_daemon_writes() {
        let single = DirKind::Episode(EpisodeKind::SingleStream);
        let multi = DirKind::Episode(EpisodeKind::MultiStream);
        for files in [
            &["ep_manifest.wshard"][..],
            &["ep_manifest.wshard.tmp"],
            &["ep_chunk_0003.wshard"],
            &["ep_chunk_0003.wshard.partial"],
            &["journal_0000.wal"],
            &["ep_events.jsonl"],
            &["ep_annotations.json"],
            &["ep_annotations.json.tmp"],
            // Its own files win over a stray copy of another's.
            &["ep_manifest.wshard", "other_manifest.wshard"],
        ] {
            assert_eq!(kind_of(files, &[]), single, "{files:?}");
        }
        assert_eq!(kind_of(&["ep_index.json"], &[]), multi);
        assert_eq!(kind_of(&["ep_index.json.tmp"], &[]), multi);
        assert_eq!(kind_of(&[], &["streams"]), multi);
        let none = |k: DirKind| {
            matches!(
                k,
                DirKind::NotAnEpisode(NotAnEpisode::NoEpisodeFiles { .. })
            )
        };
        for files in [
            &[][..],
            &["notes.txt"],
            &["ep_chunk_x.wshard"],
            &["ep_manifest.wshard.bak"],
            &["journal_x.wal"],
            &["streams"],
        ] {
            assert!(none(kind_of(files, &[])), "{files:?}");
        }
        // A copy of episode `a` under the name `ep`, with or without its journals.
        for files in [
            &["a_manifest.wshard", "a_chunk_0000.wshard"][..],
            &["a_manifest.wshard", "journal_0001.wal"],
            &["a_index.json"],
        ] {
            let k = kind_of(files, &[]);
            let DirKind::NotAnEpisode(why @ NotAnEpisode::CopyOf { .. }) = k else {
                panic!("{files:?}: {k:?}");
            };
            assert!(why.to_string().contains("episode `a`"), "{why}");
        }
    }
}
