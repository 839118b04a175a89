//! Whether an episode is protected from eviction, beyond the queue's own rule (only an
//! episode recorded `published` is ever evicted, so an open or not yet uploaded one never
//! is). The named hook for the marks other parts of the daemon keep: an operator's `keep`
//! (`data_dir/.keep/EP`) and a flight recorder's trigger windows plug in here, each as a
//! [`Protection`] variant, and the evictor skips what this returns `Some` for.

use std::path::Path;

/// Why an episode must keep its local copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Protection {
    /// Marked to keep by an operator.
    Keep,
    /// Holds a trigger window of the flight recorder.
    Window,
}

/// Why episode `id` of `data_dir` must never be evicted, or `None`. No mark is kept yet:
/// this is where the `keep` mark and the trigger windows are looked up.
#[must_use]
pub fn protection(_data_dir: &Path, _id: &str) -> Option<Protection> {
    None
}
