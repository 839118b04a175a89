//! The background reader thread and the state it shares with the caller's thread.
//!
//! Server frames (`DURABLE`, `ERROR`, `ACCEPTED`) arrive whenever the server likes, also
//! while the caller is blocked writing a large batch. A dedicated thread reads them, so
//! the socket's receive side never fills up and the server is never blocked on us. It
//! updates [`State`] under a mutex and wakes waiters through a condvar; the caller's hot
//! path (`push`) only reads two atomics.

use std::collections::VecDeque;
use std::io::Read;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use wshard_ingest_proto::{AcceptedWhat, ErrorCode, Frame, FrameDecoder, ProtoError};

use crate::error::ClientError;

/// Largest server frame the client accepts (server frames are small: the largest is an
/// `ERROR` with a 64 KiB message).
pub(crate) const MAX_SERVER_FRAME_BYTES: u32 = 1 << 20;

/// How the reader thread ended.
#[derive(Debug, Clone)]
pub(crate) enum End {
    /// The server closed the connection (or we shut it down).
    Eof,
    Io(std::io::ErrorKind, String),
    Protocol(ProtoError),
    Unexpected(String),
}

/// `HELLO_OK` contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// `protocol_version`: the version the connection speaks (1, or 2 when the client
    /// asked for it and the server speaks it).
    pub version: u16,
    /// `server_name`, e.g. `wshardd/0.1.0`.
    pub server_name: String,
    /// The largest `body_len` the server accepts; batches are kept under it.
    pub max_frame_bytes: u32,
}

#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) hello: Option<ServerInfo>,
    /// Latest `DURABLE.up_to_seq` of the current episode or stream (reset by
    /// `ACCEPTED{OPEN}` and `ACCEPTED{STREAM_OPEN}`).
    pub(crate) durable: u64,
    /// `ACCEPTED{OPEN}` frames seen.
    pub(crate) opens: u64,
    /// `ACCEPTED{STREAM_OPEN}` frames seen.
    pub(crate) stream_opens: u64,
    /// `ACCEPTED{EPISODE_OPEN}` frames seen.
    pub(crate) episode_opens: u64,
    /// `ACCEPTED{EPISODE_CLOSE}` frames seen, and the last one's `up_to_seq` (the streams
    /// still recording).
    pub(crate) episode_closes: u64,
    pub(crate) last_episode_close: u64,
    /// The answers to `EVENT` frames, in order (see [`EventAnswers`]).
    pub(crate) events: EventAnswers,
    /// The answers to `TRIGGER` frames, in order (as [`EventAnswers`]).
    pub(crate) triggers: TriggerAnswers,
    /// `ACCEPTED{SHM_ATTACH}` frames seen.
    pub(crate) shm_attaches: u64,
    /// `ACCEPTED{CLOSE}` frames seen, and the last one's `up_to_seq`.
    pub(crate) closes: u64,
    pub(crate) last_close: u64,
    /// `ERROR` frames not yet returned to the caller.
    pub(crate) errors: VecDeque<(ErrorCode, String)>,
    /// The server finalized the open episode on its own (`ERROR{STOPPED}`: an operator's
    /// `wshard close`, `stop` or `abort`, or the disk's high watermark): it must not be
    /// closed again. Reset by
    /// `ACCEPTED{OPEN}`.
    pub(crate) stopped: bool,
    pub(crate) ended: Option<End>,
}

/// Every `EVENT` is answered by exactly one frame, in the order sent: `ACCEPTED{EVENT}`
/// or an `ERROR` whose message starts with `EVENT` (docs/PROTOCOL.md, "EVENT"). So the
/// n-th answer after the n-th `EVENT` sent is its own, and an `ERROR` about something
/// else (a timestep sent before it) is not taken for the event's.
#[derive(Debug, Default)]
pub(crate) struct EventAnswers {
    /// `EVENT` frames sent (the caller counts them before sending).
    pub(crate) sent: u64,
    /// Answers received.
    pub(crate) answered: u64,
    /// Answers not yet taken by their sender: (index, answer).
    pub(crate) answers: VecDeque<(u64, EventAnswer)>,
}

