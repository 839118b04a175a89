//! `{EP}_annotations.json`: the operator's annotations of an episode (recording or
//! finalized, single- or multi-stream). Adding one reads the file, appends the entry with
//! the next seq and replaces the file atomically (`.tmp`, fsync, rename, fsync the
//! directory), like the manifest: after a crash the file holds every annotation whose
//! commit returned, and is never a mixture. Chunks and manifests are never touched.
//!
//! The caller serializes the annotations of one episode (read, append, replace).

use std::path::{Path, PathBuf};

use wshard::episode_dir::annotations::{Annotation, Annotations, AnnotationsError};
use wshard::episode_dir::events::EventData;
use wshard::episode_dir::names::annotations_file_name;

use crate::error::StorageError;
use wshard_storage::fsio::{replace_atomically, Fs};

/// An annotation as the operator gives it (the file gives it its seq).
#[derive(Clone, Debug, PartialEq)]
pub struct NewAnnotation {
    pub t_ns: i64,
    pub label: String,
    pub data: EventData,
    /// Who added it (`uid 1000`).
    pub author: String,
    pub created_unix_ns: u64,
}

/// Why an annotation was not added.
#[derive(Debug, thiserror::Error)]
pub enum AnnotateError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The existing file is not an annotations document: it is left as it is.
    #[error("{0}; the file is left as it is")]
    Unreadable(#[from] AnnotationsError),
    #[error("read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The annotations of `episode_id` in `episode_dir` (none when the file does not exist).
///
/// # Errors
/// The file cannot be read or parsed.
pub fn read_annotations(
    fs: &dyn Fs,
    episode_dir: &Path,
    episode_id: &str,
) -> Result<Annotations, AnnotateError> {
    let path = episode_dir.join(annotations_file_name(episode_id));
    if !fs.exists(&path) {
        return Ok(Annotations::new(episode_id));
    }
    let bytes = fs.read(&path).map_err(|source| AnnotateError::Read {
        path: path.clone(),
        source,
    })?;
    Ok(Annotations::from_json_bytes(&bytes, &path)?)
}

/// Add `new` to the annotations of `episode_id` in `episode_dir`, durably; returns its seq
/// and the file.
///
/// # Errors
/// The existing file is unreadable (left alone), or a step of the commit failed.
pub fn annotate(
    fs: &dyn Fs,
    episode_dir: &Path,
    episode_id: &str,
    new: NewAnnotation,
) -> Result<(u64, PathBuf), AnnotateError> {
    let mut all = read_annotations(fs, episode_dir, episode_id)?;
    let seq = all.next_seq();
    all.annotations.push(Annotation {
        seq,
        t_ns: new.t_ns,
        label: new.label,
        data: new.data,
        author: new.author,
        created_unix_ns: new.created_unix_ns,
    });
    let path = episode_dir.join(annotations_file_name(episode_id));
    replace_atomically(fs, &path, &all.to_json_bytes())
        .map_err(|(op, e)| StorageError::io(op, &path, e))?;
    Ok((seq, path))
}
