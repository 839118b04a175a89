//! The systemd watchdog (`WatchdogSec=`): when and whether to send `WATCHDOG=1`.
//!
//! systemd sets `WATCHDOG_USEC` (and `WATCHDOG_PID`) and restarts the service when no
//! `WATCHDOG=1` arrives within that time. A ping proves more than "the process exists":
//! wshardd pings only while **every open episode's writer thread is going round its loop**.
//! Each writer stores a heartbeat on every turn and wakes at least every 250 ms even when
//! idle (`session::stats::HEARTBEAT_EVERY`), so a writer whose heartbeat is older than the
//! stall limit is stuck — in a hung `fdatasync`, a dead disk, a deadlock — whether or not
//! it has work queued. Then the pings stop, systemd kills and restarts the daemon
//! (`Restart=on-failure`), and recovery replays the stuck episode's journal.
//!
//! Timing: pings every `WATCHDOG_USEC / 2` (as `sd_watchdog_enabled(3)` advises); the stall
//! limit is the full `WATCHDOG_USEC`, so a writer blocked for less than `WatchdogSec` (a slow
//! but finishing fsync or chunk write) never costs a restart, and one blocked for longer
//! is restarted 1.5 to 2 × `WatchdogSec` after it stalled.

use std::time::Duration;

use crate::session::stats::{HEARTBEAT_NOT_STARTED, HEARTBEAT_RETIRED};

/// Why the watchdog variables are unusable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum WatchdogError {
    #[error("{var}={value:?} is not a number")]
    NotANumber { var: &'static str, value: String },
    #[error("WATCHDOG_USEC=0: the watchdog timeout must be positive")]
    Zero,
}

/// The watchdog as systemd configured it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Watchdog {
    /// `WATCHDOG_USEC`: systemd's timeout.
    pub(crate) timeout: Duration,
}

impl Watchdog {
    /// From `WATCHDOG_USEC` / `WATCHDOG_PID` (`None`: no watchdog, or another process's).
    ///
    /// # Errors
    /// [`WatchdogError`] when a variable is set but not a positive number.
    pub(crate) fn from_env() -> Result<Option<Self>, WatchdogError> {
        let get = |k| std::env::var(k).ok();
        Self::from_vars(
            get("WATCHDOG_USEC").as_deref(),
            get("WATCHDOG_PID").as_deref(),
            std::process::id(),
        )
    }

    /// From the variables' values; `WATCHDOG_PID` unset means "this process".
    ///
    /// # Errors
    /// See [`Watchdog::from_env`].
    pub(crate) fn from_vars(
        usec: Option<&str>,
        pid: Option<&str>,
        own_pid: u32,
    ) -> Result<Option<Self>, WatchdogError> {
        let num = |var, value: &str| {
            value
                .trim()
                .parse::<u64>()
                .map_err(|_| WatchdogError::NotANumber {
                    var,
                    value: value.to_string(),
                })
        };
        let Some(usec) = usec.filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        if let Some(pid) = pid.filter(|v| !v.is_empty()) {
            if num("WATCHDOG_PID", pid)? != u64::from(own_pid) {
                return Ok(None);
            }
        }
        match num("WATCHDOG_USEC", usec)? {
            0 => Err(WatchdogError::Zero),
            us => Ok(Some(Self {
                timeout: Duration::from_micros(us),
            })),
        }
    }

    /// How often to ping: half the timeout.
    #[must_use]
    pub(crate) fn ping_every(&self) -> Duration {
        self.timeout / 2
    }

    /// A writer whose heartbeat is older than this is stuck.
    #[must_use]
    pub(crate) fn stall_limit(&self) -> Duration {
        self.timeout
    }
}

/// A writer that stopped going round its loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stalled {
    pub(crate) episode: String,
    /// How long since its last heartbeat.
    pub(crate) for_ms: u64,
}

/// The decision: `None` (healthy: ping) or the writer that is stuck longest (withhold the
/// ping). `writers` are `(episode, last_heartbeat_ms)`; a writer not started yet or already
/// returned is not watched.
#[must_use]
pub(crate) fn stalled_writer<'a>(
    now_ms: u64,
    writers: impl IntoIterator<Item = (&'a str, u64)>,
    limit: Duration,
) -> Option<Stalled> {
    let limit_ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
    writers
        .into_iter()
        .filter(|(_, hb)| *hb != HEARTBEAT_NOT_STARTED && *hb != HEARTBEAT_RETIRED)
        .map(|(ep, hb)| (ep, now_ms.saturating_sub(hb)))
        .filter(|(_, age)| *age > limit_ms)
        .max_by_key(|(_, age)| *age)
        .map(|(ep, age)| Stalled {
            episode: ep.to_string(),
            for_ms: age,
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const LIMIT: Duration = Duration::from_secs(10);

    #[test]
    fn variables() {
        assert_eq!(Watchdog::from_vars(None, None, 5).unwrap(), None);
        let w = Watchdog::from_vars(Some("10000000"), None, 5)
            .unwrap()
            .unwrap();
        assert_eq!(w.timeout, Duration::from_secs(10));
        assert_eq!(w.ping_every(), Duration::from_secs(5));
        assert_eq!(w.stall_limit(), Duration::from_secs(10));
        assert!(Watchdog::from_vars(Some("400000"), Some("5"), 5)
            .unwrap()
            .is_some());
        assert_eq!(
            Watchdog::from_vars(Some("400000"), Some("6"), 5).unwrap(),
            None
        );
        assert_eq!(
            Watchdog::from_vars(Some("ten"), None, 5)
                .unwrap_err()
                .to_string(),
            "WATCHDOG_USEC=\"ten\" is not a number"
        );
        assert!(matches!(
            Watchdog::from_vars(Some("0"), None, 5),
            Err(WatchdogError::Zero)
        ));
    }

    #[test]
    fn no_writers_is_healthy() {
        assert_eq!(stalled_writer(1_000_000, [], LIMIT), None);
    }

    #[test]
    fn fresh_heartbeats_are_healthy() {
        let now = 100_000;
        let w = [("a", now - 250), ("b", now), ("c", now - 10_000)];
        assert_eq!(
            stalled_writer(now, w, LIMIT),
            None,
            "exactly the limit is ok"
        );
    }

    #[test]
    fn one_stale_writer_withholds_the_ping() {
        let now = 100_000;
        let w = [("a", now - 100), ("stuck", now - 10_001), ("b", now)];
        assert_eq!(
            stalled_writer(now, w, LIMIT),
            Some(Stalled {
                episode: "stuck".into(),
                for_ms: 10_001
            })
        );
    }

    #[test]
    fn the_longest_stalled_is_named() {
        let now = 100_000;
        let w = [("x", now - 20_000), ("y", now - 50_000)];
        assert_eq!(stalled_writer(now, w, LIMIT).unwrap().episode, "y");
    }

    #[test]
    fn writers_not_started_or_returned_are_not_watched() {
        let now = 100_000;
        let w = [("new", HEARTBEAT_NOT_STARTED), ("done", HEARTBEAT_RETIRED)];
        assert_eq!(stalled_writer(now, w, LIMIT), None);
    }

    #[test]
    fn a_heartbeat_from_the_future_is_fresh() {
        // Read `now` before another thread stored a newer heartbeat.
        assert_eq!(stalled_writer(10, [("a", 50)], LIMIT), None);
    }
}
