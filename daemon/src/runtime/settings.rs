//! The config mapped to what the daemon runs with: the settings of new episodes and the
//! parts SIGHUP may change.

use std::time::Duration;

use wshardd_config::Config;

use crate::session::{Rolling, Rotation, SessionSettings};

/// The parts of the config that SIGHUP may change, applied to new episodes (settings,
/// codecs) and new connections (the connection limits and deadlines).
#[derive(Clone, Debug)]
pub(crate) struct Tunables {
    pub(crate) settings: SessionSettings,
    pub(crate) codecs: wshardd_config::CodecsConfig,
    pub(crate) max_connections: usize,
    /// `limits.max_connections_per_uid`.
    pub(crate) max_connections_per_uid: usize,
    /// `limits.handshake_timeout_ms`: a complete HELLO within this long of the accept.
    pub(crate) handshake_timeout: Duration,
    /// `limits.no_episode_timeout_ms`: an open episode within this long of the HELLO (or
    /// of the end of the last episode).
    pub(crate) no_episode_timeout: Duration,
}

/// Session settings from the config.
#[must_use]
pub(crate) fn session_settings(cfg: &Config) -> SessionSettings {
    SessionSettings {
        fsync: cfg.fsync_policy(),
        max_episode_id_bytes: usize::try_from(cfg.limits.max_episode_id_bytes)
            .unwrap_or(wshard_storage::layout::MAX_EPISODE_ID_BYTES),
        rolling: Rolling {
            max_bytes: cfg.rolling.max_bytes,
            max_duration_ns: u64::try_from(cfg.rolling.max_duration().as_nanos())
                .unwrap_or(u64::MAX),
        },
        rotation: Rotation {
            max_timesteps: cfg.rotation.max_timesteps,
            // The episode's chunk memory budget, split by `session::chunk_byte_limit`.
            max_bytes: cfg.rotation.max_bytes,
            max_age: cfg.rotation.max_age(),
        },
        queue_frames: usize::try_from(cfg.queues.max_pending_frames).unwrap_or(64),
        queue_bytes: cfg.queues.max_pending_bytes,
        compression_workers: usize::try_from(cfg.queues.compression_workers).unwrap_or(2),
        // Channels carry their own codec from the schema; `default_codec` covers the blocks
        // the recorder adds (reward, done, time/timestamps_ns), which compress very well and
        // are still kept raw when they do not shrink. The header's compression_default stays
        // 0 so no reader applies a codec to a block that does not name one.
        write_options: wshard::episode::EpisodeWriteOptions {
            default_codec: wshard::codec::Codec::zstd(),
            compression_default: Some(0),
            ..wshard::episode::EpisodeWriteOptions::default()
        },
        preallocate: cfg.disk.preallocate,
        // Connected by `ServerContext::settings` to the uploader.
        handoff: crate::upload::Handoff::default(),
    }
}

/// Tunables from the config.
#[must_use]
pub(crate) fn tunables(cfg: &Config) -> Tunables {
    Tunables {
        settings: session_settings(cfg),
        codecs: cfg.codecs.clone(),
        max_connections: usize::try_from(cfg.limits.max_connections).unwrap_or(64),
        max_connections_per_uid: usize::try_from(cfg.limits.max_connections_per_uid).unwrap_or(32),
        handshake_timeout: cfg.limits.handshake_timeout(),
        no_episode_timeout: cfg.limits.no_episode_timeout(),
    }
}
