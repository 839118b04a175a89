//! What operators ask of the uploader through the control socket ([`OperatorRequests`]):
//! `wshard upload retry EPISODE` (try again now: the backoff is reset, an episode left out
//! until a restart is taken back) and `wshard upload drop EPISODE` (out of the queue, a
//! `dropped` record). The control socket only puts a request here; the upload thread, the
//! queue log's one writer, takes them at the start of each pass and before each blob, and
//! its waits end as soon as one is pending. A leaf: it calls no other module.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

/// What the upload thread takes at once.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Taken {
    /// Episodes to take back (left out until a restart, or failing: tried now).
    pub retry: Vec<String>,
    /// Episodes to drop from the queue.
    pub drop: Vec<String>,
}

/// The pending requests.
#[derive(Debug, Default)]
pub struct OperatorRequests {
    taken: Mutex<Taken>,
    pending: AtomicBool,
}

impl OperatorRequests {
    /// Ask for `episode` to be tried again now.
    pub fn retry(&self, episode: &str) {
        self.push(|t| t.retry.push(episode.to_owned()));
    }

    /// Ask for `episode` to be dropped from the queue.
    pub fn drop_episode(&self, episode: &str) {
        self.push(|t| t.drop.push(episode.to_owned()));
    }

    fn push(&self, f: impl FnOnce(&mut Taken)) {
        f(&mut self.taken.lock().unwrap_or_else(PoisonError::into_inner));
        self.pending.store(true, Ordering::Release);
    }

    /// True when a request waits.
    #[must_use]
    pub fn is_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// Every request since the last take.
    #[must_use]
    pub fn take(&self) -> Taken {
        let mut t = self.taken.lock().unwrap_or_else(PoisonError::into_inner);
        self.pending.store(false, Ordering::Release);
        std::mem::take(&mut *t)
    }
}
