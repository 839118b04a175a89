//! At start, after recovery and before the sockets open: every window a crash left
//! pending is built again from the files its record names (the rings' chunks it pinned
//! survive, recovery has finalized their streams). A window whose episode is already in
//! place (a cut between its rename and the record's removal) only loses its record. A
//! window whose record says it was given up (`failed`) is not built again: it is only
//! shown as failed.

use std::sync::Arc;

use super::pending;
use super::registry::FlightRegistry;
use super::window::{Window, WindowState};

/// Start the threads of the pending windows; returns how many, and the records that could
/// not be read (left in place, named).
pub fn resume_pending(registry: &Arc<FlightRegistry>) -> (usize, Vec<String>) {
    let fs = &*registry.shared.fs;
    let (records, bad) = pending::list(fs, &registry.shared.data_dir);
    let mut started = 0;
    for record in records {
        if fs.exists(&registry.shared.data_dir.join(&record.episode)) {
            if let Err(e) = pending::remove(fs, &registry.shared.data_dir, &record.episode) {
                tracing::warn!(episode = %record.episode, "could not remove a finished window's record: {e}");
            }
            continue;
        }
        // Given up before: never built again (what it held is where its failure says).
        if let Some(failure) = &record.failed {
            tracing::warn!(episode = %record.episode, "trigger window given up earlier, not built again: {failure}");
            registry.shared.note_failed(failure.clone());
            continue;
        }
        let n = record.streams.len();
        let window = Arc::new(Window {
            id: registry.next_window_id(),
            episode: record.episode.clone(),
            state: std::sync::Mutex::new(WindowState {
                record,
                rings: vec![None; n],
                // Its sources are finished: no trigger extends it.
                finalizing: true,
                done: false,
                failed: None,
                retrying: None,
                attempts: 0,
                cut_short: std::collections::BTreeMap::new(),
            }),
        });
        registry.spawn(window);
        started += 1;
    }
    (started, bad)
}
