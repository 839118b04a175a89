//! Writing server frames to a client socket from any of a session's threads.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::Mutex;

use wshard_ingest_proto::{encode, ErrorCode, Frame};

use crate::session::Responder;

/// The write half of a client connection, shared by the connection, writer and publisher.
#[derive(Debug)]
pub struct SocketResponder {
    stream: Mutex<UnixStream>,
}

impl SocketResponder {
    /// Wrap a clone of the connection's stream.
    #[must_use]
    pub fn new(stream: UnixStream) -> Self {
        Self {
            stream: Mutex::new(stream),
        }
    }

    /// Send one frame. A client that went away is not an error for the daemon: its data
    /// is handled by the session whatever happens to the socket.
    pub fn send(&self, frame: &Frame) {
        let mut buf = Vec::new();
        if encode(frame, &mut buf).is_err() {
            return;
        }
        if let Ok(mut s) = self.stream.lock() {
            let _ = s.write_all(&buf);
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
