//! The error type of the benchmarks: any error, boxed.

/// Any error, boxed; library errors convert with `?`.
pub type Error = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Result alias for the benchmarks.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error from a message.
pub fn fail(message: impl Into<String>) -> Error {
    message.into().into()
}

/// Attach what was being done to an I/O error.
pub fn io_ctx(what: &str, path: &std::path::Path, e: std::io::Error) -> Error {
    fail(format!("{what} {}: {e}", path.display()))
}
