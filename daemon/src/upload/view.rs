//! What the uploader shows ([`UploadShared`]): its state, the last error (typed kind and
//! message, never a credential), the queue's counts and pending bytes, per-episode state,
//! and the counters of the metrics. Written by the upload thread, read by the control
//! socket; the lock is only held to copy.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use super::state::QueueState;

/// The uploader's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UploaderState {
    /// `[publish]` off.
    Disabled,
    /// Nothing to send.
    Idle,
    /// Sending or publishing.
    Uploading,
    /// The store is unreachable (or answered with a transient error): waiting to retry.
    Offline,
    /// A configuration-class error (credentials, bucket, policy; retried after the long
    /// backoff) or a queue-log error (stopped until a restart).
    Error,
}

impl UploaderState {
    /// `disabled`, `idle`, `uploading`, `offline`, `error`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Disabled => "disabled",
            Self::Idle => "idle",
            Self::Uploading => "uploading",
            Self::Offline => "offline",
            Self::Error => "error",
        }
    }
}

/// The last error: a kind (`endpoint_unreachable`, `credentials_rejected`, `queue_io`,
/// ...) and its message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UploadErrorView {
    pub kind: &'static str,
    pub message: String,
    pub at: SystemTime,
}

/// The blob being sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CurrentBlob {
    pub episode: String,
    pub file: String,
    pub size: u64,
    /// Parts of its multipart upload stored (0 and 1 for a single put).
    pub parts_done: usize,
    pub parts_total: usize,
}

/// Failed attempts at one episode.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EpisodeAttempts {
    pub failed: u64,
    /// The kind and message of the last failure.
    pub last_error: Option<(&'static str, String)>,
}

/// Counters (monotonic over the daemon's life).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UploadCounters {
    /// Payload bytes sent (parts and single puts that succeeded).
    pub sent_bytes: u64,
    pub parts_sent: u64,
    pub blobs_uploaded: u64,
    /// Blobs the store already had (HEAD-skip, verified).
    pub blobs_skipped: u64,
    pub episodes_published: u64,
    pub episodes_evicted: u64,
    pub evicted_bytes: u64,
    pub errors: u64,
    /// Multipart uploads given up and started again with a new upload id.
    pub multipart_restarts: u64,
}

/// A copy of everything shown.
#[derive(Clone, Debug)]
pub struct UploadView {
    pub enabled: bool,
    pub state: UploaderState,
    pub last_error: Option<UploadErrorView>,
    pub next_retry: Option<SystemTime>,
    pub current: Option<CurrentBlob>,
    pub counters: UploadCounters,
    /// Episodes by upload state.
    pub counts: BTreeMap<&'static str, u64>,
    pub pending_bytes: u64,
    /// Per episode: (state name, pending bytes).
    pub episodes: BTreeMap<String, (&'static str, u64)>,
    /// Per episode: failed attempts since the daemon started and the last error (cleared
    /// once it is uploaded).
    pub attempts: BTreeMap<String, EpisodeAttempts>,
    pub dataset: String,
    pub robot: String,
}

impl UploadView {
    fn new(enabled: bool) -> Self {
        Self {
            enabled,
            state: if enabled {
                UploaderState::Idle
            } else {
                UploaderState::Disabled
            },
            last_error: None,
            next_retry: None,
            current: None,
            counters: UploadCounters::default(),
            counts: BTreeMap::new(),
            pending_bytes: 0,
            episodes: BTreeMap::new(),
            attempts: BTreeMap::new(),
            dataset: String::new(),
            robot: String::new(),
        }
    }
}

/// Shared between the upload thread and the control socket.
#[derive(Debug)]
pub struct UploadShared {
    view: Mutex<UploadView>,
    /// Held by the uploader from looking at an episode's keep mark to moving the episode
    /// out of the data directory, and by the control socket's `keep` from finding the
    /// episode to making its mark: a `keep` answered before an eviction began is honoured
    /// by it, one after finds the episode gone.
    eviction: Mutex<()>,
    /// The quota's state after the last eviction pass, and `rolling.quota_policy`.
    pub quota: std::sync::Arc<super::quota::QuotaWatch>,
    /// Finalized episodes handed to the uploader (connected when `[publish]` is on).
    pub handoff: super::handoff::Handoff,
    /// What operators asked of the uploader (`wshard upload retry|drop`).
    pub requests: super::requests::OperatorRequests,
}

impl UploadShared {
    #[must_use]
    pub fn new(enabled: bool) -> Self {
        Self {
            view: Mutex::new(UploadView::new(enabled)),
            eviction: Mutex::new(()),
            quota: std::sync::Arc::default(),
            requests: super::requests::OperatorRequests::default(),
            handoff: if enabled {
                super::handoff::Handoff::connected()
            } else {
                super::handoff::Handoff::default()
            },
        }
    }

    /// Hold off evictions (see the field `eviction`) until the guard is dropped.
    pub fn hold_evictions(&self) -> std::sync::MutexGuard<'_, ()> {
        self.eviction.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A copy of the view.
    #[must_use]
    pub fn snapshot(&self) -> UploadView {
        self.view
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Change the view.
    pub fn update(&self, f: impl FnOnce(&mut UploadView)) {
        f(&mut self.view.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// Refresh the queue's figures from `q`.
    pub fn set_queue(&self, q: &QueueState) {
        let counts = q.counts();
        let pending = q.total_pending_bytes();
        let episodes = q
            .episodes
            .keys()
            .filter_map(|id| {
                let s = q.state_name(id)?;
                Some((id.clone(), (s, q.pending_bytes(id))))
            })
            .collect();
        self.update(|v| {
            v.counts = counts;
            v.pending_bytes = pending;
            v.episodes = episodes;
        });
    }

    /// Record an error and the state it leaves.
    pub fn set_error(&self, state: UploaderState, kind: &'static str, message: String) {
        self.update(|v| {
            v.state = state;
            v.counters.errors += 1;
            v.last_error = Some(UploadErrorView {
                kind,
                message,
                at: SystemTime::now(),
            });
        });
    }
}
