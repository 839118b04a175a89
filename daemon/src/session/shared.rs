//! State shared by a session's connection, writer and publisher threads.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::settings::SessionSettings;
use super::stats::EpisodeStats;
use crate::episode::{EpisodeLayout, EpisodeSchema};
use crate::fsio::Fs;

/// How the daemon talks back to the client of a session.
pub trait Responder: Send + Sync {
    /// Every timestep with `seq < up_to_seq` is durable.
    fn durable(&self, up_to_seq: u64);
    /// The episode failed on storage: what was durable stays durable, nothing more is accepted.
    fn storage_failed(&self, message: &str);
}

/// Why an episode ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FinalStatus {
    Complete,
    Aborted,
    /// Ended without a CLOSE: the reason is recorded in the manifest.
    Interrupted(String),
}

impl FinalStatus {
    /// The manifest `status` value.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::Aborted => "aborted",
            Self::Interrupted(_) => "interrupted",
        }
    }
}

/// Shared by the threads of one session.
pub struct SessionShared {
    pub fs: Arc<dyn Fs>,
    pub layout: EpisodeLayout,
    pub schema: Arc<EpisodeSchema>,
    pub settings: SessionSettings,
    pub stats: Arc<EpisodeStats>,
    pub responder: Arc<dyn Responder>,
    /// Set when a write, fsync or rename failed: no more data is accepted.
    pub failed: AtomicBool,
    failure: Mutex<Option<String>>,
    durable_mark: AtomicU64,
}

impl std::fmt::Debug for SessionShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionShared")
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}

impl SessionShared {
    /// New shared state.
    pub fn new(
        fs: Arc<dyn Fs>,
        layout: EpisodeLayout,
        schema: Arc<EpisodeSchema>,
        settings: SessionSettings,
        responder: Arc<dyn Responder>,
    ) -> Self {
        Self {
            fs,
            layout,
            schema,
            settings,
            stats: Arc::new(EpisodeStats::default()),
            responder,
            failed: AtomicBool::new(false),
            failure: Mutex::new(None),
            durable_mark: AtomicU64::new(0),
        }
    }

    /// Raise the durable watermark; tell the client only when it moved forward.
    pub fn advance_durable(&self, up_to_seq: u64) {
        let prev = self.durable_mark.fetch_max(up_to_seq, Ordering::AcqRel);
        if up_to_seq > prev {
            self.stats.durable.store(up_to_seq, Ordering::Relaxed);
            self.responder.durable(up_to_seq);
        }
    }

    /// The durable watermark.
    #[must_use]
    pub fn durable(&self) -> u64 {
        self.durable_mark.load(Ordering::Acquire)
    }

    /// Mark the session failed (first failure wins) and tell the client.
    pub fn fail(&self, message: String) {
        if !self.failed.swap(true, Ordering::AcqRel) {
            tracing::error!(episode = %self.layout.episode_id, "episode failed: {message}");
            self.responder.storage_failed(&message);
            if let Ok(mut f) = self.failure.lock() {
                *f = Some(message);
            }
        }
    }

    /// True once failed.
    #[must_use]
    pub fn is_failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// The first failure, if any.
    #[must_use]
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().ok().and_then(|f| f.clone())
    }
}
