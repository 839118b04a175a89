//! `[flight]`: the flight recorder's ring, per stream opened in flight mode.

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::units::GIB;

/// Default `flight.ring_seconds`.
pub const DEFAULT_RING_SECONDS: u64 = 120;
/// Default `flight.ring_bytes`.
pub const DEFAULT_RING_BYTES: u64 = 4 * GIB;

/// `[flight]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FlightConfig {
    /// Seconds of `t_ns` a flight stream's ring keeps on disk (older chunks not pinned by
    /// a trigger window are deleted). At least 1. Default 120.
    pub ring_seconds: u64,
    /// Bytes of chunk files a flight stream's ring keeps on disk. At least 1. Default 4 GiB.
    pub ring_bytes: u64,
}

impl Default for FlightConfig {
    fn default() -> Self {
        Self {
            ring_seconds: DEFAULT_RING_SECONDS,
            ring_bytes: DEFAULT_RING_BYTES,
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
        Ok(())
    }
}