/// The answer to one `EVENT`: its seq, or the server's refusal (code, message).
pub(crate) type EventAnswer = Result<u64, (ErrorCode, String)>;

impl EventAnswers {
    /// Whether an `ERROR` with `message` answers an `EVENT` sent earlier.
    fn takes_error(&self, message: &str) -> bool {
        self.answered < self.sent && wshard_ingest_proto::is_event_refusal(message)
    }

    fn answer(&mut self, answer: EventAnswer) {
        self.answers.push_back((self.answered, answer));
        self.answered += 1;
    }
}

/// Every `TRIGGER` is answered by exactly one frame, in the order sent: `TRIGGERED` or an
/// `ERROR` whose message starts with `TRIGGER` (docs/PROTOCOL.md, "TRIGGER").
#[derive(Debug, Default)]
pub(crate) struct TriggerAnswers {
    /// `TRIGGER` frames sent (the caller counts them before sending).
    pub(crate) sent: u64,
    /// Answers received.
    pub(crate) answered: u64,
    /// Answers not yet taken by their sender: (index, answer).
    pub(crate) answers: VecDeque<(u64, TriggerAnswer)>,
}

/// The answer to one `TRIGGER`: the window, or the server's refusal (code, message).
pub(crate) type TriggerAnswer = Result<wshard_ingest_proto::Triggered, (ErrorCode, String)>;

impl TriggerAnswers {
    /// Whether an `ERROR` with `message` answers a `TRIGGER` sent earlier.
    fn takes_error(&self, message: &str) -> bool {
        self.answered < self.sent && wshard_ingest_proto::is_trigger_refusal(message)
    }

    fn answer(&mut self, answer: TriggerAnswer) {
        self.answers.push_back((self.answered, answer));
        self.answered += 1;
    }
}

#[derive(Debug, Default)]
pub(crate) struct Shared {
    state: Mutex<State>,
    cv: Condvar,
    /// Fast-path flags mirrored from `State` for `push`.
    pub(crate) error_pending: AtomicBool,
    pub(crate) ended: AtomicBool,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means the reader panicked mid-update; the state is still
        // the best information there is.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Pop the oldest unreturned server `ERROR`.
    pub(crate) fn take_error(&self) -> Option<ClientError> {
        if !self.error_pending.load(Ordering::Acquire) {
            return None;
        }
        let mut st = self.lock();
        let e = st.errors.pop_front();
        self.error_pending
            .store(!st.errors.is_empty(), Ordering::Release);
        e.map(|(code, message)| ClientError::Server { code, message })
    }

    /// Wait until `ready` yields a value. While it does not, a server `ERROR` ends the wait
    /// (and is returned), as do the end of the connection and the timeout. `ready` is
    /// checked first: what the server acknowledged stays acknowledged, and an `ERROR` that
    /// came with or after the awaited answer is left for the next call.
    pub(crate) fn wait<T>(
        &self,
        what: &'static str,
        timeout: Option<Duration>,
        mut ready: impl FnMut(&State) -> Option<T>,
    ) -> Result<T, ClientError> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut st = self.lock();
        loop {
            if let Some(v) = ready(&st) {
                return Ok(v);
            }
            if let Some((code, message)) = st.errors.pop_front() {
                self.error_pending
                    .store(!st.errors.is_empty(), Ordering::Release);
                return Err(ClientError::Server { code, message });
            }
            if let Some(end) = &st.ended {
                return Err(end_error(end));
            }
            st = match deadline {
                None => self
                    .cv
                    .wait(st)
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Err(ClientError::Timeout(what));
                    }
                    self.cv
                        .wait_timeout(st, d - now)
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .0
                }
            };
        }
    }

    /// Wait (at most `timeout`) for the reader to finish, e.g. after a failed write, so the
    /// server's last `ERROR` can be reported instead of a bare `EPIPE`.
    pub(crate) fn wait_end(&self, timeout: Duration) {
        let st = self.lock();
        // Queued ERRORs stay queued for `take_error`.
        let _ = self
            .cv
            .wait_timeout_while(st, timeout, |st| st.ended.is_none());
    }
}

