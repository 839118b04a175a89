//! The control socket's accept loop and request handling: a thread per connection (at most
//! [`MAX_CONNECTIONS`] at once), one bounded request read before a deadline, the peer's
//! `SO_PEERCRED` checked against the verb's allowlist, one reply, close.

use std::io::Write;
use std::net::Shutdown;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::accept::AcceptLoop;
use super::close::Ending;
use super::protocol::{
    ok_reply, parse_request, ControlError, ErrorKind, Request, MAX_REQUEST_BYTES,
};
use super::request_io::{drain, read_request, ReadFailure, READ_SLICE};
use super::state::ControlState;
use super::{annotate, close, episodes, keep, metrics, split, status, upload_verb};
use crate::ingest::connection::peer_cred;
use crate::registry::PeerCred;

/// Control connections served at once; more are answered `BUSY`.
pub const MAX_CONNECTIONS: usize = 16;
/// How long a client has to send its request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long writing the reply may block.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// After the reply, unread input is discarded up to this much, for at most this long.
const DRAIN_BYTES: usize = 1 << 20;
const DRAIN_TIME: Duration = Duration::from_millis(500);

/// Accept on `listener` until the daemon shuts down, then wait for the connections being
/// served (each is bounded by [`REQUEST_TIMEOUT`] and its verb's own timeout).
pub fn serve(listener: &UnixListener, st: &Arc<ControlState>) {
    if let Err(e) = listener.set_nonblocking(true) {
        tracing::error!("control socket unusable (set nonblocking): {e}");
        return;
    }
    let st2 = st.clone();
    AcceptLoop {
        name: "control",
        max: MAX_CONNECTIONS,
        shutdown: &st.ctx.shutdown,
        accept: &|| listener.accept().map(|(s, _)| s),
        refuse: &|stream| {
            let e = ControlError::new(
                ErrorKind::Busy,
                None,
                format!("{MAX_CONNECTIONS} control requests in progress; try again"),
            );
            reply_error(stream, &e);
        },
    }
    .run(move |stream| handle(stream, &st2));
}

fn reply_error(stream: UnixStream, e: &ControlError) {
    let mut stream = stream;
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    let _ = writeln!(stream, "{}", e.to_json());
}

/// Serve one control connection: read, check, answer, close. Never panics on input.
fn handle(mut stream: UnixStream, st: &Arc<ControlState>) {
    let setup = stream
        .set_nonblocking(false)
        .and_then(|()| stream.set_read_timeout(Some(READ_SLICE)))
        .and_then(|()| stream.set_write_timeout(Some(WRITE_TIMEOUT)));
    if let Err(e) = setup {
        tracing::warn!("control connection unusable: {e}");
        return;
    }
    let cred = peer_cred(&stream);
    let reply = match read_request(&mut stream, b"\n", MAX_REQUEST_BYTES, REQUEST_TIMEOUT) {
        Ok(line) => respond(st, &line, cred.as_ref()),
        Err(ReadFailure::Closed) => return,
        Err(ReadFailure::Io(e)) => {
            tracing::debug!("control connection: read failed: {e}");
            return;
        }
        Err(ReadFailure::TooLarge { max }) => Err(ControlError::new(
            ErrorKind::RequestTooLarge,
            None,
            format!(
                "no newline within {max} bytes: a request is one JSON line of at most {max} bytes"
            ),
        )
        .with("max_bytes", json!(max))),
        Err(ReadFailure::TimedOut { after }) => Err(ControlError::new(
            ErrorKind::RequestTimeout,
            None,
            format!("no complete request line within {} ms", after.as_millis()),
        )),
    };
    let text = match reply {
        Ok(text) => text,
        Err(e) => {
            tracing::debug!(
                code = e.kind.code(),
                "control request refused: {}",
                e.message
            );
            format!("{}\n", e.to_json())
        }
    };
    if let Err(e) = stream
        .write_all(text.as_bytes())
        .and_then(|()| stream.flush())
    {
        tracing::debug!("control connection: writing the reply failed: {e}");
        return;
    }
    let _ = stream.shutdown(Shutdown::Write);
    drain(&mut stream, DRAIN_BYTES, DRAIN_TIME);
}

