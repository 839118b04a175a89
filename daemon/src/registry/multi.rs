//! The open multi-stream episodes in the registry: added at `EPISODE_OPEN`, forgotten when
//! they finalize; a stop request (operator, disk) closes one and stops its streams.

use std::sync::Arc;

use super::{LiveEpisode, Registry, StopReason};
use crate::multi::{MultiEpisode, Progress};

impl Registry {
    /// Ask every open episode (and stream) to stop, and close every multi-stream episode
    /// with `reason`'s outcome; returns how many episodes and streams were asked.
    pub(crate) fn stop_all(&self, reason: &StopReason) -> usize {
        for m in self.multis() {
            self.stop_multi(&m, reason);
        }
        let all = self.episodes();
        for e in &all {
            e.request_stop(reason.clone());
        }
        all.len()
    }

    /// Add an open multi-stream episode.
    pub(crate) fn add_multi(&self, ep: Arc<MultiEpisode>) {
        if let Ok(mut map) = self.multi.lock() {
            map.insert(ep.id().to_owned(), ep);
        }
    }

    /// The open multi-stream episode `id`.
    #[must_use]
    pub(crate) fn multi(&self, id: &str) -> Option<Arc<MultiEpisode>> {
        self.multi.lock().ok().and_then(|m| m.get(id).cloned())
    }

    /// Every open multi-stream episode.
    #[must_use]
    pub(crate) fn multis(&self) -> Vec<Arc<MultiEpisode>> {
        self.multi
            .lock()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// The streams of multi-stream episode `id` recording now.
    #[must_use]
    pub(crate) fn streams_of(&self, id: &str) -> Vec<Arc<LiveEpisode>> {
        self.episodes()
            .into_iter()
            .filter(|e| e.multi.as_deref() == Some(id))
            .collect()
    }

    /// Act on what a change of `ep` led to: a finalized episode is forgotten.
    pub(crate) fn settle_multi(&self, ep: &MultiEpisode, progress: &Progress) {
        if let Some(e) = &progress.index_error {
            tracing::error!(episode = %ep.id(), "episode index not committed (recovery rebuilds it): {e}");
        }
        if progress.finalized {
            if let Ok(mut map) = self.multi.lock() {
                if map.get(ep.id()).is_some_and(|m| std::ptr::eq(&**m, ep)) {
                    map.remove(ep.id());
                }
            }
        }
    }

    /// Close `ep` for `reason` (`interrupted`, or `complete` / `aborted` for an operator's
    /// `stop` / `abort`) and ask each of its streams to stop (their connections finalize
    /// them with the same status; the last one finalizes the episode).
    pub(crate) fn stop_multi(&self, ep: &MultiEpisode, reason: &StopReason) -> Progress {
        let progress = ep.stop(&reason.manifest_reason(), reason.outcome());
        for s in self.streams_of(ep.id()) {
            s.request_stop(reason.clone());
        }
        self.settle_multi(ep, &progress);
        progress
    }
}
