//! A failed file-system call: which call (`op`), on which path, and the OS error. The one
//! I/O error that the errors of the format library, the daemon, export, import and the CLI
//! wrap, each in its own enum.

use std::path::PathBuf;

/// An I/O call that failed on a path, shown as `{op} {path}: {source}`; its
/// [`source`](std::error::Error::source) is the OS error.
#[derive(Debug, thiserror::Error)]
#[error("{op} {}: {source}", path.display())]
pub struct IoError {
    /// The call that failed, as a verb: `open`, `read`, `create`, `rename`, ...
    pub op: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl IoError {
    /// The failure of `op` on `path`.
    #[must_use]
    pub fn new(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self {
            op,
            path: path.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn io_error_names_the_call_and_path_and_keeps_the_os_error() {
        let e = IoError::new(
            "open",
            "/no/such",
            std::io::Error::from(std::io::ErrorKind::NotFound),
        );
        assert_eq!(e.to_string(), "open /no/such: entity not found");
        let source = e.source().map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("entity not found"));
    }
}
