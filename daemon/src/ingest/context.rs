//! What every connection needs from the server: limits, settings for new episodes,
//! codec defaults, and the shutdown flag.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, RwLock};

use wshard::codec::Codec;
use wshardd_config::Config;

use super::deadline::Deadlines;
use super::slots::UidSlots;
use crate::episode::Durability;
use crate::fsio::Fs;
use crate::registry::Registry;
use crate::runtime::access::AccessPolicy;
use crate::runtime::disk::{DiskMonitor, Statvfs};
use crate::session::{Rotation, SessionSettings};

/// Limits enforced per connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_frame_bytes: u32,
    pub max_channels: usize,
    /// `limits.max_episode_wire_bytes`: timestep record bytes one episode may receive.
    pub max_episode_wire_bytes: u64,
    pub max_connections: usize,
    pub max_episode_id_bytes: usize,
}

/// The parts of the config that SIGHUP may change, applied to new episodes (settings,
/// codecs) and new connections (the connection limits and deadlines).
#[derive(Clone, Debug)]
pub struct Tunables {
    pub settings: SessionSettings,
    pub codecs: wshardd_config::CodecsConfig,
    pub max_connections: usize,
    /// `limits.max_connections_per_uid`.
    pub max_connections_per_uid: usize,
    /// `limits.handshake_timeout_ms` and `limits.no_episode_timeout_ms`.
    pub deadlines: Deadlines,
}

/// Shared by the listener and every connection.
pub struct ServerContext {
    pub fs: Arc<dyn Fs>,
    pub data_dir: PathBuf,
    pub limits: Limits,
    pub default_durability: Durability,
    pub tunables: RwLock<Tunables>,
    pub shutdown: Arc<AtomicBool>,
    pub active_connections: AtomicUsize,
    /// The connections each peer uid holds (`limits.max_connections_per_uid`).
    pub uid_slots: Arc<UidSlots>,
    /// Open episodes, counters and flags, for the control socket.
    pub registry: Arc<Registry>,
    /// The allowlists (SIGHUP replaces them).
    pub access: RwLock<AccessPolicy>,
    /// Free space against the `[disk]` watermarks (SIGHUP replaces them).
    pub disk: DiskMonitor,
}

impl std::fmt::Debug for ServerContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerContext")
            .field("data_dir", &self.data_dir)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

pub use crate::session::CHUNKS_IN_MEMORY;

/// The payload bytes of one chunk for a memory budget of `budget` (`rotation.max_bytes`):
/// the open chunk and the one being written share the budget.
#[must_use]
pub fn chunk_bytes(budget: u64) -> u64 {
    (budget / CHUNKS_IN_MEMORY).max(1)
}

/// Session settings from the config.
#[must_use]
pub fn session_settings(cfg: &Config) -> SessionSettings {
    SessionSettings {
        fsync: cfg.fsync_policy(),
        rotation: Rotation {
            max_timesteps: cfg.rotation.max_timesteps,
            max_bytes: chunk_bytes(cfg.rotation.max_bytes),
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
    }
}

/// Tunables from the config.
#[must_use]
pub fn tunables(cfg: &Config) -> Tunables {
    Tunables {
        settings: session_settings(cfg),
        codecs: cfg.codecs.clone(),
        max_connections: usize::try_from(cfg.limits.max_connections).unwrap_or(64),
        max_connections_per_uid: usize::try_from(cfg.limits.max_connections_per_uid).unwrap_or(32),
        deadlines: Deadlines {
            handshake: cfg.limits.handshake_timeout(),
            no_episode: cfg.limits.no_episode_timeout(),
        },
    }
}

impl ServerContext {
    /// A context for `cfg`.
    #[must_use]
    pub fn new(cfg: &Config, fs: Arc<dyn Fs>, shutdown: Arc<AtomicBool>) -> Self {
        let registry = Arc::new(Registry::default());
        let disk = DiskMonitor::new(
            Box::new(Statvfs(cfg.data_dir.clone())),
            cfg.disk.clone(),
            registry.clone(),
        );
        Self {
            fs,
            data_dir: cfg.data_dir.clone(),
            limits: Limits {
                max_frame_bytes: cfg.limits.max_frame_bytes,
                max_channels: usize::try_from(cfg.limits.max_channels).unwrap_or(256),
                max_episode_wire_bytes: cfg.limits.max_episode_wire_bytes,
                max_connections: usize::try_from(cfg.limits.max_connections).unwrap_or(64),
                max_episode_id_bytes: usize::try_from(cfg.limits.max_episode_id_bytes)
                    .unwrap_or(128),
            },
            default_durability: cfg.durability.default,
            tunables: RwLock::new(tunables(cfg)),
            shutdown,
            active_connections: AtomicUsize::new(0),
            uid_slots: Arc::new(UidSlots::default()),
            registry,
            access: RwLock::new(AccessPolicy::from_config(cfg)),
            disk,
        }
    }

    /// The codec a channel gets when the client leaves it to the server.
    #[must_use]
    pub fn default_codec(&self, channel: &str) -> Codec {
        self.tunables
            .read()
            .map_or(Codec::zstd(), |t| t.codecs.codec_for(channel))
    }

    /// The deadlines for a new connection.
    #[must_use]
    pub fn deadlines(&self) -> Deadlines {
        self.tunables.read().map_or(
            Deadlines {
                handshake: wshardd_config::LimitsConfig::default().handshake_timeout(),
                no_episode: wshardd_config::LimitsConfig::default().no_episode_timeout(),
            },
            |t| t.deadlines,
        )
    }

    /// Settings for a new episode.
    #[must_use]
    pub fn settings(&self) -> SessionSettings {
        self.tunables
            .read()
            .map(|t| t.settings.clone())
            .unwrap_or_default()
    }
}
