//! Where an episode's files live: one directory per episode under `data_dir`, with file
//! names compatible with the reference chunk/manifest naming.
//!
//! ```text
//! data_dir/
//!   quarantine/                         files moved aside by recovery, never deleted by us
//!   {episode_id}/
//!     {episode_id}_manifest.wshard      role 0x04, replaced atomically
//!     {episode_id}_chunk_0000.wshard    finalized chunks
//!     {episode_id}_chunk_0001.wshard.partial   a chunk being written
//!     journal_0001.wal                  journal of the open chunk (durability `ack`)
//!   {episode_id}/streams/{stream}/      a stream of a multi-stream episode: the same files
//!                                       as an episode, named after the stream
//! ```
//!
//! A stream is recorded by exactly the machinery of an episode: its layout is an
//! [`EpisodeLayout`] whose id is the stream name and whose directory is the stream's folder
//! ([`EpisodeLayout::stream`]).

use std::path::{Path, PathBuf};

use wshard::episode_dir::name_rule::{check_name, NameRuleError};
use wshard::manifest::{chunk_file_name, manifest_file_name};

/// Longest episode id any configuration accepts (`limits.max_episode_id_bytes` is at most
/// this). Recovery and the CLI take ids up to it: an episode recorded under a larger limit
/// than the one configured now is still an episode.
pub const MAX_EPISODE_ID_BYTES: usize = wshard_ingest_proto::MAX_EPISODE_ID_BYTES;
/// Suffix of a chunk being written.
pub const PARTIAL_SUFFIX: &str = ".partial";
/// Prefix and suffix of journal segment files.
pub const JOURNAL_PREFIX: &str = "journal_";
pub const JOURNAL_SUFFIX: &str = ".wal";
/// Name of the directory recovery moves unusable files into.
pub const QUARANTINE_DIR: &str = "quarantine";
/// The folder of a multi-stream episode holding one folder per stream.
pub const STREAMS_DIR: &str = wshard::episode_dir::names::STREAMS_DIR;

/// What is wrong with an episode id; every message names the id.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EpisodeIdError {
    /// Empty or longer than the limit.
    #[error("episode id {id:?} must be 1..={max} bytes, is {len}")]
    Length { id: String, max: usize, len: usize },
    /// Starts with `.` (hidden files, `.` and `..`).
    #[error("episode id {id:?} must not start with `.`")]
    LeadingDot { id: String },
    /// Holds a character outside `[A-Za-z0-9._-]`.
    #[error("episode id {id:?} contains {found:?}: only A-Z a-z 0-9 . _ - are allowed")]
    BadChar { id: String, found: char },
    /// A name the daemon uses itself ([`QUARANTINE_DIR`]).
    #[error("episode id {id:?} is reserved")]
    Reserved { id: String },
}

/// Check an episode id: 1..=`max` bytes of `[A-Za-z0-9._-]`, not starting with `.` (the
/// format library's name rule, [`check_name`]), and not a name the daemon uses itself.
///
/// # Errors
/// An [`EpisodeIdError`] naming the id and what is wrong with it.
pub fn validate_episode_id(id: &str, max: usize) -> Result<(), EpisodeIdError> {
    let id_owned = || id.to_owned();
    check_name(id, max).map_err(|e| match e {
        NameRuleError::Length { len, max } => EpisodeIdError::Length {
            id: id_owned(),
            max,
            len,
        },
        NameRuleError::LeadingDot => EpisodeIdError::LeadingDot { id: id_owned() },
        NameRuleError::BadChar(found) => EpisodeIdError::BadChar {
            id: id_owned(),
            found,
        },
    })?;
    if id == QUARANTINE_DIR {
        return Err(EpisodeIdError::Reserved { id: id_owned() });
    }
    Ok(())
}

/// The paths of one episode, or of one stream of a multi-stream episode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpisodeLayout {
    /// The episode id, or the stream name: the stem of every file name.
    pub episode_id: String,
    pub dir: PathBuf,
    /// Where under `data_dir/quarantine/` recovery moves this directory's files:
    /// `{episode_id}`, or `{episode}/streams/{stream}`.
    pub quarantine_rel: PathBuf,
}

impl EpisodeLayout {
    /// The layout of `episode_id` under `data_dir` (the id must be valid).
    #[must_use]
    pub fn new(data_dir: &Path, episode_id: &str) -> Self {
        Self {
            episode_id: episode_id.to_owned(),
            dir: data_dir.join(episode_id),
            quarantine_rel: PathBuf::from(episode_id),
        }
    }

    /// The layout of stream `stream` of the multi-stream episode `episode` under
    /// `data_dir`: `data_dir/{episode}/streams/{stream}/`, files named after the stream
    /// (both names must be valid).
    #[must_use]
    pub fn stream(data_dir: &Path, episode: &str, stream: &str) -> Self {
        let rel = Path::new(episode).join(STREAMS_DIR).join(stream);
        Self {
            episode_id: stream.to_owned(),
            dir: data_dir.join(&rel),
            quarantine_rel: rel,
        }
    }

