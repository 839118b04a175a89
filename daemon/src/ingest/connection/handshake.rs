//! The first state of a connection: nothing is accepted before a `HELLO`; the connection
//! then speaks the lower of the client's protocol version and the newest (2).

use wshard_ingest_proto::{ErrorCode, Frame, ProtocolVersion, PROTOCOL_VERSION};

use super::link::{Link, Stop};
use super::request::Incoming;

/// The first frame. `Ok` when it was a `HELLO` of a version this server can answer
/// (answered `HELLO_OK` with the version the connection speaks: the connection is past its
/// handshake); else the `ERROR` was sent and the connection ends.
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
    // The lower of the client's version and ours: a version 1 client gets exactly a
    // version 1 server.
    let Some(spoken) = ProtocolVersion::negotiate(version) else {
        link.error(
            ErrorCode::UnsupportedVersion,
            format!(
                "HELLO protocol_version {version}: this server speaks {PROTOCOL_VERSION} and {}",
                ProtocolVersion::NEWEST
            ),
        );
        return Err(Stop::Fatal);
    };
    tracing::info!(peer = %link.peer, client = %client_name, version = %spoken, "client connected");
    link.client_name = client_name;
    link.version = spoken;
    link.responder.send(&Frame::HelloOk {
        version: spoken.code(),
        server_name: concat!("wshardd/", env!("CARGO_PKG_VERSION")).into(),
        max_frame_bytes: link.ctx.limits.max_frame_bytes,
    });
    Ok(())
}
