//! `[publish]`: the robot's uploader. Finished episodes of the data directory are sent to an
//! S3-compatible store and appended to a dataset (docs/PUBLISH.md, "The robot's uploader").
//! Credentials are never in the config: they come from wshardd's environment
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`) or the AWS shared files.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use wshard::episode_dir::names::{validate_stream_name, MAX_STREAM_NAME_BYTES};

use crate::error::ConfigError;
use crate::units::MIB;

/// S3's smallest part (every part but the last).
pub const MIN_PUBLISH_PART_BYTES: u64 = 5 * MIB;
/// S3's largest part.
pub const MAX_PUBLISH_PART_BYTES: u64 = 5 << 30;
/// Longest `publish.robot` (a manifest key component): a robot name follows the rule of
/// stream names ([`validate_stream_name`]).
pub const MAX_ROBOT_BYTES: usize = MAX_STREAM_NAME_BYTES;
/// Longest wait between two attempts, in milliseconds (one day).
pub const MAX_RETRY_MS: u64 = 86_400_000;
/// Most failed attempts in a row `publish.multipart_restart_after` may wait for.
pub const MAX_MULTIPART_RESTART_AFTER: u32 = 1000;
/// The names `publish.provider` takes.
pub const PROVIDERS: &[&str] = &["s3", "gcs", "azure"];

/// `[publish]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PublishConfig {
    /// Run the uploader. Default `false`.
    pub enabled: bool,
    /// The object store's protocol: `s3` (S3 and S3-compatible servers), `gcs`, or `azure`
    /// (whose bucket is the container). Default `s3`.
    pub provider: String,
    /// `http(s)://host:port` of the endpoint (path-style for S3; may be `""` for `gcs`:
    /// Google's). Default `""`.
    pub endpoint: String,
    /// Bucket. Default `""`.
    pub bucket: String,
    /// Key prefix. Default `""`.
    pub prefix: String,
    /// Region. Default `us-east-1`.
    pub region: String,
    /// Allow an `http://` endpoint. Default `false`.
    pub allow_http: bool,
    /// `workspace/name` of the dataset finished episodes are appended to. Required when
    /// enabled. Default `""`.
    pub dataset: String,
    /// Manifest key prefix and catalog robot; `""` = the host name. Default `""`.
    pub robot: String,
    /// Upload bandwidth limit, bytes per second, paced per part; 0 = unlimited. Default 0.
    pub bandwidth_limit_bytes_per_s: u64,
    /// Part size of multipart uploads, >= 5 MiB. Default 16 MiB.
    pub part_size_bytes: u64,
    /// Files of at least this size go up as multipart uploads. Default 64 MiB.
    pub multipart_threshold_bytes: u64,
    /// The safety rescan of the data directory, and how often an idle uploader checks
    /// eviction (ms); finalized episodes are handed to the uploader at once. Default 60000.
    pub scan_interval_ms: u64,
    /// First wait after a failed attempt (ms), doubled up to `retry_max_ms`. Default 1000.
    pub retry_min_ms: u64,
    /// Longest wait between attempts (ms). Default 300000.
    pub retry_max_ms: u64,
    /// Delete the local copy once published and verified. Default `false`.
    pub delete_after_publish: bool,
    /// Data-directory quota in bytes: published episodes are evicted, oldest first, above
    /// it; 0 = none. Default 0.
    pub quota_bytes: u64,
    /// Failed attempts in a row at one multipart upload (a part or the completion answered
    /// with a 5xx or another error, or the upload lost again) after which it is given up
    /// and the blob sent again in a new upload. 1..=1000. Default 5.
    pub multipart_restart_after: u32,
    /// Run the upload thread under Linux's `SCHED_IDLE`: it gets only CPU time nothing
    /// else wants, so uploading never takes a core from recording; and its I/O in the idle
    /// class (`ioprio_set`). Default `true`.
    pub idle_priority: bool,
}

impl Default for PublishConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            provider: "s3".to_owned(),
            endpoint: String::new(),
            bucket: String::new(),
            prefix: String::new(),
            region: "us-east-1".to_owned(),
            allow_http: false,
            dataset: String::new(),
            robot: String::new(),
            bandwidth_limit_bytes_per_s: 0,
            part_size_bytes: 16 * MIB,
            multipart_threshold_bytes: 64 * MIB,
            scan_interval_ms: 60_000,
            retry_min_ms: 1_000,
            retry_max_ms: 300_000,
            delete_after_publish: false,
            quota_bytes: 0,
            multipart_restart_after: 5,
            idle_priority: true,
        }
    }
}

impl PublishConfig {
    /// `scan_interval_ms` as a [`Duration`].
    #[must_use]
    pub fn scan_interval(&self) -> Duration {
        Duration::from_millis(self.scan_interval_ms)
    }

    /// `retry_min_ms` as a [`Duration`].
    #[must_use]
    pub fn retry_min(&self) -> Duration {
        Duration::from_millis(self.retry_min_ms)
    }

