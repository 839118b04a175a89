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
    /// A trigger window still being built reads its chunks (a pending record in
    /// `data_dir/.flight/pending/` names it as a source; after a restart the window is
    /// rebuilt from them). A pending record that cannot be read protects every episode:
    /// what it needs is unknown.
    WindowSource,
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
            return Some(Protection::Window);
        }
        _ => {}
    }
    let (pending, unreadable) = crate::flight::pending::list(fs, data_dir);
    // A window given up no longer reads its sources.
    let source_of_pending = pending
        .iter()
        .filter(|r| r.failed.is_none())
        .flat_map(|r| &r.streams)
        .any(|s| s.source.split('/').next() == Some(id));
    (source_of_pending || !unreadable.is_empty()).then_some(Protection::WindowSource)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flight::pending::{persist, PendingRecord, WindowSource};
    use wshard_storage::fsio::RealFs;

    #[test]
    fn flight_pending_window_protects_its_source_episode_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path();
        let fs = RealFs;
        assert_eq!(protection(&fs, data, "src"), None);
        let record = PendingRecord {
            episode: "flight-1-0".into(),
            created_unix_ns: 1,
            triggers: Vec::new(),
            streams: vec![WindowSource {
                name: "cam".into(),
                source: "src/cam".into(),
                dir: "src/streams/cam".into(),
                files_id: "cam".into(),
                start_ns: 0,
                end_ns: 10,
                latched: false,
            }],
            follows: Vec::new(),
            failed: None,
        };
        persist(&fs, data, &record).expect("persist");
        assert_eq!(protection(&fs, data, "src"), Some(Protection::WindowSource));
        assert_eq!(protection(&fs, data, "other"), None);
        // An unreadable record protects everything.
        std::fs::write(data.join(".flight/pending/bad.json"), b"{").expect("write");
        assert_eq!(
            protection(&fs, data, "other"),
            Some(Protection::WindowSource)
        );
        wshard_storage::keep::mark(&fs, data, "k").expect("keep");
        assert_eq!(protection(&fs, data, "k"), Some(Protection::Keep));
    }
}
