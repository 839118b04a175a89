//! The small enumerations of the schema: fsync policy, durability class, log level.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The `fsync.policy` key as written: how often the journal is `fdatasync`ed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsyncMode {
    /// After every accepted timestep batch, before its DURABLE.
    Always,
    /// Every `fsync.interval_ms`, batching timesteps (group commit).
    #[default]
    Interval,
    /// Never on a timer: only when a chunk is finalized, on FLUSH and on CLOSE.
    Never,
}

impl FsyncMode {
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

/// The effective fsync policy, `fsync.policy` combined with `fsync.interval_ms`
/// (see [`crate::FsyncConfig::to_policy`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsyncPolicy {
    Always,
    Interval(Duration),
    Never,
}

/// The `durability.default` key: the durability class of an episode whose OPEN does not choose
/// one (see docs/PROTOCOL.md, OPEN `durability`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// Journal every timestep; DURABLE after `fdatasync` of the journal.
    #[default]
    Ack,
    /// No journal; only finalized chunks survive a crash.
    Chunk,
}

impl Durability {
    /// The name as written in the file.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ack => "ack",
            Self::Chunk => "chunk",
        }
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

impl fmt::Display for FsyncMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
