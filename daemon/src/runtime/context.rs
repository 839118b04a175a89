//! What the ingest connections and the control socket share: limits, the settings for
//! new episodes (replaced by SIGHUP), codec defaults, the registry and the shutdown flag.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, RwLock};

use wshard::codec::Codec;
use wshardd_config::Config;

use super::access::AccessPolicy;
use super::disk::{DiskMonitor, Statvfs};
use super::settings::{tunables, Tunables};
use crate::episode::Durability;
use crate::registry::Registry;
use crate::session::SessionSettings;
use crate::upload::UploadShared;
use wshard_storage::fsio::Fs;

/// Limits enforced per connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    pub(crate) max_frame_bytes: u32,
    pub(crate) max_channels: usize,
    /// `limits.max_episode_wire_bytes`: timestep record bytes one episode may receive.
    pub(crate) max_episode_wire_bytes: u64,
    pub(crate) max_connections: usize,
    pub(crate) max_episode_id_bytes: usize,
    /// `limits.max_event_bytes`: the most bytes of one `EVENT`'s data.
    pub(crate) max_event_bytes: usize,
}

/// Shared by the listener, every connection and the control socket.
pub struct ServerContext {
    pub(crate) fs: Arc<dyn Fs>,
    pub(crate) data_dir: PathBuf,
    pub(crate) limits: Limits,
    pub(crate) default_durability: Durability,
    pub(crate) tunables: RwLock<Tunables>,
    pub(crate) shutdown: Arc<AtomicBool>,
    pub(crate) active_connections: AtomicUsize,
    /// Open episodes, counters and flags, for the control socket.
    pub(crate) registry: Arc<Registry>,
    /// The allowlists (SIGHUP replaces them).
    pub(crate) access: RwLock<AccessPolicy>,
    /// Free space against the `[disk]` watermarks (SIGHUP replaces them).
    pub(crate) disk: DiskMonitor,
    /// The robot's uploader, as status, episodes and metrics show it.
    pub(crate) upload: Arc<UploadShared>,
    /// Flight streams and trigger windows.
    pub(crate) flight: Arc<crate::flight::FlightRegistry>,
}

impl std::fmt::Debug for ServerContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerContext")
            .field("data_dir", &self.data_dir)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl ServerContext {
    /// A context for `cfg`.
    #[must_use]
    pub(crate) fn new(cfg: &Config, fs: Arc<dyn Fs>, shutdown: Arc<AtomicBool>) -> Self {
        let registry = Arc::new(Registry::default());
        let upload = Arc::new(UploadShared::new(cfg.publish.enabled));
        upload.quota.set_policy(cfg.rolling.quota_policy);
        let disk = DiskMonitor::new(
            Box::new(Statvfs(cfg.data_dir.clone())),
            cfg.disk.clone(),
            registry.clone(),
        );
        let fs_for_flight = fs.clone();
        let shutdown_for_flight = shutdown.clone();
        let mut settings_for_flight = tunables(cfg).settings;
        // A window put in place is handed to the uploader like any finalized episode.
        settings_for_flight.handoff = upload.handoff.clone();
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
                max_event_bytes: usize::try_from(cfg.limits.max_event_bytes)
                    .unwrap_or(wshard_ingest_proto::DEFAULT_MAX_EVENT_BYTES),
            },
            default_durability: cfg.durability.default,
            tunables: RwLock::new(tunables(cfg)),
            shutdown,
            active_connections: AtomicUsize::new(0),
            registry,
            access: RwLock::new(AccessPolicy::from_config(cfg)),
            disk,
            flight: Arc::new(
                crate::flight::FlightRegistry::new(
                    fs_for_flight,
                    &cfg.data_dir,
                    settings_for_flight,
                    crate::session::flight_ring::RingBounds {
                        max_ns: cfg
                            .flight
                            .ring_seconds
                            .saturating_mul(crate::flight::options::NS_PER_S),
                        max_bytes: cfg.flight.ring_bytes,
                    },
                    shutdown_for_flight,
                )
                .with_policy(crate::flight::WindowPolicy {
                    persist_retries: cfg.flight.persist_retries,
                    persist_retry_backoff: std::time::Duration::from_millis(
                        cfg.flight.persist_retry_backoff_ms,
                    ),
                    post_grace: std::time::Duration::from_millis(cfg.flight.post_grace_ms),
                }),
            ),
            upload,
        }
    }

    /// The codec a channel gets when the client leaves it to the server.
    #[must_use]
    pub(crate) fn default_codec(&self, channel: &str) -> Codec {
        self.tunables
            .read()
            .map_or(Codec::zstd(), |t| t.codecs.codec_for(channel))
    }

    /// Settings for a new episode.
    #[must_use]
    pub(crate) fn settings(&self) -> SessionSettings {
        let mut s: SessionSettings = self
            .tunables
            .read()
            .map(|t| t.settings.clone())
            .unwrap_or_default();
        s.handoff = self.upload.handoff.clone();
        s
    }
}