/// The reply text to one request line from a peer with `cred`.
///
/// # Errors
/// The [`ControlError`] to send instead.
pub fn respond(
    st: &Arc<ControlState>,
    line: &[u8],
    cred: Option<&PeerCred>,
) -> Result<String, ControlError> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let req = parse_request(line)?;
    check_access(st, &req, cred)?;
    let verb = req.verb();
    let doc = match req {
        Request::Metrics => return Ok(metrics::render(st, metrics::Format::Prometheus)),
        Request::Status => ok_reply(verb, status::snapshot(st)),
        Request::Episodes => ok_reply(verb, episodes::list(st)),
        Request::Annotate(a) => {
            // check_access refuses `annotate` without credentials.
            let uid = cred.map_or(u32::MAX, |c| c.uid);
            ok_reply(verb, annotate::annotate(st, a, uid)?)
        }
        Request::Trigger(t) => ok_reply(verb, super::trigger::trigger(st, &t)?),
        Request::Close {
            episode,
            timeout_ms,
        } => {
            // check_access refuses `close` without credentials.
            let uid = cred.map_or(u32::MAX, |c| c.uid);
            ok_reply(
                verb,
                close::close(st, &episode, uid, Duration::from_millis(timeout_ms))?,
            )
        }
        Request::Stop {
            episode,
            timeout_ms,
        } => {
            // check_access refuses the mutating verbs without credentials.
            let uid = cred.map_or(u32::MAX, |c| c.uid);
            let timeout = Duration::from_millis(timeout_ms);
            ok_reply(verb, close::end(st, &episode, uid, timeout, Ending::Stop)?)
        }
        Request::Abort {
            episode,
            timeout_ms,
        } => {
            let uid = cred.map_or(u32::MAX, |c| c.uid);
            let timeout = Duration::from_millis(timeout_ms);
            ok_reply(verb, close::end(st, &episode, uid, timeout, Ending::Abort)?)
        }
        Request::Keep { episode, release } => {
            let uid = cred.map_or(u32::MAX, |c| c.uid);
            ok_reply(verb, keep::keep(st, &episode, release, uid)?)
        }
        Request::Upload { action, episode } => {
            let uid = cred.map_or(u32::MAX, |c| c.uid);
            ok_reply(
                verb,
                upload_verb::upload(st, action, episode.as_deref(), uid)?,
            )
        }
        Request::Split { episode } => {
            // check_access refuses `split` without credentials.
            let uid = cred.map_or(u32::MAX, |c| c.uid);
            ok_reply(verb, split::split(st, &episode, uid)?)
        }
    };
    Ok(format!("{doc}\n"))
}

fn check_access(
    st: &ControlState,
    req: &Request,
    cred: Option<&PeerCred>,
) -> Result<(), ControlError> {
    let allowed = st.ctx.access.read().is_ok_and(|p| {
        if req.is_mutating() {
            p.allows_admin(cred)
        } else {
            p.allows_ingest(cred)
        }
    });
    if allowed {
        return Ok(());
    }
    let verb = req.verb();
    let who = cred.map_or_else(
        || "a peer without credentials".to_owned(),
        |c| format!("uid {} (gid {}, pid {})", c.uid, c.gid, c.pid),
    );
    let list = if req.is_mutating() {
        "root, the daemon's uid or gid, control.admin_uids or control.admin_gids"
    } else {
        "root, the daemon's uid, access.allow_uids or access.allow_gids"
    };
    tracing::warn!(verb, peer = %who, "control: permission denied");
    Err(ControlError::new(
        ErrorKind::PermissionDenied,
        Some(verb),
        format!("verb `{verb}` refused for {who}: allowed are {list}"),
    )
    .with("uid", json!(cred.map(|c| c.uid)))
    .with("gid", json!(cred.map(|c| c.gid))))
}
