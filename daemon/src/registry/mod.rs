//! What the daemon is doing right now: the open episodes with their counters, the daemon's
//! own counters and flags. Written by the connections, read by the control socket and the
//! metrics; a stop request (an operator's `close`, `stop` or `abort`, the disk's high
//! watermark) travels from here to the connection that owns the episode.
//!
//! A stream of a multi-stream episode is an open episode here too, under the key
//! `EP/STREAM`; the multi-stream episodes themselves are kept beside them ([`multi`]).

mod multi;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use wshard::episode_dir::index::EpisodeStatus;
use wshard_ingest_proto::{Counters, MAX_COUNTERS_PER_STREAM};

use crate::episode::Durability;
use crate::recovery::{LeftAlone, RecoveryReport};
use crate::session::parts::PartControl;
use crate::session::EpisodeStats;

/// The credentials of a connected peer, from `SO_PEERCRED`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerCred {
    pub(crate) pid: i32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
}

/// Why the daemon finalizes an episode its client did not close.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// `wshard close EPISODE` from an operator with this uid.
    Operator { uid: u32 },
    /// Free space fell below the high watermark.
    Disk { free_bytes: u64, watermark: u64 },
    /// `wshard stop EPISODE` from an operator with this uid: finalized `complete`.
    OperatorStop { uid: u32 },
    /// `wshard abort EPISODE` from an operator with this uid: finalized `aborted`.
    OperatorAbort { uid: u32 },
    /// `rolling.quota_policy = "stop_rolling"`: what may not be evicted exceeds the quota.
    Quota { kept_bytes: u64, quota_bytes: u64 },
}

impl StopReason {
    /// The status the episode (or stream, or multi-stream episode's index) is finalized
    /// with: `complete` for `stop`, `aborted` for `abort`, `interrupted` otherwise.
    #[must_use]
    pub(crate) fn outcome(&self) -> EpisodeStatus {
        match self {
            Self::Operator { .. } | Self::Disk { .. } | Self::Quota { .. } => {
                EpisodeStatus::Interrupted
            }
            Self::OperatorStop { .. } => EpisodeStatus::Complete,
            Self::OperatorAbort { .. } => EpisodeStatus::Aborted,
        }
    }

    /// The reason: written to the manifest of an `interrupted` episode (`reason`), named in
    /// the producer's `ERROR{STOPPED}` and the logs for every reason.
    #[must_use]
    pub(crate) fn manifest_reason(&self) -> String {
        match self {
            Self::Operator { uid } => format!("closed by operator (uid {uid})"),
            Self::OperatorStop { uid } => format!("stopped by operator (uid {uid})"),
            Self::OperatorAbort { uid } => format!("aborted by operator (uid {uid})"),
            Self::Disk {
                free_bytes,
                watermark,
            } => format!(
                "disk: {free_bytes} bytes free, below disk.high_watermark_free_bytes ({watermark})"
            ),
            Self::Quota {
                kept_bytes,
                quota_bytes,
            } => format!(
                "quota: {kept_bytes} bytes that may not be evicted exceed publish.quota_bytes \
                 ({quota_bytes}); rolling.quota_policy = stop_rolling"
            ),
        }
    }
}

/// A `COUNTERS` frame refused because the stream would keep more than
/// [`MAX_COUNTERS_PER_STREAM`] distinct names (`ERROR{LIMIT}`; the frame is refused whole).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "COUNTERS: counter {name:?} would be name {} of this stream (the frame brings {new} new \
     names, {kept} are kept); at most {MAX_COUNTERS_PER_STREAM} distinct counter names are \
     kept per stream (the frame is refused, the values kept so far stay)",
    MAX_COUNTERS_PER_STREAM + 1
)]
pub(crate) struct TooManyCounterNames {
    /// The frame's first new name past the limit.
    name: String,
    /// Names the stream keeps already.
    kept: usize,
    /// Names of the frame the stream does not keep yet.
    new: usize,
}

/// How an episode's timesteps arrive, as a label for `status` and the metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum TransportKind {
    Socket = 0,
    Shm = 1,
}

impl TransportKind {
    /// `socket` or `shm`.
    #[must_use]
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Socket => "socket",
            Self::Shm => "shm",
        }
    }
}

/// One open episode (or stream) as the control socket sees it.
#[derive(Debug)]
pub struct LiveEpisode {
    /// The episode id, or `EP/STREAM` for a stream.
    pub(crate) episode_id: String,
    /// For a stream: its multi-stream episode.
    pub(crate) multi: Option<String>,
    /// The connection's name in the logs (`conn-7`).
    pub(crate) peer: String,
    pub(crate) client_name: String,
    pub(crate) cred: Option<PeerCred>,
    pub(crate) durability: Durability,
    pub(crate) opened_at: SystemTime,
    pub(crate) opened: Instant,
    pub(crate) stats: Arc<EpisodeStats>,
    /// The episode's parts (`split`, `[rolling]`): the part recording now. The registry
    /// keeps the episode under the producer's id whatever part records.
    pub(crate) parts: Option<Arc<PartControl>>,
    /// A stream's parts: it is cut with its multi-stream episode (`control::split_multi`).
    pub(crate) stream_parts: Option<Arc<PartControl>>,
    transport: AtomicU8,
    stop_requested: AtomicBool,
    stop: Mutex<Option<StopReason>>,
    /// The producer's counters (`COUNTERS`, version 2): the latest value of each name.
    /// Not durable: they go with the episode (or stream) when it ends.
    producer_counters: Mutex<BTreeMap<String, u64>>,
}

