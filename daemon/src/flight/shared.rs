//! What the window threads need: the file system, the data directory, the chunk settings,
//! the retry and deadline policy, the shutdown flag, the counters and the windows given up.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};

use super::failure::{WindowFailure, WindowPolicy};
use crate::session::SessionSettings;
use wshard_storage::fsio::Fs;

/// Counts for status and metrics.
#[derive(Debug, Default)]
pub struct FlightCounters {
    pub triggers: AtomicU64,
    pub merged: AtomicU64,
    pub persisted: AtomicU64,
    /// Windows given up after their retries.
    pub failed: AtomicU64,
    /// Retries of a window's persistence after a failure.
    pub retries: AtomicU64,
    /// Windows finalized at their wall-clock deadline, a stream's post-window cut short.
    pub cut_short: AtomicU64,
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
    /// `[flight]` retries, backoff and post-window grace.
    pub(crate) policy: WindowPolicy,
    pub counters: FlightCounters,
    /// Per flight stream (`EPISODE` or `EPISODE/STREAM`): the end (`t_ns`) of the last
    /// window persisted, and its episode. A later window starts after it: no step is
    /// copied twice.
    pub(crate) persisted_ends: Mutex<HashMap<String, (i64, String)>>,
    /// The windows given up since start, and those a record says were (the newest
    /// [`FAILED_SHOWN`]).
    pub(crate) failures: Mutex<Vec<WindowFailure>>,
}

/// How many windows given up status keeps.
pub const FAILED_SHOWN: usize = 64;

impl FlightShared {
    /// Window `episode` holding `[.., end_ns]` of `source` has its final bounds (it is
    /// in place, or being finished: a failure leaves it pending with these bounds).
    pub(crate) fn note_persisted(&self, source: &str, end_ns: i64, episode: &str) {
        let mut m = self
            .persisted_ends
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let e = m
            .entry(source.to_owned())
            .or_insert((end_ns, episode.to_owned()));
        if end_ns >= e.0 {
            *e = (end_ns, episode.to_owned());
        }
    }

    /// Window `failure.window` was given up.
    pub(crate) fn note_failed(&self, failure: WindowFailure) {
        let mut f = self
            .failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f.retain(|x| x.window != failure.window);
        f.push(failure);
        let over = f.len().saturating_sub(FAILED_SHOWN);
        f.drain(..over);
    }

    /// The windows given up.
    #[must_use]
    pub fn failures(&self) -> Vec<WindowFailure> {
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The end of the last window persisted of `source`, and its episode.
    pub(crate) fn persisted_end(&self, source: &str) -> Option<(i64, String)> {
        self.persisted_ends
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(source)
            .cloned()
    }
}

impl std::fmt::Debug for FlightShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlightShared")
            .field("data_dir", &self.data_dir)
            .finish_non_exhaustive()
    }
}
