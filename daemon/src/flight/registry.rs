//! The daemon's flight streams (their rings, registered at open) and the trigger windows
//! still pending (each with its thread).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{json, Value};

use super::failure::WindowPolicy;
use super::shared::{FlightCounters, FlightShared};
use super::window::{self, Window};
use crate::session::flight_ring::{FlightRing, RingBounds};
use crate::session::SessionSettings;
use wshard_storage::fsio::Fs;

/// The daemon's flight streams and pending windows.
pub struct FlightRegistry {
    pub(crate) shared: Arc<FlightShared>,
    /// `[flight]` bounds.
    pub defaults: RingBounds,
    rings: Mutex<Vec<Arc<FlightRing>>>,
    windows: Mutex<Vec<Arc<Window>>>,
    next_window: AtomicU64,
}

impl std::fmt::Debug for FlightRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlightRegistry")
            .field("data_dir", &self.shared.data_dir)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl FlightRegistry {
    #[must_use]
    pub fn new(
        fs: Arc<dyn Fs>,
        data_dir: &Path,
        settings: SessionSettings,
        defaults: RingBounds,
        shutdown: Arc<AtomicBool>,
    ) -> Self {
        Self {
            shared: Arc::new(FlightShared {
                fs,
                data_dir: data_dir.to_path_buf(),
                settings,
                shutdown,
                policy: WindowPolicy::default(),
                counters: FlightCounters::default(),
                persisted_ends: std::sync::Mutex::new(std::collections::HashMap::new()),
                failures: std::sync::Mutex::new(Vec::new()),
            }),
            defaults,
            rings: Mutex::new(Vec::new()),
            windows: Mutex::new(Vec::new()),
            next_window: AtomicU64::new(1),
        }
    }

    /// With `policy` (`[flight]` retries, backoff and post-window grace) instead of the
    /// defaults; before any window starts.
    #[must_use]
    pub fn with_policy(mut self, policy: WindowPolicy) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.policy = policy;
        }
        self
    }

    /// The windows given up (failed), newest last.
    #[must_use]
    pub fn failed_windows(&self) -> Vec<super::failure::WindowFailure> {
        self.shared.failures()
    }

    /// A flight stream opened: triggers now take it.
    pub fn register(&self, ring: Arc<FlightRing>) {
        let mut rings = lock(&self.rings);
        rings.retain(|r| !r.has_ended());
        rings.push(ring);
    }

    /// The flight streams still recording.
    #[must_use]
    pub fn live_rings(&self) -> Vec<Arc<FlightRing>> {
        let mut rings = lock(&self.rings);
        rings.retain(|r| !r.has_ended());
        rings.clone()
    }

    pub(crate) fn windows(&self) -> MutexGuard<'_, Vec<Arc<Window>>> {
        lock(&self.windows)
    }

    pub(crate) fn next_window_id(&self) -> u64 {
        self.next_window.fetch_add(1, Ordering::Relaxed)
    }

    /// The counters.
    #[must_use]
    pub fn counters(&self) -> &FlightCounters {
        &self.shared.counters
    }

    /// Start the thread of `window`.
    pub(crate) fn spawn(&self, window: Arc<Window>) {
        self.windows().push(window.clone());
        let me = self.shared.clone();
        let name = format!("flight-{}", window.id);
        let w = window.clone();
        if let Err(e) = std::thread::Builder::new()
            .name(name)
            .spawn(move || window::run(&me, &w))
        {
            tracing::error!(episode = %window.episode, "cannot start the window thread: {e}; the window is built at the next start");
            window.lock().retrying = Some(e.to_string());
        }
    }

    /// Whether `episode` is a trigger window not yet persisted (being built).
    #[must_use]
    pub fn is_pending_window(&self, episode: &str) -> bool {
        self.windows()
            .iter()
            .any(|w| w.episode == episode && !w.lock().done)
    }

    /// Windows not yet persisted.
    #[must_use]
    pub fn pending_windows(&self) -> u64 {
        self.windows().iter().filter(|w| !w.lock().done).count() as u64
    }

    /// Status: flight streams and triggers.
    #[must_use]
    pub fn status_json(&self) -> Value {
        let streams: Vec<Value> = self
            .live_rings()
            .iter()
            .map(|r| {
                let v = r.view();
                let held_ns = v
                    .newest_t_ns
                    .zip(v.oldest_t_ns)
                    .map(|(n, o)| n.saturating_sub(o));
                json!({
                    "stream": r.identity.name(),
                    "latched": r.identity.latched,
                    "ring_seconds": r.bounds.max_ns as f64 / 1e9,
                    "ring_bytes": r.bounds.max_bytes,
                    "held_seconds": held_ns.map(|n| n as f64 / 1e9),
                    "held_bytes": v.bytes,
                    "held_chunks": v.chunks,
                    "oldest_t_ns": v.oldest_t_ns,
                    "latest_t_ns": r.latest_t_ns(),
                    "evicted_chunks": v.evicted_chunks,
                    "evicted_bytes": v.evicted_bytes,
                    "pinned_by": v.pins,
                })
            })
            .collect();
        let windows = self.windows();
        let pending: Vec<Value> = windows
            .iter()
            .filter_map(|w| {
                let st = w.lock();
                (!st.done).then(|| {
                    json!({
                        "episode": w.episode,
                        "triggers": st.record.triggers.len(),
                        "finalizing": st.finalizing,
                        "post_deadline_unix_ns": window::post_deadline_unix_ns(
                            &st.record,
                            self.shared.policy.post_grace,
                        ),
                        "cut_short": st.cut_short,
                        "attempts": st.attempts,
                        "retrying": st.retrying,
                        "failed": st.failed,
                    })
                })
            })
            .collect();
        let c = &self.shared.counters;
        json!({
            "streams": streams,
            "triggers": {
                "received": c.triggers.load(Ordering::Relaxed),
                "merged": c.merged.load(Ordering::Relaxed),
                "persisted": c.persisted.load(Ordering::Relaxed),
                "failed": c.failed.load(Ordering::Relaxed),
                "retries": c.retries.load(Ordering::Relaxed),
                "cut_short": c.cut_short.load(Ordering::Relaxed),
                "failed_windows": self.shared.failures(),
                "event_refused": c.event_refused.load(Ordering::Relaxed),
                "pending": pending,
            },
        })
    }
}