impl LiveEpisode {
    /// The transport in use (socket until a ring is attached).
    #[must_use]
    pub(crate) fn transport(&self) -> TransportKind {
        if self.transport.load(Ordering::Relaxed) == TransportKind::Shm as u8 {
            TransportKind::Shm
        } else {
            TransportKind::Socket
        }
    }

    /// Record that the episode now reads a shared-memory ring.
    pub(crate) fn set_transport(&self, t: TransportKind) {
        self.transport.store(t as u8, Ordering::Relaxed);
    }

    /// Take the producer's `COUNTERS`: each name's value replaces the one kept (names not
    /// in the frame keep theirs). A frame that would make more than
    /// [`MAX_COUNTERS_PER_STREAM`] names is refused whole.
    ///
    /// # Errors
    /// [`TooManyCounterNames`] (the `ERROR{LIMIT}`), naming the frame's new name that
    /// would cross the limit.
    pub(crate) fn set_producer_counters(
        &self,
        counters: &Counters,
    ) -> Result<(), TooManyCounterNames> {
        let Ok(mut kept) = self.producer_counters.lock() else {
            return Ok(());
        };
        let new: Vec<&str> = counters
            .counters
            .iter()
            .map(|c| c.name.as_str())
            .filter(|n| !kept.contains_key(*n))
            .collect();
        // The first new name past the limit: name MAX + 1 of the stream.
        let room = MAX_COUNTERS_PER_STREAM.saturating_sub(kept.len());
        if let Some(crossing) = new.get(room) {
            return Err(TooManyCounterNames {
                name: (*crossing).to_owned(),
                kept: kept.len(),
                new: new.len(),
            });
        }
        for c in &counters.counters {
            kept.insert(c.name.clone(), c.value);
        }
        Ok(())
    }

    /// The producer's counters, by name.
    #[must_use]
    pub(crate) fn producer_counters(&self) -> BTreeMap<String, u64> {
        self.producer_counters
            .lock()
            .map(|m| m.clone())
            .unwrap_or_default()
    }

    /// The multi-stream episode and the stream name of a stream (`EP/STREAM`), or the
    /// episode id and `""` for a single-stream episode.
    #[must_use]
    pub(crate) fn episode_and_stream(&self) -> (&str, &str) {
        match &self.multi {
            Some(m) => {
                let stream = self
                    .episode_id
                    .strip_prefix(m.as_str())
                    .and_then(|s| s.strip_prefix('/'))
                    .unwrap_or(&self.episode_id);
                (m.as_str(), stream)
            }
            None => (&self.episode_id, ""),
        }
    }

    /// Ask the owning connection to finalize the episode. The first reason wins.
    pub(crate) fn request_stop(&self, reason: StopReason) {
        if let Ok(mut s) = self.stop.lock() {
            if s.is_none() {
                *s = Some(reason);
            }
        }
        self.stop_requested.store(true, Ordering::Release);
    }

    /// The pending stop request, taken (for the owning connection).
    #[must_use]
    pub(crate) fn take_stop(&self) -> Option<StopReason> {
        if !self.stop_requested.load(Ordering::Acquire) {
            return None;
        }
        self.stop.lock().ok().and_then(|mut s| s.take())
    }
}

/// Counters of the daemon as a whole (monotonic unless said otherwise).
#[derive(Debug, Default)]
pub struct DaemonCounters {
    pub(crate) connections_accepted: AtomicU64,
    /// Refused by `limits.max_connections`, `limits.max_connections_per_uid` or the access
    /// allowlist.
    pub(crate) connections_refused: AtomicU64,
    /// Closed with `ERROR{TIMEOUT}`: no complete HELLO within `limits.handshake_timeout_ms`.
    pub(crate) connections_cut_handshake: AtomicU64,
    /// Closed with `ERROR{TIMEOUT}`: no open episode for `limits.no_episode_timeout_ms`.
    pub(crate) connections_cut_no_episode: AtomicU64,
    /// Closed because the client did not read its socket for the server's write timeout.
    pub(crate) connections_cut_write: AtomicU64,
    pub(crate) episodes_opened: AtomicU64,
    /// Episodes finalized, whatever their status.
    pub(crate) episodes_finalized: AtomicU64,
    /// OPENs refused below the low watermark.
    pub(crate) episodes_refused_disk: AtomicU64,
    /// Episodes finalized by a stop request (an operator's close, stop or abort, or the disk).
    pub(crate) episodes_stopped: AtomicU64,
}

