//! The deadlines of a connection without an open episode: a complete HELLO within
//! `limits.handshake_timeout_ms` of the accept, and an open episode within
//! `limits.no_episode_timeout_ms` of the HELLO (or of the end of its last episode). A
//! connection with an open episode has no deadline at all, however quiet it is (a paused
//! teleop, a quiet shared-memory ring). docs/PROTOCOL.md, "Server timeouts and connection
//! limits".

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use wshard_ingest_proto::ErrorCode;

use super::responder::SocketResponder;
use crate::registry::{DaemonCounters, PeerCred};
use crate::runtime::ServerContext;

/// The two deadlines, as configured when the connection was accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Deadlines {
    /// `limits.handshake_timeout_ms`.
    pub(crate) handshake: Duration,
    /// `limits.no_episode_timeout_ms`.
    pub(crate) no_episode: Duration,
}

/// What the connection is waiting for, as far as the deadlines are concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// No complete HELLO yet.
    Handshake,
    /// Past the handshake, no episode open.
    NoEpisode,
    /// An episode is open: no deadline.
    Recording,
}

/// A deadline that passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cut {
    Handshake(Duration),
    NoEpisode(Duration),
}

impl Deadlines {
    /// The deadlines configured now (SIGHUP changes them for new connections).
    #[must_use]
    pub(crate) fn configured(ctx: &ServerContext) -> Self {
        ctx.tunables.read().map_or(
            Self {
                handshake: wshardd_config::LimitsConfig::default().handshake_timeout(),
                no_episode: wshardd_config::LimitsConfig::default().no_episode_timeout(),
            },
            |t| Self {
                handshake: t.handshake_timeout,
                no_episode: t.no_episode_timeout,
            },
        )
    }

    /// The deadline `phase` has passed, `since` being when the phase began (the accept,
    /// the HELLO or the end of the last episode).
    #[must_use]
    pub(crate) fn passed(&self, phase: Phase, since: Instant, now: Instant) -> Option<Cut> {
        let waited = now.saturating_duration_since(since);
        match phase {
            Phase::Handshake if waited >= self.handshake => Some(Cut::Handshake(self.handshake)),
            Phase::NoEpisode if waited >= self.no_episode => Some(Cut::NoEpisode(self.no_episode)),
            Phase::Handshake | Phase::NoEpisode | Phase::Recording => None,
        }
    }
}

/// A connection's deadlines and what they count from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DeadlineClock {
    deadlines: Deadlines,
    /// When the connection was accepted, completed its HELLO, or was first seen without
    /// the episode it had; `None` while an episode is open.
    since: Option<Instant>,
}

impl DeadlineClock {
    /// The clock of a connection accepted at `accepted`.
    #[must_use]
    pub(crate) fn new(deadlines: Deadlines, accepted: Instant) -> Self {
        Self {
            deadlines,
            since: Some(accepted),
        }
    }

    /// Start over (the HELLO was accepted: the no-episode deadline counts from now).
    pub(crate) fn restart(&mut self) {
        self.since = Some(Instant::now());
    }

    /// Look at the connection in `phase`: the deadline it has passed, if any. While an
    /// episode is open nothing counts; after it, the no-episode deadline counts from the
    /// first look without it (the episode finalized, its last answer sent).
    pub(crate) fn check(&mut self, phase: Phase) -> Option<Cut> {
        self.check_at(phase, Instant::now())
    }

    fn check_at(&mut self, phase: Phase, now: Instant) -> Option<Cut> {
        if phase == Phase::Recording {
            self.since = None;
            return None;
        }
        let since = *self.since.get_or_insert(now);
        self.deadlines.passed(phase, since, now)
    }
}

