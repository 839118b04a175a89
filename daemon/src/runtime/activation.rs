//! Socket activation: listening sockets passed by systemd (or `systemd-socket-activate`)
//! instead of sockets the daemon binds itself.
//!
//! The protocol (`sd_listen_fds(3)`): the passed sockets are fds `3 .. 3+LISTEN_FDS`;
//! `LISTEN_PID` is the pid they are meant for (an inherited environment names another
//! process and is ignored); `LISTEN_FDNAMES` is a colon-separated name per fd, from each
//! socket unit's `FileDescriptorName=` (the unit's name when unset).
//!
//! wshardd takes `ingest` (named `ingest` or `wshardd.socket`) and `control` (named
//! `control` or `wshardd-control.socket`). Fds with other names, or no `LISTEN_FDNAMES` at
//! all, fill the free roles in order: first ingest, then control. Each fd must be a
//! listening `AF_UNIX` stream socket; anything else is an error naming the fd.
//!
//! A socket passed in is the service manager's: the daemon neither binds, chmods nor
//! removes its file.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::sys::socket::{getsockname, getsockopt, sockopt, SockType, SockaddrLike, SockaddrStorage};

/// The first passed fd (`SD_LISTEN_FDS_START`).
pub(crate) const LISTEN_FDS_START: RawFd = 3;

/// More than this many passed fds is a misconfiguration, not something to walk through.
const MAX_FDS: usize = 16;

/// What to do with a passed socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// The ingest socket clients record through (`[socket] path`).
    Ingest,
    /// The operator's control socket (`[control] path`).
    Control,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Self::Ingest => "ingest",
            Self::Control => "control",
        }
    }
}

/// Why the passed sockets cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ActivationError {
    #[error("socket activation: {var}={value:?} is not a number")]
    NotANumber { var: &'static str, value: String },
    #[error("socket activation: LISTEN_FDS={0}, at most {MAX_FDS} sockets are expected")]
    TooMany(usize),
    #[error(
        "socket activation: LISTEN_FDNAMES has {names} names for LISTEN_FDS={fds} ({value:?})"
    )]
    NameCount {
        names: usize,
        fds: usize,
        value: String,
    },
    #[error("socket activation: fd {fd} (`{name}`) is not a usable {role} socket: {problem}")]
    BadFd {
        fd: RawFd,
        name: String,
        role: &'static str,
        problem: String,
    },
    #[error("socket activation: fds {first} and {second} are both the {role} socket")]
    Duplicate {
        role: &'static str,
        first: RawFd,
        second: RawFd,
    },
    #[error("socket activation: fd {fd} (`{name}`): no use for a third socket (only ingest and control)")]
    Extra { fd: RawFd, name: String },
    #[error("socket activation: the passed sockets were already taken by this process")]
    AlreadyTaken,
}

/// One socket passed in.
#[derive(Debug)]
pub(crate) struct Passed {
    /// Non-blocking, close-on-exec.
    pub(crate) listener: UnixListener,
    /// The fd number it arrived as.
    pub(crate) fd: RawFd,
    /// Its name in `LISTEN_FDNAMES` (`""` when there was none).
    pub(crate) name: String,
    /// The path it listens on, when it has one (not abstract, not unnamed).
    pub(crate) path: Option<PathBuf>,
}

/// The sockets systemd passed, by role. Both `None` when the daemon was not socket-activated.
#[derive(Debug, Default)]
pub(crate) struct Activated {
    pub(crate) ingest: Option<Passed>,
    /// The control socket (`wshardd-control.socket`, `FileDescriptorName=control`). When
    /// `None`, the control socket code binds `[control] path` itself.
    pub(crate) control: Option<Passed>,
}

/// The activation variables, as read from the environment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ListenEnv {
    pub(crate) pid: Option<String>,
    pub(crate) fds: Option<String>,
    pub(crate) names: Option<String>,
}

impl ListenEnv {
    /// `LISTEN_PID`, `LISTEN_FDS`, `LISTEN_FDNAMES`.
    #[must_use]
    pub(crate) fn from_env() -> Self {
        let get = |k| std::env::var(k).ok();
        Self {
            pid: get("LISTEN_PID"),
            fds: get("LISTEN_FDS"),
            names: get("LISTEN_FDNAMES"),
        }
    }
}

