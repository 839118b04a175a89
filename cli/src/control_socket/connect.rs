//! Why connecting to the control socket failed, in the operator's words:
//!
//! - no socket file (`ENOENT`): no daemon, or not this `control.path`;
//! - a socket file nothing listens on (`ECONNREFUSED`): a stale file left by a daemon that
//!   stopped;
//! - the socket refused this user (`EACCES` / `EPERM`): which directory or file refused,
//!   its owner, group and mode as `stat` reads them, and the config keys that grant access
//!   (the socket group, `control.mode`, then the daemon's allowlists).

use std::fmt;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Permission bit (in each of the owner, group and other triples) needed to connect to a
/// Unix socket: write.
const WRITE: u32 = 0o2;
/// Permission bit needed to pass through a directory: search (x).
const SEARCH: u32 = 0o1;
/// The permission bits of a mode (no file type, no setuid/setgid/sticky).
const PERMISSION_BITS: u32 = 0o777;

/// The user the CLI runs as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Who {
    pub uid: u32,
    pub gid: u32,
    /// Supplementary groups.
    pub groups: Vec<u32>,
}

impl Who {
    /// The effective uid, gid and supplementary groups of this process.
    #[must_use]
    pub fn current() -> Self {
        Self {
            uid: nix::unistd::geteuid().as_raw(),
            gid: nix::unistd::getegid().as_raw(),
            groups: nix::unistd::getgroups()
                .map(|g| g.into_iter().map(nix::unistd::Gid::as_raw).collect())
                .unwrap_or_default(),
        }
    }

    fn in_group(&self, gid: u32) -> bool {
        self.gid == gid || self.groups.contains(&gid)
    }
}

impl fmt::Display for Who {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "uid {} (gid {}", self.uid, self.gid)?;
        let extra: Vec<String> = self
            .groups
            .iter()
            .filter(|&&g| g != self.gid)
            .map(u32::to_string)
            .collect();
        if !extra.is_empty() {
            write!(f, ", groups {}", extra.join(", "))?;
        }
        write!(f, ")")
    }
}

/// Owner, group and mode of a file or directory, as `stat` read them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ownership {
    pub path: PathBuf,
    pub uid: u32,
    pub gid: u32,
    /// Permission bits only.
    pub mode: u32,
}

impl Ownership {
    /// `stat` of `path`.
    ///
    /// # Errors
    /// The `stat` error.
    pub fn of(path: &Path) -> io::Result<Self> {
        let md = std::fs::metadata(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            uid: md.uid(),
            gid: md.gid(),
            mode: md.mode() & PERMISSION_BITS,
        })
    }

    /// Whether the mode gives `who` the permission `bit` ([`WRITE`] or [`SEARCH`]).
    /// Root is always allowed (`CAP_DAC_OVERRIDE`).
    fn permits(&self, who: &Who, bit: u32) -> bool {
        if who.uid == 0 {
            return true;
        }
        let triple = if who.uid == self.uid {
            self.mode >> 6
        } else if who.in_group(self.gid) {
            self.mode >> 3
        } else {
            self.mode
        };
        triple & bit != 0
    }

    fn group_name(&self) -> String {
        group_name(self.gid)
    }
}

/// `` `root` `` for a known group, else the number.
fn group_name(gid: u32) -> String {
    nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid))
        .ok()
        .flatten()
        .map_or_else(|| gid.to_string(), |g| g.name)
}

impl fmt::Display for Ownership {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let user = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(self.uid))
            .ok()
            .flatten();
        match user {
            Some(u) => write!(f, "owner `{}` (uid {})", u.name, self.uid)?,
            None => write!(f, "owner uid {}", self.uid)?,
        }
        let group = self.group_name();
        if group == self.gid.to_string() {
            write!(f, ", group gid {}", self.gid)?;
        } else {
            write!(f, ", group `{group}` (gid {})", self.gid)?;
        }
        write!(f, ", mode {:04o}", self.mode)
    }
}

/// What refused the user, found by reading the modes on the way to the socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refuser {
    /// A directory on the way that the user may not search.
    Directory(Ownership),
    /// The socket file, which the user may not write.
    SocketFile(Ownership),
    /// Nothing the modes say: the socket file (when it could be read) lets the user in, so
    /// something else refused (a security module such as SELinux or AppArmor).
    Other(Option<Ownership>),
}

/// Find what refuses `who` on the way to `socket`: the first directory from `/` down
/// that `who` may not search, else the socket file when `who` may not write it.
#[must_use]
pub fn find_refuser(socket: &Path, who: &Who) -> Refuser {
    let abs = std::path::absolute(socket).unwrap_or_else(|_| socket.to_path_buf());
    let mut dirs: Vec<&Path> = abs.ancestors().skip(1).collect();
    dirs.reverse();
    for dir in dirs {
        match Ownership::of(dir) {
            Ok(o) if !o.permits(who, SEARCH) => return Refuser::Directory(o),
            Ok(_) => {}
            Err(_) => break,
        }
    }
    match Ownership::of(&abs) {
        Ok(o) if !o.permits(who, WRITE) => Refuser::SocketFile(o),
        Ok(o) => Refuser::Other(Some(o)),
        Err(_) => Refuser::Other(None),
    }
}

