//! The first state of a connection: nothing is accepted before a `HELLO` of this
//! protocol version.

use wshard_ingest_proto::{ErrorCode, Frame, PROTOCOL_VERSION};

use super::link::{Link, Stop};
use super::request::Incoming;

/// The first frame. `Ok` when it was a `HELLO` this server speaks (answered `HELLO_OK`:
/// the connection is past its handshake); else the `ERROR` was sent and the connection
/// ends.
pub(super) fn on_frame(incoming: Incoming, link: &mut Link) -> Result<(), Stop> {
    let Incoming::Hello {
        version,
        client_name,
    } = incoming
    else {
        link.error(
            ErrorCode::Handshake,
            format!(
                "expected HELLO as the first frame, got {}",
                incoming.frame_type().name()
            ),
        );
        return Err(Stop::Fatal);
    };
    if version != PROTOCOL_VERSION {
        link.error(
            ErrorCode::UnsupportedVersion,
            format!("HELLO protocol_version {version}: this server speaks {PROTOCOL_VERSION}"),
        );
        return Err(Stop::Fatal);
    }
    tracing::info!(peer = %link.peer, client = %client_name, "client connected");
    link.client_name = client_name;
    link.responder.send(&Frame::HelloOk {
        version: PROTOCOL_VERSION,
        server_name: concat!("wshardd/", env!("CARGO_PKG_VERSION")).into(),
        max_frame_bytes: link.ctx.limits.max_frame_bytes,
    });
    Ok(())
}
