//! The finisher's hand-off to the uploader ([`Handoff`]): whoever finalizes an episode (a
//! session's finisher committing its final manifest, a multi-stream episode committing its
//! final index) hands the episode's directory over, and the upload thread, which polls
//! [`Handoff::is_pending`] in every wait, enqueues it at once. The data directory is only
//! scanned at startup (and by the slow safety rescan, `publish.scan_interval_ms`).
//!
//! A leaf: it calls no other module. Never blocks the finisher: a push is a short lock on
//! a list; past [`MAX_PENDING`] paths (an uploader that stopped on a queue-log error) the
//! list is dropped and one rescan is asked for instead, so nothing is lost.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The most directories held for the uploader; past it the uploader rescans instead.
pub const MAX_PENDING: usize = 4096;

#[derive(Debug, Default)]
struct Inner {
    dirs: Mutex<Vec<PathBuf>>,
    /// Set with every push (and an overflow), cleared by [`Handoff::take`].
    pending: AtomicBool,
    /// More than [`MAX_PENDING`] were handed over: rescan the data directory.
    overflowed: AtomicBool,
}

/// What the upload thread takes from a [`Handoff`].
#[derive(Debug, Default, PartialEq, Eq)]
pub struct HandedOff {
    /// The directories handed over since the last take, in order.
    pub dirs: Vec<PathBuf>,
    /// Some were dropped ([`MAX_PENDING`]): the data directory must be rescanned.
    pub rescan: bool,
}

/// A cheap handle (clone it): connected when `[publish]` is on, else hand-offs are
/// dropped.
#[derive(Clone, Debug, Default)]
pub struct Handoff {
    inner: Option<Arc<Inner>>,
}

impl PartialEq for Handoff {
    /// The same channel (or both disconnected).
    fn eq(&self, other: &Self) -> bool {
        match (&self.inner, &other.inner) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl Handoff {
    /// A channel to an uploader.
    #[must_use]
    pub fn connected() -> Self {
        Self {
            inner: Some(Arc::new(Inner::default())),
        }
    }

    /// The episode whose directory is `dir` (or a stream or part directory below it) is
    /// final: hand it to the uploader.
    pub fn finished(&self, dir: &Path) {
        let Some(inner) = &self.inner else {
            return;
        };
        let mut dirs = inner.dirs.lock().unwrap_or_else(PoisonError::into_inner);
        if dirs.len() >= MAX_PENDING {
            dirs.clear();
            inner.overflowed.store(true, Ordering::Release);
        } else {
            dirs.push(dir.to_path_buf());
        }
        drop(dirs);
        inner.pending.store(true, Ordering::Release);
    }

    /// True when something was handed over since the last [`Handoff::take`].
    #[must_use]
    pub fn is_pending(&self) -> bool {
        self.inner
            .as_ref()
            .is_some_and(|i| i.pending.load(Ordering::Acquire))
    }

    /// Everything handed over since the last take.
    #[must_use]
    pub fn take(&self) -> HandedOff {
        let Some(inner) = &self.inner else {
            return HandedOff::default();
        };
        let mut dirs = inner.dirs.lock().unwrap_or_else(PoisonError::into_inner);
        inner.pending.store(false, Ordering::Release);
        HandedOff {
            dirs: std::mem::take(&mut *dirs),
            rescan: inner.overflowed.swap(false, Ordering::AcqRel),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upload_handoff_unit_order_overflow_and_disconnected() {
        let h = Handoff::connected();
        assert!(!h.is_pending());
        h.finished(Path::new("/d/a"));
        h.clone().finished(Path::new("/d/b"));
        assert!(h.is_pending());
        let got = h.take();
        assert_eq!(got.dirs, vec![PathBuf::from("/d/a"), PathBuf::from("/d/b")]);
        assert!(!got.rescan);
        assert!(!h.is_pending());
        for i in 0..=MAX_PENDING {
            h.finished(Path::new(&format!("/d/{i}")));
        }
        let got = h.take();
        assert!(got.rescan, "an overflow asks for a rescan");
        assert!(got.dirs.len() < MAX_PENDING);
        let off = Handoff::default();
        off.finished(Path::new("/d/a"));
        assert!(!off.is_pending());
        assert_eq!(off.take(), HandedOff::default());
        assert_ne!(off, h);
        assert_eq!(h, h.clone());
    }
}
