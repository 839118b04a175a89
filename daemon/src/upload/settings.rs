//! What the uploader takes from the config ([`UploaderSettings`]: `[publish]` and the
//! `[disk]` low watermark, with what may be evicted: [`EvictPolicy`]), and the robot name
//! when `publish.robot` is empty (the host name). A leaf: it calls no other module of the
//! uploader.

use std::path::PathBuf;
use std::time::Duration;

use wshard_publish::{StoreConfig, TransferOptions};

/// The uploader's directory under the data directory, where its queue is (hidden:
/// recovery, the episode list and the uploader's own scan skip it).
pub const UPLOAD_DIR: &str = ".upload";

/// What may be evicted (`upload::evict`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EvictPolicy {
    pub delete_after_publish: bool,
    /// 0: no quota.
    pub quota_bytes: u64,
    /// `disk.low_watermark_free_bytes`.
    pub low_watermark_free_bytes: u64,
}

/// What the uploader needs from the config.
#[derive(Clone, Debug)]
pub struct UploaderSettings {
    /// Where the episodes are.
    pub data_dir: PathBuf,
    /// Where the queue log is (`data_dir/.upload`).
    pub queue_dir: PathBuf,
    pub store: StoreConfig,
    pub transfer: TransferOptions,
    /// `workspace/name`.
    pub dataset: String,
    /// Manifest key prefix and catalog robot.
    pub robot: String,
    pub bandwidth_limit_bytes_per_s: u64,
    pub scan_interval: Duration,
    pub retry_min: Duration,
    pub retry_max: Duration,
    pub evict: EvictPolicy,
    /// Run the upload thread under `SCHED_IDLE` (`publish.idle_priority`).
    pub idle_priority: bool,
    /// Failed attempts in a row at one multipart upload before it is restarted fresh
    /// (`publish.multipart_restart_after`).
    pub multipart_restart_after: u32,
}

impl UploaderSettings {
    /// From the config (`[publish]`, `[disk]`).
    #[must_use]
    pub fn from_config(cfg: &wshardd_config::Config) -> Self {
        let p = &cfg.publish;
        let robot = if p.robot.is_empty() {
            host_name()
        } else {
            p.robot.clone()
        };
        Self {
            data_dir: cfg.data_dir.clone(),
            queue_dir: cfg.data_dir.join(UPLOAD_DIR),
            store: StoreConfig {
                // Validated by the config crate: one of its PROVIDERS.
                provider: p.provider.parse().unwrap_or_default(),
                endpoint: p.endpoint.clone(),
                bucket: p.bucket.clone(),
                prefix: p.prefix.clone(),
                region: p.region.clone(),
                allow_http: p.allow_http,
            },
            transfer: TransferOptions {
                multipart_threshold: p.multipart_threshold_bytes,
                part_size: usize::try_from(p.part_size_bytes).unwrap_or(usize::MAX),
                // The uploader retries by itself, offline-first: the client gives up soon.
                max_retries: 1,
                connect_timeout: Duration::from_secs(5),
                retry_timeout: Duration::from_secs(20),
            },
            dataset: p.dataset.clone(),
            robot,
            bandwidth_limit_bytes_per_s: p.bandwidth_limit_bytes_per_s,
            scan_interval: p.scan_interval(),
            retry_min: p.retry_min(),
            retry_max: p.retry_max(),
            evict: EvictPolicy {
                delete_after_publish: p.delete_after_publish,
                quota_bytes: p.quota_bytes,
                low_watermark_free_bytes: cfg.disk.low_watermark_free_bytes,
            },
            idle_priority: p.idle_priority,
            multipart_restart_after: p.multipart_restart_after,
        }
    }
}

/// The host name as a manifest key component (`[A-Za-z0-9_.-]`, `robot` when unknown).
#[must_use]
pub fn host_name() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    let head: String = raw.trim().chars().take(MAX_ROBOT).collect();
    let clean = wshard::episode_dir::name_rule::name_safe(&head);
    if clean.is_empty() {
        "robot".to_owned()
    } else {
        clean
    }
}

/// Longest robot name taken from the host name.
pub const MAX_ROBOT: usize = wshardd_config::MAX_ROBOT_BYTES;
