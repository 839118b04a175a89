//! What the service manager sees of a running wshardd: `READY=1`, periodic `STATUS=`,
//! `WATCHDOG=1` while every writer makes progress, and on shutdown `STOPPING=1` followed by
//! `EXTEND_TIMEOUT_USEC=` while the open episodes are being finalized.
//!
//! All of it is a no-op without `$NOTIFY_SOCKET` (and the pings without `$WATCHDOG_USEC`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::registry::Registry;
use crate::runtime::notify::Notifier;
use crate::runtime::watchdog::{stalled_writer, Stalled, Watchdog};
use crate::session::stats::monotonic_ms;

/// How often `STATUS=` is refreshed while running.
pub(crate) const STATUS_EVERY: Duration = Duration::from_secs(2);
/// While stopping: how often the stop timeout is extended, and by how much.
pub(crate) const EXTEND_EVERY: Duration = Duration::from_secs(1);
pub(crate) const EXTEND_BY: Duration = Duration::from_secs(5);
/// How often the supervisor looks at the flags.
const TICK: Duration = Duration::from_millis(10);

/// The daemon's line to the service manager.
#[derive(Debug)]
pub(crate) struct Service {
    pub(crate) notifier: Notifier,
    pub(crate) watchdog: Option<Watchdog>,
}

impl Service {
    /// From `$NOTIFY_SOCKET`, `$WATCHDOG_USEC` and `$WATCHDOG_PID`. A variable that cannot
    /// be used is logged and that part disabled: the daemon runs anyway (systemd then
    /// reports the missing READY or pings itself).
    #[must_use]
    pub(crate) fn from_env() -> Self {
        let notifier = Notifier::from_env().unwrap_or_else(|e| {
            tracing::error!("sd_notify disabled: {e}");
            Notifier::disabled()
        });
        let watchdog = Watchdog::from_env().unwrap_or_else(|e| {
            tracing::error!("systemd watchdog disabled: {e}");
            None
        });
        if let Some(w) = &watchdog {
            if notifier.enabled() {
                tracing::info!(
                    timeout_ms = w.timeout.as_millis(),
                    "systemd watchdog: pinging every {:?} while every writer makes progress",
                    w.ping_every()
                );
            } else {
                tracing::warn!("WATCHDOG_USEC is set but NOTIFY_SOCKET is not: no pings");
            }
        }
        Self { notifier, watchdog }
    }

    /// Send `READY=1` with the first status line.
    pub(crate) fn ready(&self, registry: &Registry) {
        self.notifier.ready(&running_status(registry));
    }

    /// Run until `finished` is set: status lines and watchdog pings while running; once
    /// `shutdown` is set, `STOPPING=1` and then stop-timeout extensions while the writers
    /// still make progress. Always sends `STOPPING=1` (and one extension) before returning
    /// when `shutdown` is set, however quickly the episodes were finalized.
    pub(crate) fn supervise(
        &self,
        registry: &Registry,
        shutdown: &AtomicBool,
        finished: &AtomicBool,
    ) {
        if !self.notifier.enabled() {
            return;
        }
        let mut last_status = Instant::now();
        let mut last_ping: Option<Instant> = None;
        let mut last_extend: Option<Instant> = None;
        let mut stopping = false;
        let mut reported: Option<String> = None;
        loop {
            let done = finished.load(Ordering::Acquire);
            let stalled = self.watchdog.and_then(|w| stalled(registry, &w));
            self.report_stall(stalled.as_ref(), &mut reported);
            if let Some(w) = &self.watchdog {
                let due = last_ping.map_or(true, |t| t.elapsed() >= w.ping_every());
                if due && stalled.is_none() && !done {
                    self.notifier.watchdog();
                    last_ping = Some(Instant::now());
                }
            }
            if shutdown.load(Ordering::Acquire) {
                if !stopping {
                    stopping = true;
                    self.notifier.stopping(&stopping_status(registry));
                }
                let due = last_extend.map_or(true, |t| t.elapsed() >= EXTEND_EVERY);
                if due && stalled.is_none() {
                    self.notifier.extend_timeout(EXTEND_BY);
                    self.notifier.status(&stopping_status(registry));
                    last_extend = Some(Instant::now());
                }
            } else if last_status.elapsed() >= STATUS_EVERY {
                self.notifier.status(&running_status(registry));
                last_status = Instant::now();
            }
            if done {
                return;
            }
            std::thread::sleep(TICK);
        }
    }