/// The registry of open episodes, daemon counters and flags.
#[derive(Debug)]
pub struct Registry {
    episodes: Mutex<BTreeMap<String, Arc<LiveEpisode>>>,
    /// The open multi-stream episodes, by id.
    multi: Mutex<BTreeMap<String, Arc<crate::multi::MultiEpisode>>>,
    pub(crate) counters: DaemonCounters,
    /// Set by the disk monitor while free space is below the low watermark: OPEN is refused.
    pub(crate) disk_low: AtomicBool,
    /// Free bytes at the last check (`u64::MAX` before the first).
    pub(crate) disk_free_bytes: AtomicU64,
    /// What recovery did at startup.
    pub(crate) recovery: Mutex<Vec<RecoveryReport>>,
    /// The directories of the data directory recovery left alone at startup (not
    /// episodes).
    pub(crate) recovery_left_alone: Mutex<Vec<LeftAlone>>,
    pub(crate) started_at: SystemTime,
    pub(crate) started: Instant,
}

impl Default for Registry {
    fn default() -> Self {
        Self {
            episodes: Mutex::new(BTreeMap::new()),
            multi: Mutex::new(BTreeMap::new()),
            counters: DaemonCounters::default(),
            disk_low: AtomicBool::new(false),
            disk_free_bytes: AtomicU64::new(u64::MAX),
            recovery: Mutex::new(Vec::new()),
            recovery_left_alone: Mutex::new(Vec::new()),
            started_at: SystemTime::now(),
            started: Instant::now(),
        }
    }
}

/// What a connection gives when its episode opens.
#[derive(Debug)]
pub(crate) struct NewEpisode {
    /// The episode id, or `EP/STREAM` for a stream.
    pub(crate) episode_id: String,
    /// For a stream: its multi-stream episode.
    pub(crate) multi: Option<String>,
    pub(crate) peer: String,
    pub(crate) client_name: String,
    pub(crate) cred: Option<PeerCred>,
    pub(crate) durability: Durability,
    pub(crate) stats: Arc<EpisodeStats>,
    pub(crate) parts: Option<Arc<PartControl>>,
    /// A stream's parts (`None` for an episode of its own).
    pub(crate) stream_parts: Option<Arc<PartControl>>,
}

/// Removes its episode from the registry when dropped.
#[derive(Debug)]
pub(crate) struct Registration {
    registry: Arc<Registry>,
    pub(crate) live: Arc<LiveEpisode>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Ok(mut map) = self.registry.episodes.lock() {
            map.remove(&self.live.episode_id);
        }
        self.registry
            .counters
            .episodes_finalized
            .fetch_add(1, Ordering::Relaxed);
    }
}

impl Registry {
    /// Add an open episode; it leaves the registry when the returned guard is dropped.
    #[must_use]
    pub(crate) fn register(self: &Arc<Self>, e: NewEpisode) -> Registration {
        let live = Arc::new(LiveEpisode {
            episode_id: e.episode_id,
            multi: e.multi,
            peer: e.peer,
            client_name: e.client_name,
            cred: e.cred,
            durability: e.durability,
            opened_at: SystemTime::now(),
            opened: Instant::now(),
            stats: e.stats,
            parts: e.parts,
            stream_parts: e.stream_parts,
            transport: AtomicU8::new(TransportKind::Socket as u8),
            stop_requested: AtomicBool::new(false),
            stop: Mutex::new(None),
            producer_counters: Mutex::new(BTreeMap::new()),
        });
        if let Ok(mut map) = self.episodes.lock() {
            map.insert(live.episode_id.clone(), live.clone());
        }
        self.counters
            .episodes_opened
            .fetch_add(1, Ordering::Relaxed);
        Registration {
            registry: self.clone(),
            live,
        }
    }

    /// The open episodes, by id.
    #[must_use]
    pub(crate) fn episodes(&self) -> Vec<Arc<LiveEpisode>> {
        self.episodes
            .lock()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// One open episode.
    #[must_use]
    pub(crate) fn episode(&self, id: &str) -> Option<Arc<LiveEpisode>> {
        self.episodes.lock().ok().and_then(|m| m.get(id).cloned())
    }

    /// The open episode `id`, or the split episode whose part recording now is `id`
    /// (`EP.0002`: the registry keeps the episode under the producer's id `EP`).
    #[must_use]
    pub(crate) fn episode_or_part(&self, id: &str) -> Option<Arc<LiveEpisode>> {
        self.episode(id).or_else(|| {
            self.episodes().into_iter().find(|e| {
                e.parts
                    .as_ref()
                    .is_some_and(|p| p.number() > 0 && p.current() == id)
            })
        })
    }
}
