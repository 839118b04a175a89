//! The import's errors: each names the file and, where there is one, the key.

use std::path::{Path, PathBuf};

use wshard::IoError;

/// Why an import failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// Reading a source file failed.
    #[error("{}: cannot {}: {}", .0.path.display(), .0.op, .0.source)]
    Io(#[source] IoError),
    /// The file is not of the expected kind (not a zip / not HDF5 / not a Minari dataset).
    #[error("{}: not {expected}: {message}", path.display())]
    NotFormat {
        path: PathBuf,
        expected: &'static str,
        message: String,
    },
    /// A key the format needs is missing.
    #[error("{}: key `{key}` is missing", path.display())]
    MissingKey { path: PathBuf, key: String },
    /// A key holds something this importer does not convert (object arrays, pickles,
    /// strings, JPEG-encoded images, compound types, Fortran order, ...).
    #[error("{}: key `{key}`: unsupported {what}", path.display())]
    Unsupported {
        path: PathBuf,
        key: String,
        what: String,
    },
    /// A per-step key whose step count disagrees with the episode's.
    #[error("{}: key `{key}` has {found} steps, expected {expected} (from `{reference}`)", path.display())]
    LengthMismatch {
        path: PathBuf,
        key: String,
        found: u64,
        expected: u64,
        reference: String,
    },
    /// A key with the wrong number of dimensions.
    #[error("{}: key `{key}` has shape {shape:?}, expected {expected}", path.display())]
    WrongRank {
        path: PathBuf,
        key: String,
        shape: Vec<u64>,
        expected: &'static str,
    },
    /// A malformed array or archive member.
    #[error("{}: key `{key}`: {message}", path.display())]
    BadData {
        path: PathBuf,
        key: String,
        message: String,
    },
    /// An HDF5 library error while reading a key.
    #[error("{}: key `{key}`: HDF5: {message}", path.display())]
    Hdf5 {
        path: PathBuf,
        key: String,
        message: String,
    },
    /// A compressed HDF5 chunk that cannot be read (short read) or inflated (bad deflate
    /// stream, wrong decoded size).
    #[error("{}: key `{key}`: chunk {chunk} at file offset {offset}: {message}", path.display())]
    BadChunk {
        path: PathBuf,
        key: String,
        chunk: usize,
        offset: u64,
        message: String,
    },
    /// The source holds no episode.
    #[error("{}: no episodes found ({message})", path.display())]
    Empty { path: PathBuf, message: String },
    /// A derived episode id is not a valid episode id.
    #[error("episode id {id:?} (from {}): {message}", source_path.display())]
    BadEpisodeId {
        id: String,
        source_path: PathBuf,
        message: String,
    },
    /// Two sources give the same episode id.
    #[error("episode id {id:?} would be written twice (from {} and {})", first.display(), second.display())]
    DuplicateEpisodeId {
        id: String,
        first: PathBuf,
        second: PathBuf,
    },
    /// The episode directory exists already and `--overwrite` was not given.
    #[error("episode {id:?} exists already in {} (use --overwrite to replace it)", data_dir.display())]
    EpisodeExists { id: String, data_dir: PathBuf },
    /// A step of writing the episode into the data directory failed.
    #[error("episode {id:?}: {op} {}: {source}", path.display())]
    Write {
        id: String,
        op: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// The episode could not be encoded as WShard.
    #[error("episode {id:?}: {source}")]
    Format {
        id: String,
        source: wshard::FormatError,
    },
    /// A bad option value.
    #[error("{0}")]
    Usage(String),
}

impl ImportError {
    /// For `map_err`: an I/O error of `op` on `path` while writing episode `id` (empty when
    /// no one episode is at stake) as [`ImportError::Write`].
    pub(crate) fn write(
        id: &str,
        op: &'static str,
        path: &Path,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let (id, path) = (id.to_owned(), path.to_path_buf());
        move |source| Self::Write {
            id,
            op,
            path,
            source,
        }
    }

    /// True when the error is about the input data (exit 1), false for usage and I/O on
    /// the output side (exit 2).
    #[must_use]
    pub fn is_bad_input(&self) -> bool {
        !matches!(
            self,
            Self::Write { .. } | Self::Usage(_) | Self::EpisodeExists { .. }
        )
    }
}

/// Results of this crate.
pub type Result<T, E = ImportError> = std::result::Result<T, E>;
