//! Talking to a running `wshardd` over its control socket: where the socket is, one
//! request, one reply.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use wshard::IoError;
use wshardd_config::Config;

use super::connect::{connect_error, ConnectError};
use wshard_recorder::control::protocol::Request;

/// Largest reply read (a status of many episodes is still far below).
const MAX_REPLY_BYTES: u64 = 64 << 20;

/// Why a control request failed before the daemon answered it.
#[derive(Debug, thiserror::Error)]
pub enum ControlClientError {
    #[error("cannot load the config to find the control socket: {0}")]
    Config(#[from] wshardd_config::ConfigError),
    /// No socket file, a stale one, or a socket that refused this user.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    #[error("control socket {}: {}: {}", .0.path.display(), .0.op, .0.source)]
    Io(#[source] IoError),
    #[error("control socket {}: the reply is neither JSON nor metrics text: {detail}", path.display())]
    BadReply { path: PathBuf, detail: String },
}

/// The control socket: `explicit`, else `control.path` of the config found like `wshardd`
/// finds it (`config`, `$WSHARDD_CONFIG`, `/etc/wshardd/wshardd.toml`, `./wshardd.toml`,
/// defaults).
///
/// # Errors
/// [`ControlClientError::Config`] when the config cannot be loaded.
pub fn socket_path(
    explicit: Option<&Path>,
    config: Option<&Path>,
) -> Result<PathBuf, ControlClientError> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    let (cfg, _) = Config::load(config)?;
    Ok(cfg.control.path)
}

/// A reply: a JSON document, or (for `metrics`) the exposition text.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    Json(Value),
    Text(String),
}

/// Send `req` to the daemon at `path` and read its reply, waiting at most `timeout`.
///
/// # Errors
/// [`ControlClientError`] naming the socket.
pub fn request(path: &Path, req: &Request, timeout: Duration) -> Result<Reply, ControlClientError> {
    let io = |op, source| ControlClientError::Io(IoError::new(op, path, source));
    let mut s = UnixStream::connect(path)
        .map_err(|source| connect_error(path, source, req.is_mutating()))?;
    s.set_read_timeout(Some(timeout))
        .and_then(|()| s.set_write_timeout(Some(timeout)))
        .map_err(|e| io("set timeouts", e))?;
    let line = format!("{}\n", req.to_line());
    s.write_all(line.as_bytes())
        .map_err(|e| io("send the request", e))?;
    let mut buf = Vec::new();
    s.take(MAX_REPLY_BYTES)
        .read_to_end(&mut buf)
        .map_err(|e| io("read the reply", e))?;
    let text = String::from_utf8(buf).map_err(|e| ControlClientError::BadReply {
        path: path.to_path_buf(),
        detail: format!("not UTF-8: {e}"),
    })?;
    if text.trim_start().starts_with('{') {
        serde_json::from_str(text.trim())
            .map(Reply::Json)
            .map_err(|e| ControlClientError::BadReply {
                path: path.to_path_buf(),
                detail: e.to_string(),
            })
    } else if text.starts_with('#') || text.is_empty() {
        Ok(Reply::Text(text))
    } else {
        Err(ControlClientError::BadReply {
            path: path.to_path_buf(),
            detail: format!(
                "starts with {:?}",
                text.chars().take(40).collect::<String>()
            ),
        })
    }
}
