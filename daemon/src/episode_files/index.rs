//! `{EP}_index.json`: the index of a multi-stream episode, committed exactly as the
//! manifest is (`{EP}_index.json.tmp`, fsync, rename, fsync the episode directory), so that
//! after a crash it is the old or the new document, never a mixture.

use std::path::{Path, PathBuf};

use wshard::episode_dir::index::{EpisodeIndex, IndexError};
use wshard::episode_dir::names::index_file_name;

use crate::error::StorageError;
use wshard_storage::fsio::{replace_atomically, Fs};

/// The index file of episode `episode_id` in `episode_dir`.
#[must_use]
pub fn index_path(episode_dir: &Path, episode_id: &str) -> PathBuf {
    episode_dir.join(index_file_name(episode_id))
}

/// Replace the index of `index.episode_id` in `episode_dir` atomically and durably.
///
/// # Errors
/// The failing step (create, write or fsync the temporary file, rename, fsync the
/// directory), naming the file.
pub fn commit_index(
    fs: &dyn Fs,
    episode_dir: &Path,
    index: &EpisodeIndex,
) -> Result<(), StorageError> {
    let path = index_path(episode_dir, &index.episode_id);
    replace_atomically(fs, &path, &index.to_json_bytes())
        .map_err(|(op, e)| StorageError::io(op, &path, e))
}

/// Why an index could not be read.
#[derive(Debug, thiserror::Error)]
pub enum IndexReadError {
    #[error("read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Bad(#[from] IndexError),
}

/// The index of `episode_id` in `episode_dir` through `fs`; `Ok(None)` when there is none.
///
/// # Errors
/// The file cannot be read, or is not an index (the error names the file and field).
pub fn read_index(
    fs: &dyn Fs,
    episode_dir: &Path,
    episode_id: &str,
) -> Result<Option<EpisodeIndex>, IndexReadError> {
    let path = index_path(episode_dir, episode_id);
    if !fs.exists(&path) {
        return Ok(None);
    }
    let bytes = fs.read(&path).map_err(|source| IndexReadError::Io {
        path: path.clone(),
        source,
    })?;
    Ok(Some(EpisodeIndex::from_json_bytes(&bytes, &path)?))
}

/// The index metadata key marking a trigger window of the flight recorder.
pub const ORIGIN_KEY: &str = "origin";
/// Its value for a window.
pub const ORIGIN_FLIGHT_WINDOW: &str = "flight_window";

/// Whether `index` is a trigger window of the flight recorder (`origin: flight_window`):
/// the quota and retention never evict one.
#[must_use]
pub fn is_flight_window(index: &EpisodeIndex) -> bool {
    index.metadata.get(ORIGIN_KEY).and_then(|v| v.as_str()) == Some(ORIGIN_FLIGHT_WINDOW)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::{json, Map};

    use super::*;

    #[test]
    fn flight_window_predicate_reads_the_index_origin() {
        let mut meta = Map::new();
        let plain = EpisodeIndex::new("ep", "", meta.clone(), 0);
        assert!(!is_flight_window(&plain));
        meta.insert(ORIGIN_KEY.into(), json!(ORIGIN_FLIGHT_WINDOW));
        assert!(is_flight_window(&EpisodeIndex::new("w", "", meta, 0)));
    }
}
