//! The one error type of this crate.

use std::path::PathBuf;

/// Why a configuration could not be loaded.
///
/// Every variant says where the configuration came from (`path` or `origin`, e.g. the file
/// name or `built-in defaults`) so the daemon can print it as-is and exit.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read (a missing `--config` or `WSHARDD_CONFIG` file, a
    /// permission problem, ...).
    #[error("config {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The text is not valid TOML or has a key the schema does not know. `message` names the
    /// key (and its table) and the line, e.g.
    /// ``unknown key `rotaton` at top level (line 12); did you mean `rotation`?``.
    #[error("config {origin}: {message}")]
    Parse { origin: String, message: String },

    /// A key has a value of the wrong type or outside its allowed range.
    /// `key` is the full dotted path (`fsync.interval_ms`, `codecs.channels."cam*"`),
    /// `value` the value as TOML text (`0`, `"sometimes"`).
    #[error("config {origin}: {key} = {value}: {reason}")]
    Invalid {
        origin: String,
        key: String,
        value: String,
        reason: String,
    },
}

impl ConfigError {
    /// The dotted key path an [`ConfigError::Invalid`] is about, `None` for the other variants.
    #[must_use]
    pub fn key(&self) -> Option<&str> {
        match self {
            Self::Invalid { key, .. } => Some(key),
            Self::Io { .. } | Self::Parse { .. } => None,
        }
    }

    pub(crate) fn invalid(
        origin: &str,
        key: impl Into<String>,
        value: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self::Invalid {
            origin: origin.to_owned(),
            key: key.into(),
            value: value.into(),
            reason: reason.into(),
        }
    }
}