/// The error for a connection that ended.
pub(crate) fn end_error(end: &End) -> ClientError {
    match end {
        End::Eof => ClientError::Closed,
        End::Io(kind, msg) => ClientError::Io(std::io::Error::new(*kind, msg.clone())),
        End::Protocol(e) => ClientError::Protocol(e.clone()),
        End::Unexpected(m) => ClientError::Unexpected(m.clone()),
    }
}

/// Body of the reader thread: read, decode, update, notify; until EOF or an error.
pub(crate) fn run(mut stream: UnixStream, shared: Arc<Shared>) {
    // Every server frame of every version is known: a server sends only the frames of the
    // version its HELLO_OK answered (`TRIGGERED` only after a version 2 `TRIGGER`).
    let mut dec = FrameDecoder::new(MAX_SERVER_FRAME_BYTES)
        .with_protocol_version(wshard_ingest_proto::ProtocolVersion::V2);
    let end = loop {
        let n = match stream.read(dec.buffer_mut()) {
            Ok(0) => break End::Eof,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => break End::Io(e.kind(), e.to_string()),
        };
        dec.commit(n);
        let mut st = shared.lock();
        let mut stop = None;
        loop {
            match dec.next_frame() {
                Ok(None) => break,
                Ok(Some(frame)) => {
                    if let Err(end) = apply(&mut st, &shared, frame) {
                        stop = Some(end);
                        break;
                    }
                }
                Err(e) => {
                    stop = Some(End::Protocol(e));
                    break;
                }
            }
        }
        drop(st);
        shared.cv.notify_all();
        if let Some(end) = stop {
            let _ = stream.shutdown(std::net::Shutdown::Both);
            break end;
        }
    };
    shared.lock().ended = Some(end);
    shared.ended.store(true, Ordering::Release);
    shared.cv.notify_all();
}

fn apply(st: &mut State, shared: &Shared, frame: Frame) -> Result<(), End> {
    match frame {
        Frame::HelloOk {
            version,
            server_name,
            max_frame_bytes,
        } => {
            st.hello = Some(ServerInfo {
                version,
                server_name,
                max_frame_bytes,
            });
        }
        Frame::Accepted {
            what: AcceptedWhat::Open,
            ..
        } => {
            st.opens += 1;
            st.durable = 0;
            st.stopped = false;
        }
        Frame::Accepted {
            what: AcceptedWhat::StreamOpen,
            ..
        } => {
            st.stream_opens += 1;
            st.durable = 0;
            st.stopped = false;
        }
        Frame::Accepted {
            what: AcceptedWhat::EpisodeOpen,
            ..
        } => st.episode_opens += 1,
        Frame::Accepted {
            what: AcceptedWhat::EpisodeClose,
            up_to_seq,
        } => {
            st.episode_closes += 1;
            st.last_episode_close = up_to_seq;
        }
        Frame::Accepted {
            what: AcceptedWhat::Event,
            up_to_seq,
        } => st.events.answer(Ok(up_to_seq)),
        Frame::Error { code, message } if st.events.takes_error(&message) => {
            st.events.answer(Err((code, message)));
        }
        Frame::Triggered(t) => st.triggers.answer(Ok(t)),
        Frame::Error { code, message } if st.triggers.takes_error(&message) => {
            st.triggers.answer(Err((code, message)));
        }
        Frame::Accepted {
            what: AcceptedWhat::ShmAttach,
            ..
        } => st.shm_attaches += 1,
        Frame::Accepted {
            what: AcceptedWhat::Close,
            up_to_seq,
        } => {
            st.closes += 1;
            st.last_close = up_to_seq;
        }
        Frame::Durable { up_to_seq } => st.durable = st.durable.max(up_to_seq),
        Frame::Error { code, message } => {
            if code == ErrorCode::Stopped {
                st.stopped = true;
            }
            st.errors.push_back((code, message));
            shared.error_pending.store(true, Ordering::Release);
        }
        other => {
            return Err(End::Unexpected(format!(
                "{} is a client-to-server frame",
                other.frame_type().name()
            )))
        }
    }
    Ok(())
}
