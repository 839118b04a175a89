//! Which local files make up the finished episodes of a data directory, with their SHA-256
//! and size ([`select`]).
//!
//! The files of an episode are the ones its layout defines, never whatever else lies in
//! its directory (journals, `.partial` files, quarantined leftovers):
//! - single-stream: `EP_manifest.wshard`, every chunk it lists, `EP_events.jsonl` and
//!   `EP_annotations.json` when present;
//! - multi-stream: `EP_index.json`, its events file and `EP_annotations.json` when
//!   present, and per stream `streams/S/S_manifest.wshard` and every chunk it lists.
//!
//! Every chunk is hashed and compared with its manifest's SHA-256 before anything is sent.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wshard::episode_dir::index::EpisodeStatus;
use wshard::episode_dir::names::{annotations_file_name, events_file_name, index_file_name};
use wshard::episode_dir::{EpisodeDir, Layout};
use wshard::manifest::Manifest;

use crate::error::PublishError;
use crate::hash::hex;

/// Read buffer for hashing.
const HASH_BUFFER: usize = 1 << 20;

/// One file of an episode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalFile {
    /// Relative to the episode directory, `/`-separated.
    pub rel: String,
    pub path: PathBuf,
    pub sha256: String,
    pub size: u64,
}

/// A finished episode and its files (sorted by `rel`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalEpisode {
    pub id: String,
    pub status: EpisodeStatus,
    pub files: Vec<LocalFile>,
}

/// What [`select`] found: the episodes to publish and, when the whole data directory was
/// scanned, the directories left out and why.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    pub episodes: Vec<LocalEpisode>,
    /// `(directory name, reason)`.
    pub left_out: Vec<(String, String)>,
}

/// True for the statuses that are published.
#[must_use]
pub fn is_publishable(status: EpisodeStatus) -> bool {
    matches!(
        status,
        EpisodeStatus::Complete | EpisodeStatus::Interrupted | EpisodeStatus::Recovered
    )
}

/// SHA-256 (hex) and size of a file, streamed.
///
/// # Errors
/// [`PublishError::Io`] with the path.
pub fn hash_file(path: &Path) -> Result<(String, u64), PublishError> {
    let mut f = File::open(path).map_err(|e| PublishError::io(path, e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0_u8; HASH_BUFFER];
    let mut size = 0_u64;
    loop {
        let n = f.read(&mut buf).map_err(|e| PublishError::io(path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        size += n as u64;
    }
    Ok((hex(&h.finalize()), size))
}

/// The episodes of `data_dir` to publish: the named ones (each must exist and be finished,
/// else an error naming it), or with `requested` empty every finished episode (the others
/// are listed in [`Selection::left_out`]).
///
/// # Errors
/// [`PublishError::EpisodeNotFound`], [`PublishError::EpisodeNotFinished`],
/// [`PublishError::EpisodeRead`], [`PublishError::LocalChunkMismatch`], I/O.
pub fn select(data_dir: &Path, requested: &[String]) -> Result<Selection, PublishError> {
    let mut sel = Selection::default();
    if requested.is_empty() {
        let entries = std::fs::read_dir(data_dir).map_err(|e| PublishError::io(data_dir, e))?;
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| PublishError::io(data_dir, e))?;
            let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
            if let (true, Ok(name)) = (is_dir, entry.file_name().into_string()) {
                if !name.starts_with('.') {
                    names.push(name);
                }
            }
        }
        names.sort();
        for name in names {
            let dir = EpisodeDir::open(data_dir.join(&name));
            match dir {
                Err(e) => sel.left_out.push((name, format!("not an episode: {e}"))),
                Ok(dir) => match dir.status() {
                    Some(s) if is_publishable(s) => sel.episodes.push(collect(&dir, s)?),
                    Some(s) => sel.left_out.push((name, format!("status {s}"))),
                    None => sel.left_out.push((name, "no status".into())),
                },
            }
        }
        return Ok(sel);
    }
    for (n, id) in requested.iter().enumerate() {
        if requested[..n].contains(id) {
            continue; // named twice: one episode, one set of catalog rows
        }
        let path = data_dir.join(id);
        let plain = !id.is_empty() && !id.contains('/') && !id.starts_with('.');
        if !plain || !path.is_dir() {
            return Err(PublishError::EpisodeNotFound {
                episode: id.clone(),
                data_dir: data_dir.to_path_buf(),
            });
        }
        let dir = EpisodeDir::open(&path).map_err(|source| PublishError::EpisodeRead {
            episode: id.clone(),
            source,
        })?;
        let status = dir
            .status()
            .ok_or_else(|| PublishError::EpisodeStatusUnknown {
                episode: id.clone(),
            })?;
        if !is_publishable(status) {
            return Err(PublishError::EpisodeNotFinished {
                episode: id.clone(),
                status,
            });
        }
        sel.episodes.push(collect(&dir, status)?);
    }
    Ok(sel)
}

fn rel_of(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

fn collect(dir: &EpisodeDir, status: EpisodeStatus) -> Result<LocalEpisode, PublishError> {
    let root = dir.path();
    // Keyed by the directory's name: unique in a data directory (the id inside may differ
    // in a renamed directory).
    let id = root.file_name().map_or_else(
        || dir.episode_id().to_owned(),
        |n| n.to_string_lossy().into_owned(),
    );
    let file_id = dir.episode_id().to_owned();
    let mut paths: Vec<PathBuf> = Vec::new();
    let mut expected: Vec<(PathBuf, String)> = Vec::new();
    let optional = match dir.layout() {
        Layout::SingleStream => vec![
            root.join(events_file_name(&file_id)),
            root.join(annotations_file_name(&file_id)),
        ],
        Layout::MultiStream => {
            paths.push(root.join(index_file_name(&file_id)));
            let events = dir
                .index()
                .map(|i| root.join(&i.events_file))
                .unwrap_or_else(|| root.join(events_file_name(&file_id)));
            vec![events, root.join(annotations_file_name(&file_id))]
        }
    };
    for p in optional {
        if p.is_file() {
            paths.push(p);
        }
    }
    for stream in dir.streams() {
        if stream.manifest_missing {
            continue;
        }
        let manifest = Manifest::read_file(&stream.manifest_path).map_err(|source| {
            PublishError::ManifestRead {
                episode: id.clone(),
                source,
            }
        })?;
        let stream_dir = stream.manifest_path.parent().unwrap_or(root);
        paths.push(stream.manifest_path.clone());
        for chunk in &manifest.chunks {
            let p = stream_dir.join(&chunk.uri);
            expected.push((p.clone(), chunk.sha256.clone()));
            paths.push(p);
        }
    }
    let mut files = Vec::with_capacity(paths.len());
    for path in paths {
        let (sha256, size) = hash_file(&path)?;
        if let Some((_, want)) = expected.iter().find(|(p, _)| *p == path) {
            if *want != sha256 {
                return Err(PublishError::LocalChunkMismatch {
                    episode: id,
                    file: path,
                    expected: want.clone(),
                    actual: sha256,
                });
            }
        }
        files.push(LocalFile {
            rel: rel_of(root, &path),
            path,
            sha256,
            size,
        });
    }
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    files.dedup_by(|a, b| a.rel == b.rel);
    Ok(LocalEpisode { id, status, files })
}
