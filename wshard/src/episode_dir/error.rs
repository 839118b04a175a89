//! What can go wrong opening or reading an episode directory. Every variant names the
//! file, and the stream and chunk when there is one.

use std::path::PathBuf;

use super::annotations::AnnotationsError;
use super::column::SegmentLengthError;
use super::events::EventsError;
use super::index::IndexError;
use super::names::StreamNameError;
use super::stream::StreamDataError;
use crate::error::FormatError;
use crate::io_error::IoError;

/// An episode directory that cannot be opened or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EpisodeDirError {
    /// An I/O call failed.
    #[error(transparent)]
    Io(#[from] IoError),
    /// Neither an index nor a manifest: not an episode directory.
    #[error("{}: not an episode directory: {message}", dir.display())]
    NotAnEpisode { dir: PathBuf, message: String },
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error(transparent)]
    Events(#[from] EventsError),
    #[error(transparent)]
    Annotations(#[from] AnnotationsError),
    /// The index lists a stream whose name is not a valid stream name.
    #[error("{}: streams[{position}]: {source}", file.display())]
    BadStreamName {
        file: PathBuf,
        position: usize,
        #[source]
        source: StreamNameError,
    },
    /// The index gives a stream a manifest path outside its folder.
    #[error("{}: stream `{stream}`: manifest {manifest:?} is not a file in streams/{stream}/", file.display())]
    BadManifestPath {
        file: PathBuf,
        stream: String,
        manifest: String,
    },
    /// A stream that the episode does not have.
    #[error("episode `{episode}` has no stream `{stream}` (streams: {available})")]
    UnknownStream {
        episode: String,
        stream: String,
        available: String,
    },
    /// The index says a stream has chunks but its manifest is gone.
    #[error("stream `{stream}`: the index lists {chunks} chunks but {} does not exist", path.display())]
    MissingManifest {
        stream: String,
        path: PathBuf,
        chunks: u64,
    },
    /// A manifest or chunk file of a stream is unreadable or invalid.
    #[error("stream `{stream}`: {}: {source}", path.display())]
    Format {
        stream: String,
        path: PathBuf,
        #[source]
        source: Box<FormatError>,
    },
    /// A chunk disagrees with its manifest entry or with the stream's first chunk.
    #[error("stream `{stream}`: chunk {chunk} `{uri}`: {message}")]
    Chunk {
        stream: String,
        chunk: u64,
        uri: String,
        message: String,
    },
    #[error(transparent)]
    Data(#[from] StreamDataError),
    /// A channel block whose length is not the chunk's steps.
    #[error("stream `{stream}`: chunk {chunk}: {source}")]
    Segment {
        stream: String,
        chunk: u64,
        #[source]
        source: SegmentLengthError,
    },
}

impl EpisodeDirError {
    pub(crate) fn io(op: &'static str, path: &std::path::Path, source: std::io::Error) -> Self {
        Self::Io(IoError::new(op, path, source))
    }

    pub(crate) fn format(stream: &str, path: &std::path::Path, source: FormatError) -> Self {
        Self::Format {
            stream: stream.to_owned(),
            path: path.to_path_buf(),
            source: Box::new(source),
        }
    }

    /// True when the error is an I/O failure rather than bad content.
    #[must_use]
    pub fn is_io(&self) -> bool {
        match self {
            Self::Io(_) => true,
            Self::Format { source, .. } => source.is_io(),
            _ => false,
        }
    }
}
