//! The durable record of a trigger window not yet persisted as an episode:
//! `data_dir/.flight/pending/{W}.json`, replaced atomically (temporary file, fsync, rename,
//! directory fsync) before the trigger is answered, and again when a later trigger extends
//! the window. It names the window episode, its triggers and, per stream, the source
//! directory and the `t_ns` bounds; after a crash, start-up builds the window from the
//! source chunks it names ([`super::resume`]). Removed once the episode is in place.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::failure::WindowFailure;
use crate::error::StorageError;
use wshard_storage::fsio::{replace_atomically, Fs};

/// The daemon's flight directory under `data_dir` (hidden: recovery skips it).
pub const FLIGHT_DIR: &str = ".flight";
/// Pending window records, under [`FLIGHT_DIR`].
pub const PENDING_DIR: &str = "pending";
/// Window episodes being built, under [`FLIGHT_DIR`]; each is renamed into `data_dir`
/// once complete.
pub const BUILD_DIR: &str = "build";
const RECORD_SUFFIX: &str = ".json";

/// One trigger of a window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerNote {
    pub reason: String,
    /// The trigger's `t` (`at_ns`, or the latest `t_ns` of the first stream).
    pub t_ns: i64,
    pub pre_ns: i64,
    pub post_ns: i64,
    pub received_unix_ns: u64,
}

/// One stream of a window: where its chunks are and which `t_ns` it keeps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowSource {
    /// Its name in the window episode.
    pub name: String,
    /// `EPISODE` or `EPISODE/STREAM`: the flight stream recorded.
    pub source: String,
    /// The directory of its manifest and chunks, relative to `data_dir`.
    pub dir: PathBuf,
    /// The stem of its file names.
    pub files_id: String,
    pub start_ns: i64,
    pub end_ns: i64,
    pub latched: bool,
}

/// A pending window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingRecord {
    pub episode: String,
    pub created_unix_ns: u64,
    pub triggers: Vec<TriggerNote>,
    pub streams: Vec<WindowSource>,
    /// Earlier windows this one continues (a stream's start was moved past their end).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub follows: Vec<String>,
    /// The window was given up after its retries (its pins released): never built again,
    /// at a restart neither; what it held is kept as [`WindowFailure::kept`] says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<WindowFailure>,
}

/// `data_dir/.flight/pending`.
#[must_use]
pub fn pending_dir(data_dir: &Path) -> PathBuf {
    data_dir.join(FLIGHT_DIR).join(PENDING_DIR)
}

/// `data_dir/.flight/build`.
#[must_use]
pub fn build_dir(data_dir: &Path) -> PathBuf {
    data_dir.join(FLIGHT_DIR).join(BUILD_DIR)
}

fn record_path(data_dir: &Path, episode: &str) -> PathBuf {
    pending_dir(data_dir).join(format!("{episode}{RECORD_SUFFIX}"))
}

/// Create `dir` (and its parents up to `data_dir`) durably when missing.
pub(crate) fn ensure_dir(fs: &dyn Fs, data_dir: &Path, dir: &Path) -> Result<(), StorageError> {
    if fs.exists(dir) {
        return Ok(());
    }
    fs.create_dir_all(dir)
        .map_err(|e| StorageError::io("create directory", dir, e))?;
    let mut d = dir.to_path_buf();
    while d != data_dir {
        let Some(parent) = d.parent().map(Path::to_path_buf) else {
            break;
        };
        fs.sync_dir(&parent)
            .map_err(|e| StorageError::io("fsync directory", &parent, e))?;
        d = parent;
    }
    Ok(())
}

/// Persist `record` (new or extended) durably.
///
/// # Errors
/// The failing step, naming the file.
pub fn persist(fs: &dyn Fs, data_dir: &Path, record: &PendingRecord) -> Result<(), StorageError> {
    ensure_dir(fs, data_dir, &pending_dir(data_dir))?;
    let path = record_path(data_dir, &record.episode);
    let bytes = serde_json::to_vec_pretty(record)
        .map_err(|e| StorageError::io("encode", &path, std::io::Error::other(e)))?;
    replace_atomically(fs, &path, &bytes).map_err(|(op, e)| StorageError::io(op, &path, e))
}

/// The window of `episode` is in place: forget it, durably (a record already gone is
/// only synced: a retry after a failed directory fsync).
///
/// # Errors
/// The failing step, naming the file.
pub fn remove(fs: &dyn Fs, data_dir: &Path, episode: &str) -> Result<(), StorageError> {
    let path = record_path(data_dir, episode);
    if fs.exists(&path) {
        fs.remove_file(&path)
            .map_err(|e| StorageError::io("remove", &path, e))?;
    }
    let dir = pending_dir(data_dir);
    fs.sync_dir(&dir)
        .map_err(|e| StorageError::io("fsync directory", &dir, e))
}

/// Every pending record, oldest name first; a record that cannot be read is named in the
/// error list and left in place.
#[must_use]
pub fn list(fs: &dyn Fs, data_dir: &Path) -> (Vec<PendingRecord>, Vec<String>) {
    let dir = pending_dir(data_dir);
    let mut out = Vec::new();
    let mut bad = Vec::new();
    let Ok(mut entries) = fs.read_dir(&dir) else {
        return (out, bad);
    };
    entries.sort();
    for p in entries {
        let is_record = p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(RECORD_SUFFIX));
        if !is_record {
            continue;
        }
        match fs
            .read(&p)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice::<PendingRecord>(&b).map_err(|e| e.to_string()))
        {
            Ok(r) => out.push(r),
            Err(e) => bad.push(format!("{}: {e}", p.display())),
        }
    }
    (out, bad)
}
