//! Typed read errors and their Python exception classes.
//!
//! The classes live in `wshard_reader/errors.py` (so that they can also derive from the
//! built-in `OSError`, `FileNotFoundError`, `LookupError` and `ValueError`); an error is raised
//! by looking its class up there. Every error names the file, and the stream and field when
//! they are known, both in its message and as attributes.

use std::path::{Path, PathBuf};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use wshard::FormatError;

/// Python module that defines the exception classes.
const ERRORS_MODULE: &str = "wshard_reader.errors";

/// Which exception class an error becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A file or directory the episode needs does not exist: `EpisodeNotFoundError`.
    NotFound,
    /// Any other I/O failure: `WshardIOError`.
    Io,
    /// Bytes that do not match their checksum, hash, codec or length: `CorruptDataError`.
    Corrupt,
    /// Well-formed bytes whose content breaks the format's rules: `InvalidEpisodeError`.
    Invalid,
    /// A stream or channel name the episode does not have: `UnknownNameError`.
    UnknownName,
    /// An argument the caller passed is not usable: `BadArgumentError`.
    BadArgument,
}

impl Kind {
    fn class_name(self) -> &'static str {
        match self {
            Self::NotFound => "EpisodeNotFoundError",
            Self::Io => "WshardIOError",
            Self::Corrupt => "CorruptDataError",
            Self::Invalid => "InvalidEpisodeError",
            Self::UnknownName => "UnknownNameError",
            Self::BadArgument => "BadArgumentError",
        }
    }
}

/// One read error, with what it is about.
#[derive(Debug)]
pub(crate) struct ReadError {
    pub kind: Kind,
    pub message: String,
    pub path: Option<PathBuf>,
    pub stream: Option<String>,
    pub field: Option<String>,
}

impl ReadError {
    pub(crate) fn new(kind: Kind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            path: None,
            stream: None,
            field: None,
        }
    }

    /// A format-library error about `path`.
    pub(crate) fn format(err: &FormatError, path: &Path) -> Self {
        let e = Self::new(format_kind(err), err.to_string()).at(path);
        match format_field(err) {
            Some(f) => e.field(f),
            None => e,
        }
    }

    /// Builder: the file the error is about (first one wins).
    #[must_use]
    pub(crate) fn at(mut self, path: &Path) -> Self {
        if self.path.is_none() {
            self.path = Some(path.to_path_buf());
        }
        self
    }

    /// Builder: the stream the error is about (first one wins).
    #[must_use]
    pub(crate) fn stream(mut self, stream: &str) -> Self {
        if self.stream.is_none() {
            self.stream = Some(stream.to_owned());
        }
        self
    }

    /// Builder: the field (block, key or argument) the error is about.
    #[must_use]
    pub(crate) fn field(mut self, field: impl Into<String>) -> Self {
        if self.field.is_none() {
            self.field = Some(field.into());
        }
        self
    }

    /// The full message: `stream `s`: path: message`.
    pub(crate) fn full_message(&self) -> String {
        let mut out = String::new();
        if let Some(s) = &self.stream {
            let named = format!("stream `{s}`");
            // Errors of the episode-directory reader already name their stream.
            if !self.message.contains(&named) {
                out.push_str(&format!("{named}: "));
            }
        }
        if let Some(p) = &self.path {
            let shown = p.display().to_string();
            // Many errors of the format library already name their file.
            if !self.message.contains(&shown) {
                out.push_str(&format!("{shown}: "));
            }
        }
        out.push_str(&self.message);
        out
    }

    /// The Python exception.
    pub(crate) fn into_pyerr(self, py: Python<'_>) -> PyErr {
        let message = self.full_message();
        match self.build(py, &message) {
            Ok(err) => err,
            Err(import_failed) => PyRuntimeError::new_err(format!(
                "{message} (and {ERRORS_MODULE} could not be imported: {import_failed})"
            )),
        }
    }

    fn build(&self, py: Python<'_>, message: &str) -> PyResult<PyErr> {
        let class = py.import(ERRORS_MODULE)?.getattr(self.kind.class_name())?;
        let exc = class.call1((message,))?;
        exc.setattr("path", self.path.as_ref().map(|p| p.display().to_string()))?;
        exc.setattr("stream", self.stream.clone())?;
        exc.setattr("field", self.field.clone())?;
        Ok(PyErr::from_value(exc))
    }
}

/// Result of the binding's internals.
pub(crate) type ReadResult<T> = Result<T, ReadError>;

/// Extension: turn a [`ReadResult`] into a `PyResult`.
pub(crate) trait IntoPy<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPy<T> for ReadResult<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| e.into_pyerr(py))
    }
}

/// The class a format-library error belongs to.
pub(crate) fn format_kind(err: &FormatError) -> Kind {
    match err {
        FormatError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            Kind::NotFound
        }
        FormatError::Io { .. } => Kind::Io,
        FormatError::Truncated { .. }
        | FormatError::BadMagic { .. }
        | FormatError::UnsupportedVersion { .. }
        | FormatError::BlockCrc { .. }
        | FormatError::UnknownCodec { .. }
        | FormatError::Decompress { .. }
        | FormatError::ChunkSha256 { .. }
        | FormatError::BadHeader { .. }
        | FormatError::BadEntry { .. }
        | FormatError::FileSizeMismatch { .. }
        | FormatError::LimitExceeded { .. } => Kind::Corrupt,
        _ => Kind::Invalid,
    }
}

/// The block or field a format-library error names, if any.
fn format_field(err: &FormatError) -> Option<String> {
    match err {
        FormatError::BlockNotFound { name }
        | FormatError::BlockCrc { name, .. }
        | FormatError::UnknownCodec { name, .. }
        | FormatError::Decompress { name, .. }
        | FormatError::View { name, .. } => Some(name.clone()),
        FormatError::BadJson { block, .. } => Some(block.clone()),
        FormatError::BadMeta { block, field, .. } => Some(format!("{block}.{field}")),
        FormatError::BadHeader { field, .. } => Some((*field).to_owned()),
        FormatError::ChunkSha256 { uri, .. } => Some(format!("{uri} sha256")),
        _ => None,
    }
}

/// The class of an I/O error.
pub(crate) fn io_kind(err: &std::io::Error) -> Kind {
    if err.kind() == std::io::ErrorKind::NotFound {
        Kind::NotFound
    } else {
        Kind::Io
    }
}