    /// The file-name stem: the episode id, or the stream name.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.episode_id
    }

    /// The quarantine directory of this layout's files under `data_dir`.
    #[must_use]
    pub fn quarantine_dir(&self, data_dir: &Path) -> PathBuf {
        data_dir.join(QUARANTINE_DIR).join(&self.quarantine_rel)
    }

    /// Finalized chunk `k`.
    #[must_use]
    pub fn chunk(&self, k: u64) -> PathBuf {
        self.dir.join(chunk_file_name(&self.episode_id, k))
    }

    /// Chunk `k` while it is being written.
    #[must_use]
    pub fn partial(&self, k: u64) -> PathBuf {
        self.dir.join(format!(
            "{}{PARTIAL_SUFFIX}",
            chunk_file_name(&self.episode_id, k)
        ))
    }

    /// The manifest.
    #[must_use]
    pub fn manifest(&self) -> PathBuf {
        self.dir.join(manifest_file_name(&self.episode_id))
    }

    /// Journal segment of chunk `k`.
    #[must_use]
    pub fn journal(&self, k: u64) -> PathBuf {
        self.dir
            .join(format!("{JOURNAL_PREFIX}{k:04}{JOURNAL_SUFFIX}"))
    }

    /// Chunk index of a journal segment file name, if it is one.
    #[must_use]
    pub fn journal_index(path: &Path) -> Option<u64> {
        let name = path.file_name()?.to_str()?;
        name.strip_prefix(JOURNAL_PREFIX)?
            .strip_suffix(JOURNAL_SUFFIX)?
            .parse()
            .ok()
    }

    /// Chunk index of a `.partial` file of this episode, if it is one.
    #[must_use]
    pub fn partial_index(&self, path: &Path) -> Option<u64> {
        let name = path.file_name()?.to_str()?;
        let stem = name.strip_suffix(PARTIAL_SUFFIX)?;
        stem.strip_prefix(&format!("{}_chunk_", self.episode_id))?
            .strip_suffix(".wshard")?
            .parse()
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_names_match_the_reference() {
        let l = EpisodeLayout::new(Path::new("/d"), "ep_1");
        assert_eq!(l.chunk(3), Path::new("/d/ep_1/ep_1_chunk_0003.wshard"));
        assert_eq!(l.manifest(), Path::new("/d/ep_1/ep_1_manifest.wshard"));
        assert_eq!(
            l.partial(12),
            Path::new("/d/ep_1/ep_1_chunk_0012.wshard.partial")
        );
        assert_eq!(EpisodeLayout::journal_index(&l.journal(7)), Some(7));
        assert_eq!(l.partial_index(&l.partial(12)), Some(12));
        assert_eq!(l.partial_index(&l.chunk(12)), None);
    }

    /// A stream's files are an episode's, named after the stream, in its folder.
    #[test]
    fn layout_of_a_stream_is_an_episode_layout_in_its_folder() {
        let l = EpisodeLayout::stream(Path::new("/d"), "ep", "joints");
        assert_eq!(l.dir, Path::new("/d/ep/streams/joints"));
        assert_eq!(
            l.chunk(0),
            Path::new("/d/ep/streams/joints/joints_chunk_0000.wshard")
        );
        assert_eq!(
            l.manifest(),
            Path::new("/d/ep/streams/joints/joints_manifest.wshard")
        );
        assert_eq!(
            l.quarantine_dir(Path::new("/d")),
            Path::new("/d/quarantine/ep/streams/joints")
        );
        let v1 = EpisodeLayout::new(Path::new("/d"), "ep");
        assert_eq!(
            v1.quarantine_dir(Path::new("/d")),
            Path::new("/d/quarantine/ep")
        );
    }

    #[test]
    fn layout_episode_ids_are_validated() {
        for bad in [
            "",
            ".hidden",
            "../../etc/passwd",
            "a/b",
            "a\0b",
            "quarantine",
            "é",
            &"x".repeat(129),
        ] {
            assert!(validate_episode_id(bad, 128).is_err(), "{bad:?}");
        }
        for good in ["ep_0001", "2026-11-22T08.37.15Z", "a", &"x".repeat(128)] {
            assert!(validate_episode_id(good, 128).is_ok(), "{good:?}");
        }
    }

    /// The config's ceiling of `limits.max_episode_id_bytes` is the protocol's, and the
    /// longest id still makes file names under 255 bytes.
    #[test]
    fn config_max_episode_id_bytes_ceiling_is_the_protocol_s() {
        assert_eq!(
            usize::try_from(wshardd_config::MAX_EPISODE_ID_BYTES).ok(),
            Some(MAX_EPISODE_ID_BYTES)
        );
        let id = "x".repeat(MAX_EPISODE_ID_BYTES);
        let l = EpisodeLayout::new(Path::new("/d"), &id);
        for p in [l.partial(9999), l.manifest()] {
            let name = p.file_name().map_or(0, std::ffi::OsStr::len);
            assert!(name < 255, "{}", p.display());
        }
        assert!(validate_episode_id(&id, MAX_EPISODE_ID_BYTES).is_ok());
    }
}
