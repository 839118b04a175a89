//! What a connection's state handlers act through: the server, the way back to the client,
//! and who the client is.

use std::sync::{Arc, Weak};

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
    /// The multi-stream episode this connection closed last (`EPISODE_CLOSE`) while
    /// streams still recorded: the owner's events go to it until it is finalized.
    pub(super) closing: Option<Closing>,
}

/// An episode its owner closed while streams still record (it finalizes when the last one
/// ends). Held weakly: the connection does not keep a finalized episode alive.
pub(super) struct Closing {
    pub(super) id: String,
    pub(super) episode: Weak<MultiEpisode>,
}

impl Closing {
    /// The episode while it is not finalized.
    pub(super) fn episode(&self) -> Option<Arc<MultiEpisode>> {
        self.episode.upgrade().filter(|e| !e.is_finalized())
    }
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
