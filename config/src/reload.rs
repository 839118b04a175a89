//! What a SIGHUP reload may apply to the running daemon, and what needs a restart.

use crate::schema::Config;

/// How a changed key takes effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReloadClass {
    /// SIGHUP applies it: log level at once; fsync, rotation, rolling and codecs to new chunks and
    /// episodes; `limits.max_connections`, `limits.max_connections_per_uid`, the two
    /// connection deadlines (`limits.handshake_timeout_ms`, `limits.no_episode_timeout_ms`)
    /// and the allowlists to new connections; the disk watermarks at the next check.
    Applied,
    /// Only a restart applies it (the running value stays in force after SIGHUP).
    Restart,
}

struct KeyDiff {
    key: &'static str,
    class: ReloadClass,
    differs: fn(&Config, &Config) -> bool,
}

/// One entry per leaf key; the name is built from the field path so the two cannot disagree.
macro_rules! key {
    ($class:ident, $first:ident $(. $rest:ident)*) => {
        KeyDiff {
            key: concat!(stringify!($first) $(, ".", stringify!($rest))*),
            class: ReloadClass::$class,
            differs: |a, b| a.$first $(.$rest)* != b.$first $(.$rest)*,
        }
    };
}

static KEYS: &[KeyDiff] = &[
    key!(Restart, data_dir),
    key!(Restart, socket.path),
    key!(Restart, socket.mode),
    key!(Restart, limits.max_frame_bytes),
    key!(Restart, limits.max_channels),
    key!(Restart, limits.max_episode_wire_bytes),
    key!(Applied, limits.max_connections),
    key!(Restart, limits.max_episode_id_bytes),
    key!(Applied, limits.max_connections_per_uid),
    key!(Applied, limits.handshake_timeout_ms),
    key!(Applied, limits.no_episode_timeout_ms),
    key!(Restart, limits.max_event_bytes),
    key!(Applied, rotation.max_timesteps),
    key!(Applied, rotation.max_bytes),
    key!(Applied, rotation.max_seconds),
    key!(Applied, rolling.max_bytes),
    key!(Applied, rolling.max_duration_ms),
    key!(Restart, rolling.quota_policy),
    key!(Applied, codecs.default),
    key!(Applied, codecs.channels),
    key!(Applied, fsync.policy),
    key!(Applied, fsync.interval_ms),
    key!(Restart, durability.default),
    key!(Restart, queues.max_pending_frames),
    key!(Restart, queues.max_pending_bytes),
    key!(Restart, queues.compression_workers),
    key!(Restart, recovery.quarantine_dir_name),
    key!(Applied, log.level),
    key!(Restart, control.path),
    key!(Restart, control.mode),
    key!(Applied, control.admin_uids),
    key!(Applied, control.admin_gids),
    key!(Restart, control.metrics_listen),
    key!(Restart, access.socket_group),
    key!(Applied, access.allow_uids),
    key!(Applied, access.allow_gids),
    key!(Applied, disk.low_watermark_free_bytes),
    key!(Applied, disk.high_watermark_free_bytes),
    key!(Applied, disk.check_interval_ms),
    key!(Applied, disk.preallocate),
    key!(Restart, flight.ring_seconds),
    key!(Restart, flight.ring_bytes),
    key!(Restart, flight.persist_retries),
    key!(Restart, flight.persist_retry_backoff_ms),
    key!(Restart, flight.post_grace_ms),
    key!(Restart, publish.enabled),
    key!(Restart, publish.provider),
    key!(Restart, publish.idle_priority),
    key!(Restart, publish.endpoint),
    key!(Restart, publish.bucket),
    key!(Restart, publish.prefix),
    key!(Restart, publish.region),
    key!(Restart, publish.allow_http),
    key!(Restart, publish.dataset),
    key!(Restart, publish.robot),
    key!(Restart, publish.bandwidth_limit_bytes_per_s),
    key!(Restart, publish.part_size_bytes),
    key!(Restart, publish.multipart_threshold_bytes),
    key!(Restart, publish.scan_interval_ms),
    key!(Restart, publish.retry_min_ms),
    key!(Restart, publish.retry_max_ms),
    key!(Restart, publish.delete_after_publish),
    key!(Restart, publish.quota_bytes),
    key!(Restart, publish.multipart_restart_after),
];

/// Every leaf key of the schema (`codecs.channels` counts as one) with its reload class.
pub fn schema_keys() -> impl Iterator<Item = (&'static str, ReloadClass)> {
    KEYS.iter().map(|k| (k.key, k.class))
}

impl Config {
    /// The keys whose values differ between `self` (running) and `new` (re-read on SIGHUP),
    /// split into those SIGHUP applies and those that need a restart, in schema order.
    #[must_use]
    pub fn reloadable_diff(&self, new: &Config) -> (Vec<&'static str>, Vec<&'static str>) {
        let mut applied = Vec::new();
        let mut needs_restart = Vec::new();
        for k in KEYS.iter().filter(|k| (k.differs)(self, new)) {
            match k.class {
                ReloadClass::Applied => applied.push(k.key),
                ReloadClass::Restart => needs_restart.push(k.key),
            }
        }
        (applied, needs_restart)
    }
}
