//! [`ReadCounter`]: the read requests and bytes a [`crate::store::Store`] has made (every
//! GET, range GET and HEAD), and its snapshot [`ReadStats`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Read requests made and bytes received, shared by clones.
#[derive(Clone, Debug, Default)]
pub struct ReadCounter {
    requests: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
}

/// A snapshot of a [`ReadCounter`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// GET, range GET and HEAD requests sent.
    pub requests: u64,
    /// Payload bytes received by them.
    pub bytes: u64,
}

impl ReadStats {
    /// What was read between `earlier` and `self`.
    #[must_use]
    pub fn since(self, earlier: ReadStats) -> ReadStats {
        ReadStats {
            requests: self.requests.saturating_sub(earlier.requests),
            bytes: self.bytes.saturating_sub(earlier.bytes),
        }
    }
}

impl ReadCounter {
    pub(crate) fn request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn bytes(&self, n: u64) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> ReadStats {
        ReadStats {
            requests: self.requests.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
        }
    }
}