/// What the variables say: how many fds, and their names (one per fd, `""` when unnamed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Not activated: no `LISTEN_FDS`, or `LISTEN_PID` is missing or another process's.
    None { why: Option<String> },
    /// Fds `3..3+names.len()` are ours.
    Take { names: Vec<String> },
}

/// Read the variables against our pid.
///
/// # Errors
/// [`ActivationError`] when a number does not parse or the names do not match the count.
pub(crate) fn plan(env: &ListenEnv, own_pid: u32) -> Result<Plan, ActivationError> {
    let Some(fds) = env.fds.as_deref() else {
        return Ok(Plan::None { why: None });
    };
    let Some(pid) = env.pid.as_deref() else {
        return Ok(Plan::None {
            why: Some(format!("LISTEN_FDS={fds} without LISTEN_PID: ignored")),
        });
    };
    let num = |var, value: &str| {
        value
            .trim()
            .parse::<u64>()
            .map_err(|_| ActivationError::NotANumber {
                var,
                value: value.to_string(),
            })
    };
    let pid_n = num("LISTEN_PID", pid)?;
    if pid_n != u64::from(own_pid) {
        return Ok(Plan::None {
            why: Some(format!(
                "LISTEN_PID={pid_n} is not this process ({own_pid}): the sockets are not ours, ignored"
            )),
        });
    }
    let count = usize::try_from(num("LISTEN_FDS", fds)?).unwrap_or(usize::MAX);
    if count > MAX_FDS {
        return Err(ActivationError::TooMany(count));
    }
    let names = match env.names.as_deref() {
        None => vec![String::new(); count],
        Some(v) => {
            let names: Vec<String> = if count == 0 && v.is_empty() {
                Vec::new()
            } else {
                v.split(':').map(str::to_string).collect()
            };
            if names.len() != count {
                return Err(ActivationError::NameCount {
                    names: names.len(),
                    fds: count,
                    value: v.to_string(),
                });
            }
            names
        }
    };
    Ok(Plan::Take { names })
}

/// Which role each fd plays: by name first, then unnamed (or unknown-named) fds fill the
/// free roles in order, ingest first.
///
/// # Errors
/// [`ActivationError::Duplicate`] for two fds named for the same role,
/// [`ActivationError::Extra`] for a fd left without a role.
pub(crate) fn assign(names: &[String]) -> Result<Vec<(RawFd, Role)>, ActivationError> {
    let fd_of = |i: usize| LISTEN_FDS_START + RawFd::try_from(i).unwrap_or(RawFd::MAX - 3);
    let by_name = |n: &str| match n {
        "ingest" | "wshardd.socket" => Some(Role::Ingest),
        "control" | "wshardd-control.socket" => Some(Role::Control),
        _ => None,
    };
    let mut taken: Vec<(RawFd, Role)> = Vec::new();
    for (i, n) in names.iter().enumerate() {
        if let Some(role) = by_name(n) {
            if let Some(&(first, _)) = taken.iter().find(|(_, r)| *r == role) {
                return Err(ActivationError::Duplicate {
                    role: role.name(),
                    first,
                    second: fd_of(i),
                });
            }
            taken.push((fd_of(i), role));
        }
    }
    for (i, n) in names.iter().enumerate() {
        if by_name(n).is_some() {
            continue;
        }
        let free = [Role::Ingest, Role::Control]
            .into_iter()
            .find(|role| !taken.iter().any(|(_, r)| r == role));
        match free {
            Some(role) => taken.push((fd_of(i), role)),
            None => {
                return Err(ActivationError::Extra {
                    fd: fd_of(i),
                    name: n.clone(),
                })
            }
        }
    }
    taken.sort_by_key(|(fd, _)| *fd);
    Ok(taken)
}

/// Set once the fds were taken: a second take would own the same fds twice.
static TAKEN: AtomicBool = AtomicBool::new(false);

