//! Writing server frames to a client socket from any of a session's threads.

use std::io::{ErrorKind, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wshard_ingest_proto::{encode, ErrorCode, Frame};

use crate::registry::Registry;
use crate::session::Responder;

/// How long one frame may take to write before the client counts as gone. A client that
/// does not read its socket would otherwise block the episode's writer thread (in a
/// `DURABLE`) forever, and with it the episode, its connection and a graceful shutdown.
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// After [`WRITE_TIMEOUT`]: how long the rest of the frame that timed out and the
/// `ERROR{TIMEOUT}` after it may take, once the socket's send buffer was enlarged to make
/// room for them.
pub(crate) const LAST_WORD_TIMEOUT: Duration = Duration::from_secs(1);

/// The write half of a client connection, shared by the connection, writer and finisher.
#[derive(Debug)]
pub(crate) struct SocketResponder {
    stream: Mutex<UnixStream>,
    /// A write failed: nothing more is sent.
    broken: AtomicBool,
    /// The write failed on [`WRITE_TIMEOUT`]: the client did not read its socket.
    timed_out: AtomicBool,
    /// Where a write timeout is counted (`connections_cut_write`); `None` for the
    /// listener's one-frame refusals.
    registry: Option<Arc<Registry>>,
}

impl SocketResponder {
    /// Wrap a clone of the connection's stream (writes time out after [`WRITE_TIMEOUT`]).
    #[must_use]
    pub(crate) fn new(stream: UnixStream) -> Self {
        let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
        Self {
            stream: Mutex::new(stream),
            broken: AtomicBool::new(false),
            timed_out: AtomicBool::new(false),
            registry: None,
        }
    }

    /// [`SocketResponder::new`] for a served connection: a write timeout is counted in
    /// `registry`'s `connections_cut_write`.
    #[must_use]
    pub(crate) fn counted(stream: UnixStream, registry: Arc<Registry>) -> Self {
        Self {
            registry: Some(registry),
            ..Self::new(stream)
        }
    }

    /// True once a write timed out ([`WRITE_TIMEOUT`]): the client did not read its socket
    /// and the connection was shut down.
    #[must_use]
    pub(crate) fn write_timed_out(&self) -> bool {
        self.timed_out.load(Ordering::Acquire)
    }

    /// Send one frame. A client that went away is not an error for the daemon: its data
    /// is handled by the session whatever happens to the socket. When a write fails (the
    /// client is gone, or has not read for [`WRITE_TIMEOUT`]) the connection is shut down:
    /// its reader sees the end of the stream and the episode is finalized `interrupted`.
    /// A client that did not read gets the rest of the frame and an `ERROR{TIMEOUT}` first
    /// when the kernel lets the send buffer grow (see `last_word`).
    pub(crate) fn send(&self, frame: &Frame) {
        if self.broken.load(Ordering::Acquire) {
            return;
        }
        let mut buf = Vec::new();
        if encode(frame, &mut buf).is_err() {
            return;
        }
        let Ok(mut s) = self.stream.lock() else {
            return;
        };
        let mut written = 0;
        while written < buf.len() {
            match s.write(&buf[written..]) {
                Ok(0) => {
                    self.give_up(&mut s, &std::io::Error::from(ErrorKind::WriteZero), &[]);
                    return;
                }
                Ok(n) => written += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    self.give_up(&mut s, &e, &buf[written..]);
                    return;
                }
            }
        }
    }

    /// A write failed with `e`, `rest` of the frame unsent: stop sending, shut the
    /// connection down; when the client did not read, try to tell it first.
    fn give_up(&self, s: &mut UnixStream, e: &std::io::Error, rest: &[u8]) {
        self.broken.store(true, Ordering::Release);
        if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
            self.timed_out.store(true, Ordering::Release);
            if let Some(r) = &self.registry {
                r.counters
                    .connections_cut_write
                    .fetch_add(1, Ordering::Relaxed);
            }
            match last_word(s, rest) {
                Ok(()) => tracing::warn!(
                    "closing a connection: the client has not read its socket for \
                     {WRITE_TIMEOUT:?} (ERROR TIMEOUT sent)"
                ),
                Err(e) => tracing::warn!(
                    "closing a connection: the client has not read its socket for \
                     {WRITE_TIMEOUT:?}; the ERROR TIMEOUT could not be delivered: {e}"
                ),
            }
        } else {
            tracing::debug!("client connection gone: {e}");
        }
        let _ = s.shutdown(std::net::Shutdown::Both);
    }

    /// Send an ERROR frame.
    pub(crate) fn error(&self, code: ErrorCode, message: impl Into<String>) {
        self.send(&Frame::error(code, message));
    }
}

/// The `ERROR{TIMEOUT}` message for a client that did not read its socket.
#[must_use]
pub(crate) fn write_timeout_message() -> String {
    format!(
        "the client did not read its socket for {} ms (the server's write timeout): \
         connection closed; an open episode is finalized interrupted, and everything \
         acknowledged DURABLE stays durable",
        WRITE_TIMEOUT.as_millis()
    )
}

/// Deliver `rest` (the unsent end of the frame whose write timed out, so the stream stays
/// parseable) and an `ERROR{TIMEOUT}` to a client that does not read. Its receive queue is
/// full, so the socket's send buffer is enlarged first by what they need (Linux lets any
/// process raise `SO_SNDBUF` up to `net.core.wmem_max`, and counts twice the value set; a
/// default-sized socket can therefore grow), then they are written within
/// [`LAST_WORD_TIMEOUT`]. The client reads them whenever it reads again, before the end of
/// the stream.
///
/// # Errors
/// The write error when the buffer could not grow enough and the client still did not
/// read.
fn last_word(s: &mut UnixStream, rest: &[u8]) -> std::io::Result<()> {
    use nix::sys::socket::{getsockopt, setsockopt, sockopt::SndBuf};
    let mut error = Vec::new();
    encode(
        &Frame::error(ErrorCode::Timeout, write_timeout_message()),
        &mut error,
    )
    .map_err(std::io::Error::other)?;
    if let Ok(now) = getsockopt(&*s, SndBuf) {
        // The kernel accounts each write's buffer overhead too: ask for plenty more.
        let want = now
            .saturating_add(rest.len() + error.len())
            .saturating_mul(2);
        let _ = setsockopt(&*s, SndBuf, &want);
    }
    s.set_write_timeout(Some(LAST_WORD_TIMEOUT))?;
    s.write_all(rest)?;
    s.write_all(&error)
}

impl Responder for SocketResponder {
    fn durable(&self, up_to_seq: u64) {
        self.send(&Frame::Durable { up_to_seq });
    }

    fn storage_failed(&self, message: &str) {
        self.error(ErrorCode::Storage, format!("episode failed on storage, nothing more is accepted (what was DURABLE stays durable): {message}"));
    }
}
