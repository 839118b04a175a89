//! `[flight]`: the flight recorder's ring, per stream opened in flight mode.

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::units::GIB;

/// Default `flight.ring_seconds`.
pub const DEFAULT_RING_SECONDS: u64 = 120;
/// Default `flight.ring_bytes`.
pub const DEFAULT_RING_BYTES: u64 = 4 * GIB;

/// Default `flight.persist_retries`.
pub const DEFAULT_PERSIST_RETRIES: u32 = 5;
/// Default `flight.persist_retry_backoff_ms`.
pub const DEFAULT_PERSIST_RETRY_BACKOFF_MS: u64 = 200;
/// Default `flight.post_grace_ms`.
pub const DEFAULT_POST_GRACE_MS: u64 = 5_000;
/// The longest `flight.persist_retry_backoff_ms` or `flight.post_grace_ms` (one hour).
pub const MAX_FLIGHT_WAIT_MS: u64 = 3_600_000;
/// The most `flight.persist_retries`.
pub const MAX_PERSIST_RETRIES: u32 = 1_000;

/// `[flight]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FlightConfig {
    /// Seconds of `t_ns` a flight stream's ring keeps on disk (older chunks not pinned by
    /// a trigger window are deleted). At least 1. Default 120.
    pub ring_seconds: u64,
    /// Bytes of chunk files a flight stream's ring keeps on disk. At least 1. Default 4 GiB.
    pub ring_bytes: u64,
    /// How many times a trigger window whose persistence fails (an I/O error, an
    /// unreadable source chunk, a full disk) is tried again before it is given up (recorded
    /// failed, its pins released). At most 1000. Default 5.
    pub persist_retries: u32,
    /// The wait before the first retry, doubled before each next one. At most one hour.
    /// Default 200.
    pub persist_retry_backoff_ms: u64,
    /// A window whose post-window is not reached in `t_ns` (the producer went silent) is
    /// finalized with what the rings hold once the wall clock passes the trigger's
    /// arrival + `post` + this grace. At most one hour. Default 5000.
    pub post_grace_ms: u64,
}

impl Default for FlightConfig {
    fn default() -> Self {
        Self {
            ring_seconds: DEFAULT_RING_SECONDS,
            ring_bytes: DEFAULT_RING_BYTES,
            persist_retries: DEFAULT_PERSIST_RETRIES,
            persist_retry_backoff_ms: DEFAULT_PERSIST_RETRY_BACKOFF_MS,
            post_grace_ms: DEFAULT_POST_GRACE_MS,
        }
    }
}

impl FlightConfig {
    pub(crate) fn validate(&self, origin: &str) -> Result<(), ConfigError> {
        for (key, value) in [
            ("flight.ring_seconds", self.ring_seconds),
            ("flight.ring_bytes", self.ring_bytes),
        ] {
            if value == 0 {
                return Err(ConfigError::invalid(
                    origin,
                    key,
                    value.to_string(),
                    "must be at least 1",
                ));
            }
        }
        if self.persist_retries > MAX_PERSIST_RETRIES {
            return Err(ConfigError::invalid(
                origin,
                "flight.persist_retries",
                self.persist_retries.to_string(),
                "must be at most 1000",
            ));
        }
        for (key, value) in [
            (
                "flight.persist_retry_backoff_ms",
                self.persist_retry_backoff_ms,
            ),
            ("flight.post_grace_ms", self.post_grace_ms),
        ] {
            if value > MAX_FLIGHT_WAIT_MS {
                return Err(ConfigError::invalid(
                    origin,
                    key,
                    value.to_string(),
                    "must be at most 3600000 (one hour)",
                ));
            }
        }
        Ok(())
    }
}
