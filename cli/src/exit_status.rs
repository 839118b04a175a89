//! The exit status of the verbs that check files (`inspect`, `verify`, `cat`, and others that
//! share its codes); `recover` has its own.

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
