//! The small enumerations of the schema: fsync policy, durability class, log level.
//!
//! The durability class is the protocol crate's [`Durability`] (one type for OPEN, the config
//! and the daemon); this module gives it its config spelling (`"ack"`, `"chunk"`).

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
pub use wshard_ingest_proto::Durability;

/// The `fsync.policy` key as written: which [`FsyncPolicy`], without its interval
/// (`fsync.interval_ms`, a key of its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsyncPolicyKind {
    /// After every accepted timestep batch, before its DURABLE.
    Always,
    /// Every `fsync.interval_ms`, batching timesteps (group commit).
    #[default]
    Interval,
    /// Never on a timer: only when a chunk is finalized, on FLUSH and on CLOSE.
    Never,
}

impl FsyncPolicyKind {
    /// The name as written in the file.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Always => "always",
            Self::Interval => "interval",
            Self::Never => "never",
        }
    }
}

/// When the journal is `fdatasync`ed: `fsync.policy` combined with `fsync.interval_ms`
/// (see [`crate::FsyncConfig::to_policy`]). The one fsync-policy type: the daemon's sessions
/// run with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// After every batch of frames drained from the queue (group commit).
    Always,
    /// At most this long after the first unsynced write.
    Interval(Duration),
    /// Never on a timer: DURABLE acks come only with finalized chunks, FLUSH and CLOSE.
    Never,
}

impl FsyncPolicy {
    /// The `fsync.policy` value this policy is written as.
    #[must_use]
    pub fn kind(self) -> FsyncPolicyKind {
        match self {
            Self::Always => FsyncPolicyKind::Always,
            Self::Interval(_) => FsyncPolicyKind::Interval,
            Self::Never => FsyncPolicyKind::Never,
        }
    }
}

/// `#[serde(with = "durability_text")]`: a [`Durability`] written `"ack"` or `"chunk"`.
pub(crate) mod durability_text {
    use serde::{de, Deserialize, Deserializer, Serializer};

    use super::Durability;

    /// The spellings accepted, in the order serde's messages name them.
    const VARIANTS: &[&str] = &["ack", "chunk"];

    pub(crate) fn serialize<S: Serializer>(d: &Durability, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(d.as_str())
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Durability, D::Error> {
        let text = String::deserialize(d)?;
        Durability::parse(&text).ok_or_else(|| de::Error::unknown_variant(&text, VARIANTS))
    }
}

/// The `log.level` key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Error,
    Warn,
    #[default]
    Info,
    Debug,
    Trace,
}

impl LogLevel {
    /// The name as written in the file, also a valid `tracing` filter directive.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warn => "warn",
            Self::Info => "info",
            Self::Debug => "debug",
            Self::Trace => "trace",
        }
    }
}

impl fmt::Display for FsyncPolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
