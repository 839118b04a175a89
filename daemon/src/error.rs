//! Errors of the durable write path. Each names the step, the file and the OS error, so a
//! log line is enough to know what failed where.

use std::path::PathBuf;

use wshard::IoError;

/// A failed step of writing, syncing, renaming or removing a file.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error(transparent)]
    Io(#[from] IoError),
    #[error("{context}: {source}")]
    Format {
        context: String,
        #[source]
        source: wshard::FormatError,
    },
    /// An internal consistency check failed (a bug, never bad input): the step is refused
    /// rather than writing something wrong.
    #[error("internal error: {0}")]
    Internal(String),
    /// A block of a flight ring's chunk that a trigger window copies as stored does not
    /// check (its stored bytes disagree with its CRC32C): the window is not built from it.
    #[error("window {window}: stream {stream}: source chunk {chunk}: block `{block}`: {message}")]
    WindowSourceBlock {
        window: String,
        stream: String,
        chunk: u64,
        block: String,
        message: String,
    },
}

impl StorageError {
    /// Wrap an I/O error with the step and the path.
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io(IoError::new(op, path, source))
    }

    /// Wrap a format error with context.
    pub(crate) fn format(context: impl Into<String>, source: wshard::FormatError) -> Self {
        Self::Format {
            context: context.into(),
            source,
        }
    }
}
