//! `sd_notify`: state changes sent to the service manager over `$NOTIFY_SOCKET`.
//!
//! systemd (`Type=notify`) sets `NOTIFY_SOCKET` to the path of a datagram socket, or to an
//! abstract address written `@name`. Each message is one datagram of `KEY=VALUE` lines.
//! Without `NOTIFY_SOCKET` every call is a no-op, so the daemon behaves the same under a
//! shell, a test harness or systemd. Sending never blocks the daemon for long and never
//! fails it: an error is logged once and the message dropped.
//!
//! The messages wshardd sends are listed in `docs/DEPLOYMENT.md`.

use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Why `$NOTIFY_SOCKET` cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NotifyError {
    #[error("NOTIFY_SOCKET={value:?}: {problem}")]
    Address { value: String, problem: String },
    #[error("NOTIFY_SOCKET={value:?}: cannot create a datagram socket: {source}")]
    Socket {
        value: String,
        #[source]
        source: std::io::Error,
    },
}

/// A connection to the service manager's notification socket, or nothing.
#[derive(Debug)]
pub(crate) struct Notifier {
    target: Option<Target>,
    /// Set after the first failed send, so a missing socket is logged once.
    warned: AtomicBool,
}

#[derive(Debug)]
struct Target {
    socket: UnixDatagram,
    addr: SocketAddr,
    /// `$NOTIFY_SOCKET` as given, for messages.
    name: String,
}

impl Notifier {
    /// A notifier that sends nothing.
    #[must_use]
    pub(crate) fn disabled() -> Self {
        Self {
            target: None,
            warned: AtomicBool::new(false),
        }
    }

    /// From `$NOTIFY_SOCKET`: disabled when unset or empty.
    ///
    /// # Errors
    /// [`NotifyError`] when the variable is set but is neither an absolute path nor
    /// `@abstract-name`, or no datagram socket can be created.
    pub(crate) fn from_env() -> Result<Self, NotifyError> {
        match std::env::var_os("NOTIFY_SOCKET") {
            Some(v) if !v.is_empty() => Self::connect(&v.to_string_lossy()),
            _ => Ok(Self::disabled()),
        }
    }

    /// A notifier sending to `value`, written as in `$NOTIFY_SOCKET`.
    ///
    /// # Errors
    /// See [`Notifier::from_env`].
    pub(crate) fn connect(value: &str) -> Result<Self, NotifyError> {
        let addr = parse_address(value)?;
        let socket = UnixDatagram::unbound().map_err(|source| NotifyError::Socket {
            value: value.to_string(),
            source,
        })?;
        // A full receive queue must not stall the daemon: drop the message instead.
        let _ = socket.set_write_timeout(Some(Duration::from_millis(100)));
        Ok(Self {
            target: Some(Target {
                socket,
                addr,
                name: value.to_string(),
            }),
            warned: AtomicBool::new(false),
        })
    }

    /// True when messages go somewhere.
    #[must_use]
    pub(crate) fn enabled(&self) -> bool {
        self.target.is_some()
    }

