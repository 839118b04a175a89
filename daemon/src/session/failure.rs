//! Why a session failed: one variant per kind of failure. The `Display` text is what the
//! client reads in its `ERROR{STORAGE}` frames and what the log says, so it stays as
//! clients know it even where it says "publish" for what the chunk writer does.

use std::io;
use std::path::PathBuf;

use crate::chunk::GapsError;
use crate::error::StorageError;

/// Why a session failed. The first failure wins; from then on the episode accepts nothing
/// more, and what was DURABLE stays durable (the files are left for recovery).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionFailure {
    /// The writer thread could not write or sync the journal or the open chunk.
    #[error("{0}")]
    Storage(StorageFailure),
    /// A sealed chunk's file could not be written, synced or renamed into place (the chunk
    /// writer's or the finisher's step).
    #[error("publishing a chunk failed: {0}")]
    WriteChunk(StorageFailure),
    /// The manifest could not be committed.
    #[error("committing the manifest failed: {0}")]
    CommitManifest(StorageFailure),
    /// A dropped seq range did not fit the ones already recorded (a bug, never input).
    #[error("seq bookkeeping: {0}")]
    SeqBookkeeping(GapsError),
    /// The chunk writer thread is gone: sealed chunks have nowhere to go.
    #[error("the chunk publisher stopped")]
    ChunkWriterStopped,
    /// The thread that makes chunks durable could not be started.
    #[error("cannot start the chunk finisher thread: {reason}")]
    FinisherNotStarted { reason: String },
    /// The writer thread panicked.
    #[error("the writer thread panicked")]
    WriterPanicked,
    /// The chunk writer thread panicked.
    #[error("the publisher thread panicked")]
    ChunkWriterPanicked,
}

/// A [`StorageError`] as kept with a failed session: the step, the file and the error as
/// text (the error itself is not `Clone`; its kind is kept for I/O errors).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StorageFailure {
    /// A write, sync, rename or remove of `path` failed.
    #[error("{step} {}: {error}", path.display())]
    Io {
        step: &'static str,
        path: PathBuf,
        kind: io::ErrorKind,
        error: String,
    },
    /// Encoding or reading a WShard file failed.
    #[error("{context}: {error}")]
    Format { context: String, error: String },
    /// An internal consistency check refused the step.
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<&StorageError> for StorageFailure {
    fn from(e: &StorageError) -> Self {
        match e {
            StorageError::Io(io) => Self::Io {
                step: io.op,
                path: io.path.clone(),
                kind: io.source.kind(),
                error: io.source.to_string(),
            },
            StorageError::Format { context, source } => Self::Format {
                context: context.clone(),
                error: source.to_string(),
            },
            StorageError::Internal(message) => Self::Internal(message.clone()),
            e @ StorageError::WindowSourceBlock { .. } => Self::Format {
                context: "window source".into(),
                error: e.to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The messages are the ones clients have always read in `ERROR{STORAGE}`.
    #[test]
    fn session_failure_messages_keep_their_words() {
        let io = StorageError::io(
            "fsync",
            "/d/ep/ep_chunk_0000.wshard",
            io::Error::from_raw_os_error(5),
        );
        let text = io.to_string();
        assert_eq!(SessionFailure::Storage((&io).into()).to_string(), text);
        assert_eq!(
            SessionFailure::WriteChunk((&io).into()).to_string(),
            format!("publishing a chunk failed: {text}")
        );
        assert_eq!(
            SessionFailure::CommitManifest((&io).into()).to_string(),
            format!("committing the manifest failed: {text}")
        );
        let internal = StorageError::Internal("digest".into());
        assert_eq!(
            StorageFailure::from(&internal).to_string(),
            internal.to_string()
        );
        assert_eq!(
            SessionFailure::WriterPanicked.to_string(),
            "the writer thread panicked"
        );
        assert_eq!(
            SessionFailure::ChunkWriterStopped.to_string(),
            "the chunk publisher stopped"
        );
    }
}