impl Cut {
    /// The config key of the deadline.
    #[must_use]
    pub(crate) fn key(self) -> &'static str {
        match self {
            Self::Handshake(_) => "limits.handshake_timeout_ms",
            Self::NoEpisode(_) => "limits.no_episode_timeout_ms",
        }
    }

    /// The `ERROR{TIMEOUT}` message (also logged).
    #[must_use]
    pub(crate) fn message(self) -> String {
        match self {
            Self::Handshake(d) => format!(
                "no complete HELLO within {} ms of connecting ({}); connection closed",
                d.as_millis(),
                self.key()
            ),
            Self::NoEpisode(d) => format!(
                "no episode opened within {} ms ({}: a connection without an open episode \
                 is closed); connection closed, connect again to record",
                d.as_millis(),
                self.key()
            ),
        }
    }

    /// The daemon counter of connections cut at this deadline.
    #[must_use]
    pub(crate) fn counter(self, c: &DaemonCounters) -> &AtomicU64 {
        match self {
            Self::Handshake(_) => &c.connections_cut_handshake,
            Self::NoEpisode(_) => &c.connections_cut_no_episode,
        }
    }

    /// Count the cut.
    pub(crate) fn count(self, c: &DaemonCounters) {
        self.counter(c).fetch_add(1, Ordering::Relaxed);
    }

    /// Close connection `peer` at this deadline: log, count, and send `ERROR{TIMEOUT}`
    /// naming the deadline and its key (best effort: within the write timeout); the
    /// caller then drops the connection.
    pub(crate) fn close(
        self,
        responder: &SocketResponder,
        counters: &DaemonCounters,
        peer: &str,
        cred: Option<PeerCred>,
    ) {
        let message = self.message();
        let uid = cred.map(|c| c.uid);
        tracing::warn!(peer, ?uid, "closing a connection: {message}");
        self.count(counters);
        responder.error(ErrorCode::Timeout, message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: Deadlines = Deadlines {
        handshake: Duration::from_millis(100),
        no_episode: Duration::from_millis(500),
    };

    #[test]
    fn each_phase_has_its_own_deadline_and_recording_none() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        assert_eq!(D.passed(Phase::Handshake, t0, at(99)), None);
        assert_eq!(
            D.passed(Phase::Handshake, t0, at(100)),
            Some(Cut::Handshake(D.handshake))
        );
        assert_eq!(D.passed(Phase::NoEpisode, t0, at(499)), None);
        assert_eq!(
            D.passed(Phase::NoEpisode, t0, at(500)),
            Some(Cut::NoEpisode(D.no_episode))
        );
        assert_eq!(D.passed(Phase::Recording, t0, at(86_400_000)), None);
        // A clock read before `since` is no time at all.
        assert_eq!(D.passed(Phase::Handshake, at(50), t0), None);
    }

    #[test]
    fn the_no_episode_deadline_restarts_after_each_episode() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut c = DeadlineClock::new(D, t0);
        assert_eq!(c.check_at(Phase::Handshake, at(50)), None);
        // HELLO at 90 ms (restart counts from the real now: use the fields directly).
        c.since = Some(at(90));
        assert_eq!(c.check_at(Phase::NoEpisode, at(500)), None);
        // An episode from 550 ms to 5 s: never cut.
        assert_eq!(c.check_at(Phase::Recording, at(550)), None);
        assert_eq!(c.check_at(Phase::Recording, at(5_000)), None);
        // Without it again from 5.2 s: the deadline counts from there.
        assert_eq!(c.check_at(Phase::NoEpisode, at(5_200)), None);
        assert_eq!(c.check_at(Phase::NoEpisode, at(5_699)), None);
        assert_eq!(
            c.check_at(Phase::NoEpisode, at(5_700)),
            Some(Cut::NoEpisode(D.no_episode))
        );
    }

    #[test]
    fn messages_name_the_deadline_and_its_key() {
        let m = Cut::Handshake(Duration::from_millis(5000)).message();
        assert!(m.contains("HELLO") && m.contains("5000 ms"), "{m}");
        assert!(m.contains("limits.handshake_timeout_ms"), "{m}");
        let m = Cut::NoEpisode(Duration::from_millis(60_000)).message();
        assert!(m.contains("no episode") && m.contains("60000 ms"), "{m}");
        assert!(m.contains("limits.no_episode_timeout_ms"), "{m}");
        let c = DaemonCounters::default();
        Cut::NoEpisode(Duration::ZERO).count(&c);
        Cut::NoEpisode(Duration::ZERO).count(&c);
        Cut::Handshake(Duration::ZERO).count(&c);
        assert_eq!(c.connections_cut_no_episode.load(Ordering::Relaxed), 2);
        assert_eq!(c.connections_cut_handshake.load(Ordering::Relaxed), 1);
    }
}
