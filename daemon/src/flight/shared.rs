//! What the window threads need: the file system, the data directory, the chunk settings,
//! the shutdown flag and the counters.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use crate::session::SessionSettings;
use wshard_storage::fsio::Fs;

/// Counts for status and metrics.
#[derive(Debug, Default)]
pub struct FlightCounters {
    pub triggers: AtomicU64,
    pub merged: AtomicU64,
    pub persisted: AtomicU64,
    pub failed: AtomicU64,
    /// `EVENT`s labelled `trigger` recorded whose trigger was refused.
    pub event_refused: AtomicU64,
}

/// Shared by the flight registry and its window threads.
pub struct FlightShared {
    pub(crate) fs: Arc<dyn Fs>,
    pub(crate) data_dir: PathBuf,
    /// Chunk writing settings for window episodes.
    pub(crate) settings: SessionSettings,
    pub(crate) shutdown: Arc<AtomicBool>,
    pub counters: FlightCounters,
}

impl std::fmt::Debug for FlightShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlightShared")
            .field("data_dir", &self.data_dir)
            .finish_non_exhaustive()
    }
}
