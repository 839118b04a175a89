//! Whether an episode is protected from eviction, beyond the queue's own rule (only an
//! episode recorded `published` is ever evicted, so an open or not yet uploaded one never
//! is). The named hook for the marks other parts of the daemon keep: an operator's `keep`
//! (`data_dir/.keep/EP`) and a flight recorder's trigger windows plug in here, each as a
//! [`Protection`] variant, and the evictor skips what this returns `Some` for (the
//! uploader looks at the keep mark once more under the eviction lock, see `uploader.rs`).

use std::path::Path;

use wshard_storage::fsio::Fs;
use wshard_storage::keep;

/// Why an episode must keep its local copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Protection {
    /// Marked to keep by an operator.
    Keep,
    /// Holds a trigger window of the flight recorder.
    Window,
}

/// Why episode `id` of `data_dir` must never be evicted, or `None`: its keep mark
/// (`data_dir/.keep/EP`, `wshard keep`), or its index saying it holds a trigger window of
/// the flight recorder (`origin: flight_window`).
#[must_use]
pub fn protection(fs: &dyn Fs, data_dir: &Path, id: &str) -> Option<Protection> {
    if keep::is_kept(fs, data_dir, id) {
        return Some(Protection::Keep);
    }
    match crate::episode_files::read_index(fs, &data_dir.join(id), id) {
        Ok(Some(index)) if crate::episode_files::is_flight_window(&index) => {
            Some(Protection::Window)
        }
        _ => None,
    }
}
