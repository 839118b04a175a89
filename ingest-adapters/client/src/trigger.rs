//! Sending a `TRIGGER` on a connection (protocol version 2) and waiting for its answer:
//! the flight recorder persists the window `[t - pre, t + post]` of its flight streams as
//! an episode, named at once by `TRIGGERED`.

use std::time::Duration;

use wshard_ingest_proto::{Frame, FrameType, Trigger};

use crate::client::Client;
use crate::error::{ClientError, Result};

/// A flight trigger: the window around `t` (each stream's latest `t_ns`, or `at_ns`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FlightTrigger {
    /// The window before `t`, in ns (the server refuses a negative one or more than an
    /// hour, naming the field).
    pub pre_ns: i64,
    /// The window after `t`, in ns.
    pub post_ns: i64,
    /// Why; recorded as the window episode's `trigger` event.
    pub reason: String,
    /// `EPISODE` or `EPISODE/STREAM` names; empty: every flight stream.
    pub streams: Vec<String>,
    /// `t` on every stream; `None`: each stream's latest `t_ns`.
    pub at_ns: Option<i64>,
}

/// Nanoseconds of `d`, `i64::MAX` when it does not fit (the server then names the field).
fn ns_of(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

impl FlightTrigger {
    /// A trigger of every flight stream with the window `[t - pre, t + post]`.
    #[must_use]
    pub fn new(pre: Duration, post: Duration, reason: impl Into<String>) -> Self {
        Self {
            pre_ns: ns_of(pre),
            post_ns: ns_of(post),
            reason: reason.into(),
            streams: Vec::new(),
            at_ns: None,
        }
    }

    /// Only these streams (`EPISODE` or `EPISODE/STREAM`).
    #[must_use]
    pub fn streams<S: Into<String>>(mut self, streams: impl IntoIterator<Item = S>) -> Self {
        self.streams = streams.into_iter().map(Into::into).collect();
        self
    }

    /// `t` on every stream.
    #[must_use]
    pub fn at_ns(mut self, t_ns: i64) -> Self {
        self.at_ns = Some(t_ns);
        self
    }
}

/// The server's answer to a trigger (`TRIGGERED`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TriggerWindow {
    /// The window episode (a new one, or the pending one the trigger extended).
    pub episode: String,
    /// The trigger extended a window still pending.
    pub merged: bool,
    /// The window's start and end over its streams, on the steps' clock.
    pub window_start_ns: i64,
    pub window_end_ns: i64,
}

impl Client {
    /// Send a flight trigger (`TRIGGER`) and wait for its answer (`TRIGGERED`), which
    /// names the window episode at once; the window's copy runs in the daemon after it.
    /// Any connection past the handshake may trigger, recording or not. Needs a protocol
    /// version 2 connection.
    ///
    /// The outer `Err` is a failure of the connection or of what it records (an `ERROR`
    /// about something sent before, the end of the connection, the timeout); the inner
    /// one the server's refusal of this trigger alone ([`ClientError::Server`] with
    /// `LIMIT` for a negative or too long a window, `NOT_OPEN` when no stream records in
    /// flight mode, `UNKNOWN_EPISODE` for a named stream that does not, `DISK_LOW` while the
    /// quota refuses new windows, `STORAGE`), its
    /// message starting `TRIGGER:`; the connection and its recording carry on.
    pub(crate) fn send_trigger(
        &mut self,
        trigger: &FlightTrigger,
    ) -> Result<Result<TriggerWindow>> {
        self.require_version(FrameType::Trigger)?;
        self.check_usable()?;
        let mine = {
            let mut st = self.shared().lock();
            st.triggers.sent += 1;
            st.triggers.sent - 1
        };
        let frame = Frame::Trigger(Trigger {
            pre_ns: trigger.pre_ns,
            post_ns: trigger.post_ns,
            reason: trigger.reason.clone(),
            streams: trigger.streams.clone(),
            at_ns: trigger.at_ns,
        });
        if let Err(e) = self.send(&frame) {
            let mut st = self.shared().lock();
            st.triggers.sent = st.triggers.sent.min(mine);
            return Err(e);
        }
        let timeout = self.options().timeout;
        let answer = self.shared().wait("TRIGGERED", timeout, |st| {
            st.triggers
                .answers
                .iter()
                .find(|(i, _)| *i == mine)
                .map(|(_, a)| a.clone())
        })?;
        self.shared()
            .lock()
            .triggers
            .answers
            .retain(|(i, _)| *i > mine);
        Ok(answer
            .map(|t| TriggerWindow {
                episode: t.episode,
                merged: t.merged,
                window_start_ns: t.window_start_ns,
                window_end_ns: t.window_end_ns,
            })
            .map_err(|(code, message)| ClientError::Server { code, message }))
    }

    /// Send a flight trigger on this connection (idle, owning an episode or recording):
    /// see [`FlightTrigger`]. Returns the window episode, named at once.
    ///
    /// # Errors
    /// [`ClientError::NeedsVersion`] on a version 1 connection; [`ClientError::Server`]
    /// for the server's refusal (its message starts `TRIGGER:` and names the field or
    /// stream: the connection carries on) or an earlier unreported `ERROR`;
    /// [`ClientError::Closed`], [`ClientError::Io`], [`ClientError::Timeout`].
    pub fn trigger(&mut self, trigger: &FlightTrigger) -> Result<TriggerWindow> {
        self.send_trigger(trigger)?
    }
}
