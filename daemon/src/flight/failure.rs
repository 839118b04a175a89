//! Why a trigger window was given up ([`WindowFailure`]), and how hard the window thread
//! tries before it gives up ([`WindowPolicy`]).
//!
//! A window's persistence that fails (an I/O error while copying, an unreadable source
//! chunk, a full disk) is tried again `persist_retries` times, the first after
//! `persist_retry_backoff`, each next one after twice the wait before; then the window is
//! given up (`flight/give_up.rs`): the failure is recorded in its pending record, its pins
//! are released, and what it holds is kept.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The `[flight]` settings of the window threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowPolicy {
    /// Retries after the first failure of a window's persistence.
    pub persist_retries: u32,
    /// The wait before the first retry (doubled before each next one).
    pub persist_retry_backoff: Duration,
    /// Past the trigger's arrival + `post` + this, the window is finalized with what the
    /// rings hold (its post-window cut short).
    pub post_grace: Duration,
}

impl Default for WindowPolicy {
    fn default() -> Self {
        Self {
            persist_retries: wshardd_config::DEFAULT_PERSIST_RETRIES,
            persist_retry_backoff: Duration::from_millis(
                wshardd_config::DEFAULT_PERSIST_RETRY_BACKOFF_MS,
            ),
            post_grace: Duration::from_millis(wshardd_config::DEFAULT_POST_GRACE_MS),
        }
    }
}

/// The longest wait between two retries, whatever the backoff doubled to.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

impl WindowPolicy {
    /// The wait before retry `n` (1-based).
    #[must_use]
    pub fn backoff(&self, n: u32) -> Duration {
        let factor = 1u32 << n.saturating_sub(1).min(16);
        self.persist_retry_backoff
            .saturating_mul(factor)
            .min(MAX_BACKOFF)
    }
}

/// What stays where after a window was given up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailedWindowKept {
    /// What the window held is an episode `data_dir/W` finalized `interrupted`.
    Interrupted,
    /// What the window held could not be finalized: its chunks stay in the build directory
    /// `data_dir/.flight/build/W` (never removed by the daemon), the record names the failure.
    InBuild,
    /// The window held no step yet: there is nothing to keep.
    Nothing,
}

/// A trigger window given up after its retries: which window, which stream (none when the
/// failure was the window's own finalizing), what failed and how often it was tried.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error(
    "trigger window {window}: {} failed after {attempts} attempts: {error}",
    .stream.as_deref().map_or_else(|| "finalizing".to_owned(), |s| format!("stream `{s}`"))
)]
pub struct WindowFailure {
    /// The window episode.
    pub window: String,
    /// The window stream whose copy failed (its name in the window episode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
    /// The source stream (`EPISODE` or `EPISODE/STREAM`) of `stream`.
    #[serde(rename = "source", default, skip_serializing_if = "Option::is_none")]
    pub source_stream: Option<String>,
    /// The last error, naming the step and the file.
    pub error: String,
    /// How many times persistence was tried.
    pub attempts: u32,
    pub failed_unix_ns: u64,
    /// What was kept of it.
    pub kept: FailedWindowKept,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flight_window_failure_names_window_stream_and_step() {
        let f = WindowFailure {
            window: "flight-1-1".into(),
            stream: Some("cam".into()),
            source_stream: Some("ep/cam".into()),
            error: "read source chunk /d/ep_chunk_0002.wshard: EIO".into(),
            attempts: 6,
            failed_unix_ns: 1,
            kept: FailedWindowKept::Interrupted,
        };
        let text = f.to_string();
        for part in ["flight-1-1", "`cam`", "6 attempts", "ep_chunk_0002"] {
            assert!(text.contains(part), "{text}");
        }
        let p = WindowPolicy {
            persist_retries: 3,
            persist_retry_backoff: Duration::from_millis(10),
            post_grace: Duration::ZERO,
        };
        assert_eq!(p.backoff(1), Duration::from_millis(10));
        assert_eq!(p.backoff(3), Duration::from_millis(40));
        assert_eq!(p.backoff(1000), MAX_BACKOFF);
    }
}
