//! `[rolling]`: always-on recording cut into consecutive episodes. Off by default.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// `[rolling]`: every single-stream episode the daemon records is split (as `wshard split`
/// does) when its current part reaches either bound; each part is finalized `complete`
/// and linked to the one before. A multi-stream episode is cut whole: by the payload
/// bytes of all its streams in the part, or by its longest stream's span. 0 turns a bound off; both 0 (the default): rolling is off.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RollingConfig {
    /// Timestep payload bytes (uncompressed) of a part. 0 (off) or at least 1, default 0.
    pub max_bytes: u64,
    /// Time a part spans, by the timesteps' `t_ns` (first to last), in milliseconds.
    /// 0 (off) or at least 1, default 0.
    pub max_duration_ms: u64,
    /// What the daemon does while what it must keep (open, not yet uploaded or protected
    /// episodes) alone exceeds `publish.quota_bytes`. Default `alert`.
    pub quota_policy: QuotaPolicy,
}

/// `rolling.quota_policy`: what happens while the episodes that may not be evicted alone
/// exceed `publish.quota_bytes` (eviction has nothing left to free).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuotaPolicy {
    /// Say so (status, metrics, the log); recording goes on.
    #[default]
    Alert,
    /// Also stop cutting episodes by `[rolling]` (the part recording goes on growing).
    StopRolling,
    /// Also refuse new trigger windows (the flight recorder asks `windows_refused`).
    RefuseWindows,
}

impl QuotaPolicy {
    /// The name as written in the file.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Alert => "alert",
            Self::StopRolling => "stop_rolling",
            Self::RefuseWindows => "refuse_windows",
        }
    }
}

impl RollingConfig {
    /// `max_duration_ms` as a [`Duration`] (zero: off).
    #[must_use]
    pub fn max_duration(&self) -> Duration {
        Duration::from_millis(self.max_duration_ms)
    }

    /// Whether either bound is set.
    #[must_use]
    pub fn is_on(&self) -> bool {
        self.max_bytes > 0 || self.max_duration_ms > 0
    }
}