    /// Log a stalled writer once per episode, and its recovery.
    fn report_stall(&self, stalled: Option<&Stalled>, reported: &mut Option<String>) {
        match (stalled, reported.as_ref()) {
            (Some(s), r) if r != Some(&s.episode) => {
                tracing::error!(
                    episode = %s.episode,
                    "writer made no progress for {} ms: withholding the systemd watchdog ping \
                     (systemd restarts wshardd; recovery replays the episode's journal)",
                    s.for_ms
                );
                self.notifier.status(&format!(
                    "writer of episode {} stuck for {} ms",
                    s.episode, s.for_ms
                ));
                *reported = Some(s.episode.clone());
            }
            (None, Some(ep)) => {
                tracing::warn!(episode = %ep, "writer making progress again");
                *reported = None;
            }
            _ => {}
        }
    }
}

fn stalled(registry: &Registry, w: &Watchdog) -> Option<Stalled> {
    let episodes = registry.episodes();
    let now = monotonic_ms();
    stalled_writer(
        now,
        episodes.iter().map(|e| {
            (
                e.episode_id.as_str(),
                e.stats.last_heartbeat_ms.load(Ordering::Relaxed),
            )
        }),
        w.stall_limit(),
    )
}

/// `recording: 2 open episodes, 1234 timesteps durable, 12.3 MiB received; 5 finalized since start`.
#[must_use]
pub(crate) fn running_status(registry: &Registry) -> String {
    let episodes = registry.episodes();
    let durable: u64 = episodes
        .iter()
        .map(|e| e.stats.durable.load(Ordering::Relaxed))
        .sum();
    let bytes: u64 = episodes
        .iter()
        .map(|e| e.stats.bytes.load(Ordering::Relaxed))
        .sum();
    #[allow(clippy::cast_precision_loss)] // a display value
    let mib = bytes as f64 / (1024.0 * 1024.0);
    format!(
        "recording: {} open episodes, {durable} timesteps durable, {mib:.1} MiB received; \
         {} finalized since start",
        episodes.len(),
        registry.counters.episodes_finalized.load(Ordering::Relaxed),
    )
}

/// `stopping: finalizing 2 open episodes`.
#[must_use]
pub(crate) fn stopping_status(registry: &Registry) -> String {
    format!(
        "stopping: finalizing {} open episodes",
        registry.episodes().len()
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::net::UnixDatagram;
    use std::sync::Arc;

    use super::*;

    fn messages(rx: &UnixDatagram) -> Vec<String> {
        rx.set_nonblocking(true).unwrap();
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = rx.recv(&mut buf) {
            out.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
        out
    }

    #[test]
    fn stopping_then_extend_even_when_already_finished() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n.sock");
        let rx = UnixDatagram::bind(&path).unwrap();
        let svc = Service {
            notifier: Notifier::connect(path.to_str().unwrap()).unwrap(),
            watchdog: None,
        };
        let registry = Arc::new(Registry::default());
        svc.supervise(&registry, &AtomicBool::new(true), &AtomicBool::new(true));
        let m = messages(&rx);
        assert_eq!(
            m,
            vec![
                "STOPPING=1\nSTATUS=stopping: finalizing 0 open episodes".to_string(),
                "EXTEND_TIMEOUT_USEC=5000000".to_string(),
                "STATUS=stopping: finalizing 0 open episodes".to_string(),
            ]
        );
    }

    #[test]
    fn pings_while_running() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n.sock");
        let rx = UnixDatagram::bind(&path).unwrap();
        let svc = Service {
            notifier: Notifier::connect(path.to_str().unwrap()).unwrap(),
            watchdog: Some(Watchdog {
                timeout: Duration::from_millis(40),
            }),
        };
        let registry = Arc::new(Registry::default());
        let finished = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| svc.supervise(&registry, &AtomicBool::new(false), &finished));
            std::thread::sleep(Duration::from_millis(200));
            finished.store(true, Ordering::Release);
        });
        let pings = messages(&rx).iter().filter(|m| *m == "WATCHDOG=1").count();
        assert!(pings >= 4, "{pings} pings in 200 ms at 20 ms");
    }
}