/// The sockets passed to this process, taken over (at most once per process).
///
/// # Errors
/// [`ActivationError`] naming the variable or the fd that is wrong.
pub(crate) fn take(env: &ListenEnv) -> Result<Activated, ActivationError> {
    let names = match plan(env, std::process::id())? {
        Plan::None { why } => {
            if let Some(why) = why {
                tracing::info!("socket activation: {why}");
            }
            return Ok(Activated::default());
        }
        Plan::Take { names } => names,
    };
    let roles = assign(&names)?;
    if TAKEN.swap(true, Ordering::AcqRel) {
        return Err(ActivationError::AlreadyTaken);
    }
    let mut out = Activated::default();
    for (fd, role) in roles {
        let index = usize::try_from(fd - LISTEN_FDS_START).unwrap_or(0);
        let name = names.get(index).cloned().unwrap_or_default();
        let passed = take_one(fd, name, role)?;
        match role {
            Role::Ingest => out.ingest = Some(passed),
            Role::Control => out.control = Some(passed),
        }
    }
    Ok(out)
}

fn take_one(fd: RawFd, name: String, role: Role) -> Result<Passed, ActivationError> {
    let bad = |name: &str, problem: String| ActivationError::BadFd {
        fd,
        name: name.to_string(),
        role: role.name(),
        problem,
    };
    // Open at all? (F_GETFD touches nothing.) Then keep it from leaking into children.
    nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFD)
        .map_err(|e| bad(&name, format!("not an open file descriptor ({e})")))?;
    nix::fcntl::fcntl(
        fd,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    )
    .map_err(|e| bad(&name, format!("set close-on-exec: {e}")))?;
    let owned = own_passed_fd(fd);
    check_listening_unix_stream(&owned).map_err(|problem| bad(&name, problem.to_string()))?;
    let path = getsockname::<nix::sys::socket::UnixAddr>(owned.as_raw_fd())
        .ok()
        .and_then(|a| a.path().map(PathBuf::from));
    let listener = UnixListener::from(owned);
    listener
        .set_nonblocking(true)
        .map_err(|e| bad(&name, format!("set non-blocking: {e}")))?;
    Ok(Passed {
        listener,
        fd,
        name,
        path,
    })
}

/// Take ownership of a fd the service manager passed to this process.
#[allow(unsafe_code)]
fn own_passed_fd(fd: RawFd) -> OwnedFd {
    use std::os::fd::FromRawFd;
    // SAFETY: `fd` is in 3..3+LISTEN_FDS and LISTEN_PID is this process's pid, so the
    // service manager opened it for this process (sd_listen_fds(3)); `fcntl(F_GETFD)` just
    // confirmed it is open. Nothing else in wshardd uses fds it did not open itself, and
    // `TAKEN` makes `take` run once per process, so this is the only owner and the fd is
    // closed exactly once, when the `OwnedFd` (or the listener made from it) drops.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// Why a passed fd is not a listening `AF_UNIX` stream socket.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum SocketProblem {
    /// Not a socket at all.
    #[error("not a socket")]
    NotASocket,
    /// A socket query failed (`call` names it).
    #[error("{call}: {errno}")]
    Query {
        call: &'static str,
        errno: nix::errno::Errno,
    },
    /// Not `AF_UNIX`.
    #[error("address family {found:?}, expected AF_UNIX (ListenStream= must be a path)")]
    Family {
        found: Option<nix::sys::socket::AddressFamily>,
    },
    /// Not `SOCK_STREAM`.
    #[error("socket type {found:?}, expected SOCK_STREAM (use ListenStream=)")]
    Type { found: SockType },
    /// A stream socket that is not listening.
    #[error("not listening (Accept=yes passes connections; use Accept=no)")]
    NotListening,
}

