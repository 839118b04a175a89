//! The exit status of the verbs that check files (`inspect`, `verify`, `cat`, and others that
//! share its codes; `recover` has its own), and the exit codes of the verbs that ask a
//! server (the daemon's or the ROS bridge's control socket) or run a program (`import`).

/// The outcome of a verb, ordered from best to worst; the process exits with [`Status::code`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// Everything checked is good: exit 0.
    #[default]
    Ok,
    /// Some file is corrupt (bad CRC, truncated, inconsistent structure): exit 1.
    Corrupt,
    /// A usage or I/O error (file not found, permission denied, output failed): exit 2.
    /// Wins over [`Status::Corrupt`] when both happen.
    Error,
}

impl Status {
    /// The process exit code: 0, 1 or 2.
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            Self::Ok => 0,
            Self::Corrupt => 1,
            Self::Error => 2,
        }
    }

    /// The worse of two outcomes.
    #[must_use]
    pub fn worst(self, other: Self) -> Self {
        self.max(other)
    }
}

/// Exit codes of the verbs that ask a server (the daemon's control socket: `status`,
/// `episodes`, `close`, `metrics`, `annotate`; the ROS bridge's: `bridge`) and of `import`.
pub mod exit {
    pub const OK: u8 = 0;
    /// The daemon refused or failed the request.
    pub const REFUSED: u8 = 1;
    /// Usage or I/O: no daemon, bad config, unreadable reply.
    pub const ERROR: u8 = 2;
}

#[cfg(test)]
mod tests {
    use super::Status;

    #[test]
    fn io_errors_win_over_corruption() {
        assert_eq!(Status::Ok.worst(Status::Corrupt), Status::Corrupt);
        assert_eq!(Status::Corrupt.worst(Status::Error), Status::Error);
        assert_eq!(Status::Error.worst(Status::Ok).code(), 2);
    }
}