    /// `retry_max_ms` as a [`Duration`].
    #[must_use]
    pub fn retry_max(&self) -> Duration {
        Duration::from_millis(self.retry_max_ms)
    }

    /// Check the table. The store keys (endpoint, bucket, dataset) are checked only when
    /// `enabled`; the numbers always.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the `publish.*` key.
    pub(crate) fn validate(&self, o: &str) -> Result<(), ConfigError> {
        let inv = |key: &str, value: String, reason: &str| {
            Err(ConfigError::invalid(o, key, value, reason))
        };
        if !(MIN_PUBLISH_PART_BYTES..=MAX_PUBLISH_PART_BYTES).contains(&self.part_size_bytes) {
            return inv(
                "publish.part_size_bytes",
                self.part_size_bytes.to_string(),
                &format!(
                    "must be {MIN_PUBLISH_PART_BYTES}..={MAX_PUBLISH_PART_BYTES} (S3's part sizes)"
                ),
            );
        }
        if self.multipart_threshold_bytes < self.part_size_bytes {
            return inv(
                "publish.multipart_threshold_bytes",
                self.multipart_threshold_bytes.to_string(),
                &format!(
                    "must be at least publish.part_size_bytes ({})",
                    self.part_size_bytes
                ),
            );
        }
        if !(10..=MAX_RETRY_MS).contains(&self.scan_interval_ms) {
            return inv(
                "publish.scan_interval_ms",
                self.scan_interval_ms.to_string(),
                &format!("must be 10..={MAX_RETRY_MS}"),
            );
        }
        if !(1..=MAX_MULTIPART_RESTART_AFTER).contains(&self.multipart_restart_after) {
            return inv(
                "publish.multipart_restart_after",
                self.multipart_restart_after.to_string(),
                &format!("must be 1..={MAX_MULTIPART_RESTART_AFTER}"),
            );
        }
        if !(1..=MAX_RETRY_MS).contains(&self.retry_min_ms) {
            return inv(
                "publish.retry_min_ms",
                self.retry_min_ms.to_string(),
                &format!("must be 1..={MAX_RETRY_MS}"),
            );
        }
        if self.retry_max_ms < self.retry_min_ms || self.retry_max_ms > MAX_RETRY_MS {
            return inv(
                "publish.retry_max_ms",
                self.retry_max_ms.to_string(),
                &format!(
                    "must be publish.retry_min_ms ({})..={MAX_RETRY_MS}",
                    self.retry_min_ms
                ),
            );
        }
        // The one rule of robot names, also `wshard publish --append --robot`'s.
        if !self.robot.is_empty() && validate_stream_name(&self.robot).is_err() {
            return inv(
                "publish.robot",
                format!("{:?}", self.robot),
                &format!(
                    "must be \"\" (the host name) or 1 to {MAX_ROBOT_BYTES} bytes of A-Z a-z 0-9 \
                     . _ -, not starting with `.`"
                ),
            );
        }
        if self.prefix.starts_with('/') || self.prefix.split('/').any(|s| s == "..") {
            return inv(
                "publish.prefix",
                format!("{:?}", self.prefix),
                "must be relative, without `..`",
            );
        }
        if !PROVIDERS.contains(&self.provider.as_str()) {
            return inv(
                "publish.provider",
                format!("{:?}", self.provider),
                "must be one of \"s3\", \"gcs\", \"azure\"",
            );
        }
        if !self.enabled {
            return Ok(());
        }
        let http = self.endpoint.starts_with("http://");
        // `gcs` with no endpoint: Google's own.
        let google_default = self.provider == "gcs" && self.endpoint.is_empty();
        if !google_default && !http && !self.endpoint.starts_with("https://") {
            return inv(
                "publish.endpoint",
                format!("{:?}", self.endpoint),
                "must be http(s)://host:port when publish.enabled",
            );
        }
        if http && !self.allow_http {
            return inv(
                "publish.endpoint",
                format!("{:?}", self.endpoint),
                "an http:// endpoint needs publish.allow_http = true (the traffic is not encrypted)",
            );
        }
        if self.bucket.is_empty() {
            return inv(
                "publish.bucket",
                "\"\"".to_owned(),
                "must not be empty when publish.enabled",
            );
        }
        if self.region.is_empty() {
            return inv(
                "publish.region",
                "\"\"".to_owned(),
                "must not be empty when publish.enabled",
            );
        }
        if !dataset_ok(&self.dataset) {
            return inv(
                "publish.dataset",
                format!("{:?}", self.dataset),
                "must be workspace/name (each 1-64 of a-z 0-9 _ -) when publish.enabled",
            );
        }
        Ok(())
    }
}

/// `workspace/name`, each part 1..=64 of `[a-z0-9_-]` (the publish crate's `DatasetId`).
fn dataset_ok(s: &str) -> bool {
    let Some((ws, name)) = s.split_once('/') else {
        return false;
    };
    [ws, name].iter().all(|p| {
        !p.is_empty()
            && p.len() <= 64
            && p.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
    })
}
