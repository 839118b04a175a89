//! The fleet side of `wshard dataset`: [`list`] the datasets under a prefix with their
//! latest version, [`show`] a version, and [`pull`] a version into a directory through the
//! blob cache, every file hash-checked (a re-pull downloads nothing).

use std::path::{Component, Path, PathBuf};

use crate::cache::{copy_checked, BlobCache, Obtained};
use crate::episodes::hash_file;
use crate::error::PublishError;
use crate::layout::{DatasetId, DATASETS_DIR};
use crate::publish::Publisher;
use crate::remote::{read_version_cached, version_or_latest};
use crate::version::DatasetVersion;

/// One dataset of a listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatasetSummary {
    pub dataset: DatasetId,
    /// `None` when the dataset has no `latest.json` (nothing published yet).
    pub latest: Option<String>,
    pub episodes: usize,
    /// Payload bytes of the latest version's episode files.
    pub bytes: u64,
}

/// Every dataset under the publisher's prefix, sorted, with its latest version.
///
/// # Errors
/// Typed store errors; a latest pointer or dataset version that does not read.
pub fn list(p: &Publisher, cache: Option<&BlobCache>) -> Result<Vec<DatasetSummary>, PublishError> {
    let root = format!("{}{DATASETS_DIR}/", p.keys().prefix());
    let mut out = Vec::new();
    for ws in p.store().list_dirs(&root)? {
        for name in p.store().list_dirs(&format!("{root}{ws}/"))? {
            let Ok(dataset) = DatasetId::parse(&format!("{ws}/{name}")) else {
                continue; // not a dataset of ours
            };
            let latest = p.read_latest(&dataset)?;
            let (episodes, bytes) = match &latest {
                Some(v) => {
                    let m = read_version_cached(p, cache, &dataset, v)?;
                    (m.episodes.len(), m.total_bytes())
                }
                None => (0, 0),
            };
            out.push(DatasetSummary {
                dataset,
                latest,
                episodes,
                bytes,
            });
        }
    }
    Ok(out)
}

/// A version (the latest when `version` is `None`): its hash and content.
///
/// # Errors
/// As [`version_or_latest`].
pub fn show(
    p: &Publisher,
    cache: Option<&BlobCache>,
    dataset: &DatasetId,
    version: Option<&str>,
) -> Result<(String, DatasetVersion), PublishError> {
    version_or_latest(p, cache, dataset, version)
}

/// What a pull did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PullReport {
    pub version: String,
    pub episodes: usize,
    pub files: u64,
    pub bytes: u64,
    /// Blobs downloaded (not in the cache) and their bytes.
    pub downloaded_files: u64,
    pub downloaded_bytes: u64,
    /// Files written into the directory (the others were there with the right hash).
    pub written_files: u64,
}

/// `dir/<episode key>/<file>`, refusing anything but plain relative segments.
fn target(dir: &Path, episode: &str, file: &str) -> Result<PathBuf, PublishError> {
    let unsafe_path = || PublishError::UnsafePath {
        episode: episode.to_owned(),
        file: file.to_owned(),
    };
    let mut out = dir.to_path_buf();
    for part in [episode, file] {
        for seg in part.split('/') {
            let plain = matches!(
                Path::new(seg).components().next(),
                Some(Component::Normal(_))
            );
            if seg.is_empty() || seg == "." || !plain || Path::new(seg).components().count() != 1 {
                return Err(unsafe_path());
            }
            out.push(seg);
        }
    }
    Ok(out)
}

/// Materialize a version under `dir` (`dir/<episode key>/<file>`, the episode directories
/// as recorded): every blob through the cache (downloaded only when absent there, its
/// SHA-256 checked), then copied into place through a `.partial` file and a rename with its
/// SHA-256 checked again. A file already in place with the right hash is left alone.
///
/// # Errors
/// [`PublishError::UnsafePath`] for a file name that would leave `dir`;
/// [`PublishError::BlobMismatch`]; typed store and I/O errors.
pub fn pull(
    p: &Publisher,
    cache: &BlobCache,
    dataset: &DatasetId,
    version: Option<&str>,
    dir: &Path,
) -> Result<PullReport, PublishError> {
    let (hash, m) = version_or_latest(p, Some(cache), dataset, version)?;
    let mut r = PullReport {
        version: hash,
        episodes: m.episodes.len(),
        ..PullReport::default()
    };
    for (episode, entry) in &m.episodes {
        for (file, f) in &entry.files {
            let to = target(dir, episode, file)?;
            r.files += 1;
            r.bytes += f.size;
            if to.is_file() && hash_file(&to)? == (f.sha256.clone(), f.size) {
                continue;
            }
            let (blob, how) = cache.fetch(
                p.store(),
                &p.keys().blob(&f.sha256),
                &f.sha256,
                Some(f.size),
            )?;
            if let Obtained::Downloaded(n) = how {
                r.downloaded_files += 1;
                r.downloaded_bytes += n;
            }
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(|e| PublishError::io(parent, e))?;
            }
            copy_checked(&blob, &to, &f.sha256)?;
            r.written_files += 1;
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_targets_stay_inside_the_directory() {
        let dir = Path::new("/pull");
        assert_eq!(
            target(dir, "robot-7/ep", "streams/j/j_chunk_0000.wshard").ok(),
            Some(PathBuf::from(
                "/pull/robot-7/ep/streams/j/j_chunk_0000.wshard"
            ))
        );
        for (ep, file) in [
            ("ep", "../x"),
            ("ep", "/etc/passwd"),
            ("..", "x"),
            ("ep", ""),
            ("ep", "a/./b"),
        ] {
            assert!(
                matches!(target(dir, ep, file), Err(PublishError::UnsafePath { .. })),
                "{ep} {file} accepted"
            );
        }
    }
}
