//! Who may do what: the `SO_PEERCRED` allowlists of the ingest socket and of the control
//! socket's mutating verbs, and the group that owns the socket files.

use std::path::Path;

use wshardd_config::Config;

use crate::registry::PeerCred;

/// The allowlists in force (SIGHUP replaces them; new connections see the new ones).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct AccessPolicy {
    /// Ingest socket: uids besides root and the daemon's own uid. Both lists empty: anyone
    /// the socket file's mode lets in.
    pub(crate) allow_uids: Vec<u32>,
    /// Ingest socket: primary gids.
    pub(crate) allow_gids: Vec<u32>,
    /// Control socket, mutating verbs: uids besides root and the daemon's own uid.
    pub(crate) admin_uids: Vec<u32>,
    /// Control socket, mutating verbs: gids besides the daemon's own gid.
    pub(crate) admin_gids: Vec<u32>,
    /// The daemon's own uid and gid.
    pub(crate) own_uid: u32,
    pub(crate) own_gid: u32,
}

impl AccessPolicy {
    /// The policy of `cfg` for a daemon running as the current user.
    #[must_use]
    pub(crate) fn from_config(cfg: &Config) -> Self {
        Self {
            allow_uids: cfg.access.allow_uids.clone(),
            allow_gids: cfg.access.allow_gids.clone(),
            admin_uids: cfg.control.admin_uids.clone(),
            admin_gids: cfg.control.admin_gids.clone(),
            own_uid: nix::unistd::geteuid().as_raw(),
            own_gid: nix::unistd::getegid().as_raw(),
        }
    }

    fn is_self_or_root(&self, c: &PeerCred) -> bool {
        c.uid == 0 || c.uid == self.own_uid
    }

    /// Whether `cred` may use the ingest socket and the control socket's read-only verbs.
    /// Unknown credentials are allowed only when no allowlist is set.
    #[must_use]
    pub(crate) fn allows_ingest(&self, cred: Option<&PeerCred>) -> bool {
        if self.allow_uids.is_empty() && self.allow_gids.is_empty() {
            return true;
        }
        cred.is_some_and(|c| {
            self.is_self_or_root(c)
                || self.allow_uids.contains(&c.uid)
                || self.allow_gids.contains(&c.gid)
        })
    }

    /// Whether `cred` may use the control socket's mutating verbs (`close`): root, the
    /// daemon's own uid or gid, or an `admin_*` entry. Unknown credentials never may.
    #[must_use]
    pub(crate) fn allows_admin(&self, cred: Option<&PeerCred>) -> bool {
        cred.is_some_and(|c| {
            self.is_self_or_root(c)
                || c.gid == self.own_gid
                || self.admin_uids.contains(&c.uid)
                || self.admin_gids.contains(&c.gid)
        })
    }
}

/// Why the socket group could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum GroupError {
    #[error("access.socket_group `{0}`: no such group")]
    Unknown(String),
    #[error("access.socket_group `{group}`: chown {}: {source}", path.display())]
    Chown {
        group: String,
        path: std::path::PathBuf,
        #[source]
        source: nix::Error,
    },
}

/// Give the socket file at `path` to `group` (a name or a numeric gid); `""` leaves it.
///
/// # Errors
/// [`GroupError`] naming the group and the path.
pub(crate) fn set_socket_group(path: &Path, group: &str) -> Result<(), GroupError> {
    if group.is_empty() {
        return Ok(());
    }
    let gid = match group.parse::<u32>() {
        Ok(n) => nix::unistd::Gid::from_raw(n),
        Err(_) => match nix::unistd::Group::from_name(group) {
            Ok(Some(g)) => g.gid,
            _ => return Err(GroupError::Unknown(group.to_owned())),
        },
    };
    nix::unistd::chown(path, None, Some(gid)).map_err(|source| GroupError::Chown {
        group: group.to_owned(),
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cred(uid: u32, gid: u32) -> PeerCred {
        PeerCred { pid: 1, uid, gid }
    }

    fn policy() -> AccessPolicy {
        AccessPolicy {
            allow_uids: vec![1000],
            allow_gids: vec![27],
            admin_uids: vec![1001],
            admin_gids: vec![],
            own_uid: 500,
            own_gid: 500,
        }
    }

    #[test]
    fn access_empty_lists_allow_anyone_on_ingest() {
        let p = AccessPolicy::default();
        assert!(p.allows_ingest(Some(&cred(4242, 4242))));
        assert!(p.allows_ingest(None));
    }

    #[test]
    fn access_ingest_allowlist() {
        let p = policy();
        assert!(p.allows_ingest(Some(&cred(0, 0))));
        assert!(p.allows_ingest(Some(&cred(500, 1))));
        assert!(p.allows_ingest(Some(&cred(1000, 1))));
        assert!(p.allows_ingest(Some(&cred(7, 27))));
        assert!(!p.allows_ingest(Some(&cred(7, 7))));
        assert!(!p.allows_ingest(None));
    }

    #[test]
    fn access_admin_is_stricter_than_ingest() {
        let p = policy();
        assert!(p.allows_admin(Some(&cred(0, 0))));
        assert!(p.allows_admin(Some(&cred(1001, 1))));
        assert!(p.allows_admin(Some(&cred(9, 500))));
        assert!(!p.allows_admin(Some(&cred(1000, 1))), "ingest-only uid");
        assert!(!p.allows_admin(Some(&cred(7, 27))), "ingest-only gid");
        assert!(!p.allows_admin(None));
        assert!(!AccessPolicy::default().allows_admin(Some(&cred(4242, 4242))));
    }

    #[test]
    fn access_unknown_group_is_named() {
        let e = set_socket_group(Path::new("/nonexistent"), "no-such-group-wshard")
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("access.socket_group `no-such-group-wshard`: no such group")
        );
    }
}
