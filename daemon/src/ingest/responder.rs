//! Writing server frames to a client socket from any of a session's threads.

use std::io::{ErrorKind, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use wshard_ingest_proto::{encode, ErrorCode, Frame};

use crate::session::Responder;

/// How long one frame may take to write before the client counts as gone. A client that
/// does not read its socket would otherwise block the episode's writer thread (in a
/// `DURABLE`) forever, and with it the episode, its connection and a graceful shutdown.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// The write half of a client connection, shared by the connection, writer and publisher.
#[derive(Debug)]
pub struct SocketResponder {
    stream: Mutex<UnixStream>,
    /// A write failed: the stream may hold half a frame, nothing more is sent.
    broken: AtomicBool,
}

impl SocketResponder {
    /// Wrap a clone of the connection's stream (writes time out after [`WRITE_TIMEOUT`]).
    #[must_use]
    pub fn new(stream: UnixStream) -> Self {
        let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
        Self {
            stream: Mutex::new(stream),
            broken: AtomicBool::new(false),
        }
    }

    /// Send one frame. A client that went away is not an error for the daemon: its data
    /// is handled by the session whatever happens to the socket. When a write fails (the
    /// client is gone, or has not read for [`WRITE_TIMEOUT`]) the connection is shut down:
    /// its reader sees the end of the stream and the episode is finalized `interrupted`.
    pub fn send(&self, frame: &Frame) {
        if self.broken.load(Ordering::Acquire) {
            return;
        }
        let mut buf = Vec::new();
        if encode(frame, &mut buf).is_err() {
            return;
        }
        if let Ok(mut s) = self.stream.lock() {
            if let Err(e) = s.write_all(&buf) {
                self.broken.store(true, Ordering::Release);
                let _ = s.shutdown(std::net::Shutdown::Both);
                if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
                    tracing::warn!(
                        "dropping a client that has not read its socket for {WRITE_TIMEOUT:?}"
                    );
                } else {
                    tracing::debug!("client connection gone: {e}");
                }
            }
        }
    }

    /// Send an ERROR frame.
    pub fn error(&self, code: ErrorCode, message: impl Into<String>) {
        self.send(&Frame::error(code, message));
    }
}

impl Responder for SocketResponder {
    fn durable(&self, up_to_seq: u64) {
        self.send(&Frame::Durable { up_to_seq });
    }

    fn storage_failed(&self, message: &str) {
        self.error(ErrorCode::Storage, format!("episode failed on storage, nothing more is accepted (what was DURABLE stays durable): {message}"));
    }
}