/// Why the socket refused, and what would grant access to the verb.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub refuser: Refuser,
    /// The verb changes something (`close`): the admin allowlist applies.
    pub mutating: bool,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.refuser {
            Refuser::Directory(o) => write!(
                f,
                "directory {}, {o}, does not let this user search it (x permission), so the \
                 socket cannot be reached: give this user or one of its groups search \
                 permission there, or set control.path to a directory they may enter",
                o.path.display()
            )?,
            Refuser::SocketFile(o) => write!(
                f,
                "the socket file is {o}, and connecting needs write permission on it: be in \
                 group `{group}` (the group access.socket_group sets, or SocketGroup= of \
                 wshardd-control.socket under systemd; a new group membership takes effect \
                 at the next login) or widen control.mode",
                group = o.group_name()
            )?,
            Refuser::Other(Some(o)) => write!(
                f,
                "the socket file is {o}, which lets this user write it, so something other \
                 than its mode refused (a security module such as SELinux or AppArmor)"
            )?,
            Refuser::Other(None) => write!(
                f,
                "the socket file cannot be examined; its directory's mode or a security \
                 module refused"
            )?,
        }
        if self.mutating {
            write!(
                f,
                ". Once connected, `close` also needs root, the daemon's uid or gid, \
                 control.admin_uids or control.admin_gids"
            )
        } else {
            write!(
                f,
                ". Once connected, the daemon admits root, its own uid, and \
                 access.allow_uids / access.allow_gids (anyone when both are empty)"
            )
        }
    }
}

/// Connecting to the control socket failed.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// `ENOENT`.
    #[error("cannot connect to the control socket {}: there is no socket file: is wshardd running? Is this its control.path (see --control, --config)? ({source})", path.display())]
    NoSocket {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// `ECONNREFUSED`.
    #[error("cannot connect to the control socket {}: the socket file exists but nothing listens on it (a stale file left by a wshardd that stopped): is wshardd running? ({source})", path.display())]
    Stale {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// `EACCES`, `EPERM`.
    #[error("the control socket {} refused {who}: {source}; {refusal}", path.display())]
    Refused {
        path: PathBuf,
        who: Who,
        refusal: Refusal,
        #[source]
        source: io::Error,
    },
    /// Anything else.
    #[error("cannot connect to the control socket {}: {source}", path.display())]
    Other {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Say why connecting to `path` failed with `source`; `mutating`: the verb is `close`.
#[must_use]
pub fn connect_error(path: &Path, source: io::Error, mutating: bool) -> ConnectError {
    let path = path.to_path_buf();
    match source.kind() {
        io::ErrorKind::NotFound => ConnectError::NoSocket { path, source },
        io::ErrorKind::ConnectionRefused => ConnectError::Stale { path, source },
        io::ErrorKind::PermissionDenied => {
            let who = Who::current();
            let refuser = find_refuser(&path, &who);
            ConnectError::Refused {
                path,
                who,
                refusal: Refusal { refuser, mutating },
                source,
            }
        }
        _ => ConnectError::Other { path, source },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(uid: u32, gid: u32, groups: &[u32]) -> Who {
        Who {
            uid,
            gid,
            groups: groups.to_vec(),
        }
    }

    fn file(uid: u32, gid: u32, mode: u32) -> Ownership {
        Ownership {
            path: PathBuf::from("/run/wshardd/wshardd-control.sock"),
            uid,
            gid,
            mode,
        }
    }

    #[test]
    fn cli_socket_mode_decides_by_owner_group_other() {
        let f = file(100, 200, 0o660);
        assert!(f.permits(&who(100, 1, &[]), WRITE), "owner");
        assert!(f.permits(&who(5, 200, &[]), WRITE), "primary group");
        assert!(
            f.permits(&who(5, 1, &[7, 200]), WRITE),
            "supplementary group"
        );
        assert!(!f.permits(&who(5, 1, &[7]), WRITE), "other");
        assert!(f.permits(&who(0, 0, &[]), WRITE), "root");
        assert!(
            !file(100, 200, 0o060).permits(&who(100, 200, &[]), WRITE),
            "owner bits win"
        );
        assert!(file(100, 200, 0o666).permits(&who(5, 1, &[]), WRITE));
        let dir = file(100, 200, 0o750);
        assert!(dir.permits(&who(5, 200, &[]), SEARCH));
        assert!(!dir.permits(&who(5, 1, &[]), SEARCH));
    }

    #[test]
    fn cli_refusal_names_group_mode_and_keys() {
        let r = Refusal {
            refuser: Refuser::SocketFile(file(4_000_000, 4_000_001, 0o660)),
            mutating: false,
        };
        let s = r.to_string();
        assert!(
            s.contains("owner uid 4000000, group gid 4000001, mode 0660"),
            "{s}"
        );
        assert!(
            s.contains("access.socket_group") && s.contains("control.mode"),
            "{s}"
        );
        assert!(s.contains("access.allow_uids / access.allow_gids"), "{s}");
        let r = Refusal {
            refuser: Refuser::Directory(file(4_000_000, 4_000_001, 0o700)),
            mutating: true,
        };
        let s = r.to_string();
        assert!(
            s.contains("directory /run/wshardd/wshardd-control.sock, owner uid"),
            "{s}"
        );
        assert!(s.contains("search"), "{s}");
        assert!(
            s.contains("control.admin_uids or control.admin_gids"),
            "{s}"
        );
        assert_eq!(
            who(1000, 1000, &[1000, 27]).to_string(),
            "uid 1000 (gid 1000, groups 27)"
        );
    }

    #[test]
    fn cli_connect_errors_are_told_apart() {
        let p = Path::new("/nonexistent/wshardd-control.sock");
        let e = connect_error(p, io::Error::from(io::ErrorKind::NotFound), false);
        assert!(e.to_string().contains("there is no socket file"), "{e}");
        let e = connect_error(p, io::Error::from(io::ErrorKind::ConnectionRefused), false);
        assert!(e.to_string().contains("stale"), "{e}");
        let e = connect_error(p, io::Error::from(io::ErrorKind::PermissionDenied), true);
        assert!(
            matches!(e, ConnectError::Refused { ref refusal, .. } if refusal.mutating),
            "{e}"
        );
        assert!(e.to_string().contains("refused uid"), "{e}");
    }
}