    /// Send `msg` (newline-separated `KEY=VALUE` lines) as one datagram. Returns whether it
    /// was sent; a failure is logged the first time only.
    pub(crate) fn send(&self, msg: &str) -> bool {
        let Some(t) = &self.target else {
            return false;
        };
        match t.socket.send_to_addr(msg.as_bytes(), &t.addr) {
            Ok(_) => true,
            Err(e) => {
                if !self.warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "sd_notify to NOTIFY_SOCKET={:?} failed (further failures not logged): {e}",
                        t.name
                    );
                }
                false
            }
        }
    }

    /// `READY=1` with a `STATUS=` line: startup (recovery, binding) is complete.
    pub(crate) fn ready(&self, status: &str) -> bool {
        self.send(&format!("READY=1\nSTATUS={}", one_line(status)))
    }

    /// `STATUS=`: a one-line description shown by `systemctl status`.
    pub(crate) fn status(&self, status: &str) -> bool {
        self.send(&format!("STATUS={}", one_line(status)))
    }

    /// `WATCHDOG=1`: the daemon is alive and its writers make progress.
    pub(crate) fn watchdog(&self) -> bool {
        self.send("WATCHDOG=1")
    }

    /// `STOPPING=1` with a `STATUS=` line: shutdown has begun.
    pub(crate) fn stopping(&self, status: &str) -> bool {
        self.send(&format!("STOPPING=1\nSTATUS={}", one_line(status)))
    }

    /// `EXTEND_TIMEOUT_USEC=`: the current phase (here: stopping) needs `by` more time;
    /// another message must follow within `by`.
    pub(crate) fn extend_timeout(&self, by: Duration) -> bool {
        self.send(&format!("EXTEND_TIMEOUT_USEC={}", by.as_micros()))
    }
}

/// A `STATUS=` value must stay on one line: each line of a message is one assignment.
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// `/path/to/socket` or `@abstract-name`.
fn parse_address(value: &str) -> Result<SocketAddr, NotifyError> {
    let bad = |problem: String| NotifyError::Address {
        value: value.to_string(),
        problem,
    };
    if let Some(name) = value.strip_prefix('@') {
        use std::os::linux::net::SocketAddrExt;
        return SocketAddr::from_abstract_name(name.as_bytes())
            .map_err(|e| bad(format!("abstract address: {e}")));
    }
    if value.starts_with('/') {
        return SocketAddr::from_pathname(value).map_err(|e| bad(format!("path: {e}")));
    }
    Err(bad(
        "neither an absolute path nor @abstract-name (vsock addresses are not supported)".into(),
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn recv(rx: &UnixDatagram) -> String {
        let mut buf = [0u8; 4096];
        let n = rx.recv(&mut buf).unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    #[test]
    fn disabled_sends_nothing() {
        let n = Notifier::disabled();
        assert!(!n.enabled());
        assert!(!n.ready("x"));
        assert!(!n.watchdog());
    }

    #[test]
    fn path_socket_gets_each_message_as_one_datagram() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify.sock");
        let rx = UnixDatagram::bind(&path).unwrap();
        let n = Notifier::connect(path.to_str().unwrap()).unwrap();
        assert!(n.ready("ready: 0 episodes\nopen"));
        assert_eq!(recv(&rx), "READY=1\nSTATUS=ready: 0 episodes open");
        assert!(n.watchdog());
        assert_eq!(recv(&rx), "WATCHDOG=1");
        assert!(n.stopping("stopping"));
        assert_eq!(recv(&rx), "STOPPING=1\nSTATUS=stopping");
        assert!(n.extend_timeout(Duration::from_secs(5)));
        assert_eq!(recv(&rx), "EXTEND_TIMEOUT_USEC=5000000");
        assert!(n.status("s"));
        assert_eq!(recv(&rx), "STATUS=s");
    }

    #[test]
    fn abstract_socket_works() {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("wshardd-notify-test-{}", std::process::id());
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let rx = UnixDatagram::bind_addr(&addr).unwrap();
        let n = Notifier::connect(&format!("@{name}")).unwrap();
        assert!(n.watchdog());
        assert_eq!(recv(&rx), "WATCHDOG=1");
    }

    #[test]
    fn bad_addresses_are_named() {
        let e = Notifier::connect("relative/path").unwrap_err().to_string();
        assert!(e.starts_with("NOTIFY_SOCKET=\"relative/path\""), "{e}");
        assert!(e.contains("absolute path"), "{e}");
    }

    #[test]
    fn missing_socket_fails_quietly() {
        let n = Notifier::connect("/nonexistent/wshardd-notify.sock").unwrap();
        assert!(n.enabled());
        assert!(!n.watchdog());
        assert!(!n.watchdog());
    }
}
