//! What a connection's state handlers act through: the server, the way back to the client,
//! and who the client is.

use std::sync::Arc;

use wshard_ingest_proto::{ErrorCode, ProtocolVersion};

use crate::ingest::fds::FdQueue;
use crate::ingest::responder::SocketResponder;
use crate::multi::MultiEpisode;
use crate::registry::PeerCred;
use crate::runtime::ServerContext;

/// One connection's side of the server, shared by its state handlers.
pub(super) struct Link {
    pub(super) ctx: Arc<ServerContext>,
    pub(super) responder: Arc<SocketResponder>,
    /// The connection's name in logs (`conn-N`).
    pub(super) peer: String,
    pub(super) cred: Option<PeerCred>,
    /// From HELLO.
    pub(super) client_name: String,
    /// File descriptors received on the socket, for the next `SHM_ATTACH`.
    pub(super) fds: FdQueue,
    /// The protocol version the connection speaks (from the handshake).
    pub(super) version: ProtocolVersion,
    /// The multi-stream episode this connection owns (version 2: `EPISODE_OPEN`), until
    /// its `EPISODE_CLOSE`, or until someone else closed it.
    pub(super) owned: Option<Arc<MultiEpisode>>,
}

impl Link {
    /// Send `ERROR{code}` with `message`.
    pub(super) fn error(&self, code: ErrorCode, message: impl Into<String>) {
        self.responder.error(code, message);
    }
}

/// Why a connection's read loop stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stop {
    /// The client closed its end.
    Eof,
    /// The stream can no longer be parsed, or the client broke the handshake.
    Fatal,
    /// The daemon is shutting down.
    Shutdown,
    /// A deadline of a connection without an open episode passed (`ERROR{TIMEOUT}` sent).
    Deadline,
}
