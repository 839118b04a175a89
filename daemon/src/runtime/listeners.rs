//! The ingest and control listeners: the ones systemd passed (socket activation, see
//! [`super::activation`]), else sockets bound here at the configured paths.
//!
//! A socket bound here is chmod'ed (and the ingest one given to `access.socket_group`) and
//! its file removed on exit; a passed socket belongs to the service manager (its unit sets
//! `SocketMode=` / `SocketGroup=`), so the daemon leaves its file alone.

use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use wshardd_config::Config;

use crate::ingest::listener::{bind, BindError};
use crate::runtime::access::{set_socket_group, GroupError};
use crate::runtime::activation::Passed;

/// The file of a listening socket, and whether it is ours to remove.
#[derive(Debug)]
pub struct SocketFile {
    pub path: PathBuf,
    /// Passed by the service manager: never removed.
    pub activated: bool,
}

impl SocketFile {
    /// Remove the socket file if the daemon bound it (best effort: it is going away).
    pub fn remove(&self) {
        if !self.activated {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Why a socket cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    #[error(transparent)]
    Bind(#[from] BindError),
    #[error(transparent)]
    Group(#[from] GroupError),
}

/// The control socket: passed (`control`), else bound at `[control] path` and given to
/// `access.socket_group`.
///
/// # Errors
/// [`SocketError`] when binding or the group change fails (the file is removed then).
pub fn open_control(
    cfg: &Config,
    passed: Option<Passed>,
) -> Result<(UnixListener, SocketFile), SocketError> {
    if let Some(p) = passed {
        return Ok(adopt(p, "control", &cfg.control.path, "control.path"));
    }
    bind_here(
        &cfg.control.path,
        cfg.control.mode,
        &cfg.access.socket_group,
    )
}

/// The ingest socket: passed (`ingest`), else bound at `[socket] path` and given to
/// `access.socket_group`.
///
/// # Errors
/// [`SocketError`] when binding or the group change fails (the file is removed then).
pub fn open_ingest(
    cfg: &Config,
    passed: Option<Passed>,
) -> Result<(UnixListener, SocketFile), SocketError> {
    if let Some(p) = passed {
        return Ok(adopt(p, "ingest", &cfg.socket.path, "socket.path"));
    }
    bind_here(&cfg.socket.path, cfg.socket.mode, &cfg.access.socket_group)
}

fn bind_here(
    path: &Path,
    mode: u32,
    group: &str,
) -> Result<(UnixListener, SocketFile), SocketError> {
    let l = bind(path, mode)?;
    let file = SocketFile {
        path: path.to_path_buf(),
        activated: false,
    };
    if let Err(e) = set_socket_group(path, group) {
        drop(l);
        file.remove();
        return Err(e.into());
    }
    Ok((l, file))
}

fn adopt(p: Passed, role: &str, configured: &Path, key: &str) -> (UnixListener, SocketFile) {
    let shown = p
        .path
        .as_deref()
        .map_or_else(|| "(no path)".to_string(), |x| x.display().to_string());
    tracing::info!(
        fd = p.fd,
        name = %p.name,
        "{role} socket passed by the service manager: {shown}"
    );
    if p.path.as_deref() != Some(configured) {
        tracing::warn!(
            "{role} socket: the service manager passed {shown}, but {key} is {}; \
             clients must use {shown}",
            configured.display()
        );
    }
    let file = SocketFile {
        path: p.path.unwrap_or_else(|| configured.to_path_buf()),
        activated: true,
    };
    (p.listener, file)
}
