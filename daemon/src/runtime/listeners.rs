//! The ingest and control listeners: the ones systemd passed (socket activation, see
//! [`super::activation`]), else sockets bound here at the configured paths.
//!
//! A socket bound here is chmod'ed (and the ingest one given to `access.socket_group`) and
//! its file removed on exit; a passed socket belongs to the service manager (its unit sets
//! `SocketMode=` / `SocketGroup=`), so the daemon leaves its file alone.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use wshard::IoError;
use wshardd_config::Config;

use super::access::{set_socket_group, GroupError};
use super::activation::Passed;

/// Why the socket could not be bound.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    #[error("socket {}: another wshardd is already listening there", .0.display())]
    InUse(PathBuf),
    #[error("socket {}: {}: {}", .0.path.display(), .0.op, .0.source)]
    Io(#[source] IoError),
}

/// Bind `path` with file mode `mode`. A stale socket file (nobody listening) is replaced;
/// a live one is an error.
///
/// # Errors
/// [`BindError`] naming the path and step.
pub(crate) fn bind(path: &Path, mode: u32) -> Result<UnixListener, BindError> {
    let io = |op, source| BindError::Io(IoError::new(op, path, source));
    if path.exists() {
        if UnixStream::connect(path).is_ok() {
            return Err(BindError::InUse(path.to_path_buf()));
        }
        std::fs::remove_file(path).map_err(|e| io("remove stale socket", e))?;
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| io("create socket directory", e))?;
    }
    let listener = UnixListener::bind(path).map_err(|e| io("bind", e))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| io("chmod", e))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| io("set nonblocking", e))?;
    Ok(listener)
}

/// The file of a listening socket, and whether it is ours to remove.
#[derive(Debug)]
pub(crate) struct SocketFile {
    pub(crate) path: PathBuf,
    /// Passed by the service manager: never removed.
    pub(crate) activated: bool,
}

impl SocketFile {
    /// Remove the socket file if the daemon bound it (best effort: it is going away).
    pub(crate) fn remove(&self) {
        if !self.activated {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Why a socket cannot be set up.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SocketError {
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
pub(crate) fn open_control(
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
pub(crate) fn open_ingest(
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
