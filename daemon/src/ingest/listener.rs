//! Accepting connections on the ingest socket, one thread each, up to
//! `limits.max_connections` in all and `limits.max_connections_per_uid` per peer uid.

use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use wshard_ingest_proto::{ErrorCode, Frame};

use super::connection;
use super::responder::SocketResponder;
use super::slots::{UidLimitReached, UidSlots};
use crate::registry::PeerCred;
use crate::runtime::ServerContext;

/// How often the accept loop looks at the shutdown flag.
const ACCEPT_POLL: Duration = Duration::from_millis(50);

/// Accept until shutdown, then wait for every connection to finish its episode.
pub(crate) fn accept_loop(listener: &UnixListener, ctx: &Arc<ServerContext>) {
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    // The connections each peer uid holds (`limits.max_connections_per_uid`).
    let uid_slots = Arc::new(UidSlots::default());
    let mut n: u64 = 0;
    while !ctx.shutdown.load(Ordering::Acquire) {
        match listener.accept() {
            Ok((stream, _)) => {
                n += 1;
                threads.retain(|t| !t.is_finished());
                let cred = connection::peer_cred(&stream);
                let allowed = ctx
                    .access
                    .read()
                    .is_ok_and(|a| a.allows_ingest(cred.as_ref()));
                if !allowed {
                    ctx.registry
                        .counters
                        .connections_refused
                        .fetch_add(1, Ordering::Relaxed);
                    refuse_peer(stream, cred);
                    continue;
                }
                let (max, per_uid) = ctx.tunables.read().map_or(
                    (ctx.limits.max_connections, ctx.limits.max_connections),
                    |t| (t.max_connections, t.max_connections_per_uid),
                );
                if ctx.active_connections.load(Ordering::Acquire) >= max {
                    ctx.registry
                        .counters
                        .connections_refused
                        .fetch_add(1, Ordering::Relaxed);
                    refuse(stream, max);
                    continue;
                }
                let slot = match uid_slots.take(cred.map(|c| c.uid), per_uid) {
                    Ok(slot) => slot,
                    Err(full) => {
                        ctx.registry
                            .counters
                            .connections_refused
                            .fetch_add(1, Ordering::Relaxed);
                        refuse_uid(stream, full);
                        continue;
                    }
                };
                ctx.registry
                    .counters
                    .connections_accepted
                    .fetch_add(1, Ordering::Relaxed);
                if let Err(e) = stream.set_nonblocking(false) {
                    tracing::warn!("accepted connection unusable: {e}");
                    continue;
                }
                ctx.active_connections.fetch_add(1, Ordering::AcqRel);
                let c = ctx.clone();
                let peer = format!("conn-{n}");
                let spawned = std::thread::Builder::new()
                    .name(peer.clone())
                    .spawn(move || {
                        connection::serve(stream, &c, &peer);
                        drop(slot);
                        c.active_connections.fetch_sub(1, Ordering::AcqRel);
                    });
                match spawned {
                    Ok(t) => threads.push(t),
                    Err(e) => {
                        ctx.active_connections.fetch_sub(1, Ordering::AcqRel);
                        tracing::error!("cannot start a connection thread: {e}");
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(ACCEPT_POLL),
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                std::thread::sleep(ACCEPT_POLL);
            }
        }
    }
    for t in threads {
        let _ = t.join();
    }
}

fn refuse(stream: UnixStream, max: usize) {
    tracing::warn!(max, "refusing a connection: limits.max_connections reached");
    let r = SocketResponder::new(stream);
    r.send(&Frame::error(
        ErrorCode::Overloaded,
        format!("limits.max_connections ({max}) reached; try again later"),
    ));
}

/// Refuse a peer whose uid holds `limits.max_connections_per_uid` connections already.
fn refuse_uid(stream: UnixStream, full: UidLimitReached) {
    let UidLimitReached { uid, held, limit } = full;
    tracing::warn!(
        uid,
        limit,
        "refusing a connection: limits.max_connections_per_uid reached for this uid"
    );
    let r = SocketResponder::new(stream);
    r.send(&Frame::error(
        ErrorCode::Overloaded,
        format!(
            "limits.max_connections_per_uid ({limit}) reached: uid {uid} holds {held} \
             connections already; close one of them or try again later"
        ),
    ));
}

/// Refuse a peer the `[access]` allowlists do not name: `ERROR{PERMISSION_DENIED}` saying
/// who it is and which keys would let it in, then close.
fn refuse_peer(stream: UnixStream, cred: Option<PeerCred>) {
    let message = match cred {
        Some(c) => {
            tracing::warn!(
                uid = c.uid,
                gid = c.gid,
                pid = c.pid,
                "refusing a connection: uid and gid not in access.allow_uids / access.allow_gids"
            );
            format!(
                "permission denied: uid {} (gid {}) may not use this socket; \
                 add the uid to access.allow_uids or the gid to access.allow_gids",
                c.uid, c.gid
            )
        }
        None => {
            tracing::warn!("refusing a connection: peer credentials unknown and access.allow_uids / access.allow_gids are set");
            "permission denied: the peer's credentials (SO_PEERCRED) are unknown and \
             access.allow_uids / access.allow_gids are set"
                .to_owned()
        }
    };
    let r = SocketResponder::new(stream);
    r.send(&Frame::error(ErrorCode::PermissionDenied, message));
}
