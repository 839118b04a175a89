//! Talking to the ROS bridge's control socket (`wshard-ros-bridge --bridge-socket PATH`):
//! one JSON request line per connection, one JSON reply line, with a deadline on every
//! step. The protocol is the bridge's (ingest-adapters/ros/README.md, and docs/CLI.md
//! "wshard bridge").

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use wshard::IoError;

/// Where the bridge socket is when neither `--bridge-socket` nor [`BRIDGE_SOCKET_ENV`]
/// says.
pub const DEFAULT_BRIDGE_SOCKET: &str = "/run/wshardd/ros-bridge.sock";

/// The environment variable naming the bridge socket (below `--bridge-socket`).
pub const BRIDGE_SOCKET_ENV: &str = "WSHARD_BRIDGE_SOCKET";

/// Largest reply read (a status of many topics is far below).
pub const MAX_REPLY_BYTES: u64 = 1 << 20;

/// Why a request to the bridge got no usable reply.
#[derive(Debug, thiserror::Error)]
pub enum BridgeClientError {
    /// No socket file.
    #[error(
        "cannot connect to the ROS bridge socket {}: there is no socket file: is \
         wshard-ros-bridge running, with --bridge-socket {}? (set the path with \
         --bridge-socket or ${BRIDGE_SOCKET_ENV})", path.display(), path.display()
    )]
    NoSocket { path: PathBuf },
    /// A socket file nothing listens on.
    #[error(
        "cannot connect to the ROS bridge socket {}: the socket file exists but nothing \
         listens on it (a stale file left by a bridge that stopped): is wshard-ros-bridge \
         running?", path.display()
    )]
    Stale { path: PathBuf },
    /// The socket file (or a directory on the way) refused this user.
    #[error(
        "cannot connect to the ROS bridge socket {}: {source}; the bridge creates it with \
         mode 0660: run as its user or be in its group", path.display()
    )]
    Refused {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Any other failure to connect, send or read.
    #[error("ROS bridge socket {}: {}: {}", .0.path.display(), .0.op, .0.source)]
    Io(#[source] IoError),
    /// No whole reply line within the timeout.
    #[error(
        "ROS bridge socket {}: no reply within {} ms (the bridge may be busy or hung; \
         see --timeout-ms)", path.display(), timeout.as_millis()
    )]
    Timeout { path: PathBuf, timeout: Duration },
    /// The reply is not a JSON object with a boolean `ok`.
    #[error("ROS bridge socket {}: the reply is not the bridge's JSON ({detail})", path.display())]
    BadReply { path: PathBuf, detail: String },
}

/// The bridge socket: `explicit`, else `$WSHARD_BRIDGE_SOCKET` (non-empty), else
/// [`DEFAULT_BRIDGE_SOCKET`].
#[must_use]
pub fn bridge_socket_path(explicit: Option<&Path>) -> PathBuf {
    if let Some(p) = explicit {
        return p.to_path_buf();
    }
    match std::env::var_os(BRIDGE_SOCKET_ENV) {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => PathBuf::from(DEFAULT_BRIDGE_SOCKET),
    }
}

fn connect(path: &Path) -> Result<UnixStream, BridgeClientError> {
    UnixStream::connect(path).map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => BridgeClientError::NoSocket {
            path: path.to_path_buf(),
        },
        io::ErrorKind::ConnectionRefused => BridgeClientError::Stale {
            path: path.to_path_buf(),
        },
        io::ErrorKind::PermissionDenied => BridgeClientError::Refused {
            path: path.to_path_buf(),
            source,
        },
        _ => BridgeClientError::Io(IoError::new("connect", path, source)),
    })
}

fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Send `request` (one line) to the bridge at `path` and read its one reply line, each
/// step within `timeout`. The reply must be a JSON object whose `ok` is a boolean.
///
/// # Errors
/// [`BridgeClientError`] naming the socket and what went wrong.
pub fn request(
    path: &Path,
    request: &Value,
    timeout: Duration,
) -> Result<Value, BridgeClientError> {
    let io_err = |op, source| BridgeClientError::Io(IoError::new(op, path, source));
    let timeout_err = || BridgeClientError::Timeout {
        path: path.to_path_buf(),
        timeout,
    };
    let mut s = connect(path)?;
    s.set_read_timeout(Some(timeout))
        .and_then(|()| s.set_write_timeout(Some(timeout)))
        .map_err(|e| io_err("set timeouts", e))?;
    let line = format!("{request}\n");
    s.write_all(line.as_bytes()).map_err(|e| {
        if timed_out(&e) {
            timeout_err()
        } else {
            io_err("send the request", e)
        }
    })?;
    let mut reader = BufReader::new(s.take(MAX_REPLY_BYTES));
    let mut buf = Vec::new();
    reader.read_until(b'\n', &mut buf).map_err(|e| {
        if timed_out(&e) {
            timeout_err()
        } else {
            io_err("read the reply", e)
        }
    })?;
    let bad = |detail: String| BridgeClientError::BadReply {
        path: path.to_path_buf(),
        detail,
    };
    if buf.is_empty() {
        return Err(bad(
            "the bridge closed the connection without a reply".into()
        ));
    }
    if buf.last() != Some(&b'\n') && buf.len() as u64 >= MAX_REPLY_BYTES {
        return Err(bad(format!(
            "no end of line within {MAX_REPLY_BYTES} bytes"
        )));
    }
    let text = String::from_utf8(buf).map_err(|e| bad(format!("not UTF-8: {e}")))?;
    let doc: Value = serde_json::from_str(text.trim()).map_err(|e| {
        bad(format!(
            "not JSON: {e}; it starts with {:?}",
            text.chars().take(40).collect::<String>()
        ))
    })?;
    if !doc.is_object() || !doc["ok"].is_boolean() {
        return Err(bad(format!(
            "expected an object with a boolean \"ok\", got {}",
            shorten(&doc.to_string())
        )));
    }
    Ok(doc)
}

/// At most 120 characters of `s`.
fn shorten(s: &str) -> String {
    const MAX: usize = 120;
    if s.chars().count() <= MAX {
        s.to_owned()
    } else {
        format!("{}...", s.chars().take(MAX).collect::<String>())
    }
}