/// `Ok` for a listening `AF_UNIX` stream socket, else what it is instead.
fn check_listening_unix_stream(fd: &OwnedFd) -> Result<(), SocketProblem> {
    let ty = getsockopt(fd, sockopt::SockType).map_err(|e| match e {
        nix::errno::Errno::ENOTSOCK => SocketProblem::NotASocket,
        errno => SocketProblem::Query {
            call: "getsockopt(SO_TYPE)",
            errno,
        },
    })?;
    let family = getsockname::<SockaddrStorage>(fd.as_raw_fd())
        .map_err(|errno| SocketProblem::Query {
            call: "getsockname",
            errno,
        })?
        .family();
    if family != Some(nix::sys::socket::AddressFamily::Unix) {
        return Err(SocketProblem::Family { found: family });
    }
    if ty != SockType::Stream {
        return Err(SocketProblem::Type { found: ty });
    }
    let listening = getsockopt(fd, sockopt::AcceptConn).map_err(|errno| SocketProblem::Query {
        call: "getsockopt(SO_ACCEPTCONN)",
        errno,
    })?;
    if !listening {
        return Err(SocketProblem::NotListening);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn env(pid: Option<&str>, fds: Option<&str>, names: Option<&str>) -> ListenEnv {
        ListenEnv {
            pid: pid.map(str::to_string),
            fds: fds.map(str::to_string),
            names: names.map(str::to_string),
        }
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn no_variables_is_not_activated() {
        assert_eq!(
            plan(&ListenEnv::default(), 7).unwrap(),
            Plan::None { why: None }
        );
    }

    #[test]
    fn another_pid_is_ignored_with_a_reason() {
        let Plan::None { why: Some(why) } = plan(&env(Some("8"), Some("1"), None), 7).unwrap()
        else {
            panic!("expected no activation")
        };
        assert!(
            why.contains("LISTEN_PID=8 is not this process (7)"),
            "{why}"
        );
        assert!(matches!(
            plan(&env(None, Some("1"), None), 7).unwrap(),
            Plan::None { why: Some(_) }
        ));
    }

    #[test]
    fn counts_and_names_are_checked() {
        assert_eq!(
            plan(&env(Some("7"), Some("2"), Some("ingest:control")), 7).unwrap(),
            Plan::Take {
                names: names(&["ingest", "control"])
            }
        );
        assert_eq!(
            plan(&env(Some("7"), Some("1"), None), 7).unwrap(),
            Plan::Take {
                names: names(&[""])
            }
        );
        let e = plan(&env(Some("7"), Some("two"), None), 7).unwrap_err();
        assert_eq!(
            e.to_string(),
            "socket activation: LISTEN_FDS=\"two\" is not a number"
        );
        let e = plan(&env(Some("7"), Some("2"), Some("ingest")), 7).unwrap_err();
        assert!(
            matches!(
                e,
                ActivationError::NameCount {
                    names: 1,
                    fds: 2,
                    ..
                }
            ),
            "{e}"
        );
        assert!(matches!(
            plan(&env(Some("7"), Some("99"), None), 7).unwrap_err(),
            ActivationError::TooMany(99)
        ));
    }

    #[test]
    fn roles_by_name_then_in_order() {
        use Role::{Control, Ingest};
        assert_eq!(assign(&names(&["ingest"])).unwrap(), vec![(3, Ingest)]);
        assert_eq!(
            assign(&names(&["control", "ingest"])).unwrap(),
            vec![(3, Control), (4, Ingest)]
        );
        assert_eq!(
            assign(&names(&["", ""])).unwrap(),
            vec![(3, Ingest), (4, Control)]
        );
        assert_eq!(
            assign(&names(&["unknown", "ingest"])).unwrap(),
            vec![(3, Control), (4, Ingest)]
        );
        assert_eq!(
            assign(&names(&["wshardd-control.socket", "wshardd.socket"])).unwrap(),
            vec![(3, Control), (4, Ingest)]
        );
        assert_eq!(assign(&[]).unwrap(), vec![]);
        let e = assign(&names(&["ingest", "ingest"])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "socket activation: fds 3 and 4 are both the ingest socket"
        );
        let e = assign(&names(&["a", "b", "c"])).unwrap_err();
        assert!(matches!(e, ActivationError::Extra { fd: 5, .. }), "{e}");
    }

    #[test]
    fn listening_unix_stream_passes_the_check_and_others_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let l = UnixListener::bind(dir.path().join("s")).unwrap();
        assert_eq!(check_listening_unix_stream(&OwnedFd::from(l)), Ok(()));
        let (a, _b) = std::os::unix::net::UnixDatagram::pair().unwrap();
        let e = check_listening_unix_stream(&OwnedFd::from(a)).unwrap_err();
        assert!(e.to_string().contains("SOCK_STREAM"), "{e}");
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let e = check_listening_unix_stream(&OwnedFd::from(a)).unwrap_err();
        assert!(e.to_string().contains("not listening"), "{e}");
        let f = std::fs::File::open("/dev/null").unwrap();
        assert_eq!(
            check_listening_unix_stream(&OwnedFd::from(f))
                .unwrap_err()
                .to_string(),
            "not a socket"
        );
    }
}
