//! The schema: one struct per table, every key optional with the default given here.
//!
//! Durations are integers whose unit is in the key name (`interval_ms`, `max_seconds`);
//! sizes are integers in bytes.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::codecs::CodecsConfig;
use crate::deprecated::Deprecation;
use crate::flight::FlightConfig;
use crate::kinds::{durability_text, Durability, FsyncPolicy, FsyncPolicyKind, LogLevel};
use crate::publish::PublishConfig;
use crate::rolling::RollingConfig;
use crate::service::{AccessConfig, ControlConfig, DiskConfig};
use crate::units::{MIB, TIB};

/// The whole configuration (`wshardd.toml`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Root directory of episodes, manifests, journals and the quarantine.
    /// Default `wshard-data`. Relative: see the crate documentation.
    pub data_dir: PathBuf,
    pub socket: SocketConfig,
    pub limits: LimitsConfig,
    pub rotation: RotationConfig,
    /// Always-on recording cut into consecutive episodes (off by default).
    pub rolling: RollingConfig,
    pub codecs: CodecsConfig,
    pub fsync: FsyncConfig,
    pub durability: DurabilityConfig,
    pub queues: QueuesConfig,
    pub recovery: RecoveryConfig,
    pub log: LogConfig,
    pub control: ControlConfig,
    pub access: AccessConfig,
    pub disk: DiskConfig,
    /// The robot's uploader (off by default).
    pub publish: PublishConfig,
    /// The flight recorder's ring (streams opened in flight mode).
    pub flight: FlightConfig,
    /// Deprecated keys the file used (read under their new names), for the daemon to warn
    /// about. Not a key.
    #[serde(skip)]
    pub deprecations: Vec<Deprecation>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("wshard-data"),
            socket: SocketConfig::default(),
            limits: LimitsConfig::default(),
            rotation: RotationConfig::default(),
            rolling: RollingConfig::default(),
            codecs: CodecsConfig::default(),
            fsync: FsyncConfig::default(),
            durability: DurabilityConfig::default(),
            queues: QueuesConfig::default(),
            recovery: RecoveryConfig::default(),
            log: LogConfig::default(),
            control: ControlConfig::default(),
            access: AccessConfig::default(),
            disk: DiskConfig::default(),
            publish: PublishConfig::default(),
            flight: FlightConfig::default(),
            deprecations: Vec::new(),
        }
    }
}

impl Config {
    /// The effective fsync policy (`fsync.policy` with `fsync.interval_ms`).
    #[must_use]
    pub fn fsync_policy(&self) -> FsyncPolicy {
        self.fsync.to_policy()
    }

    /// The quarantine directory: `data_dir/recovery.quarantine_dir_name`.
    #[must_use]
    pub fn quarantine_dir(&self) -> PathBuf {
        self.data_dir.join(&self.recovery.quarantine_dir_name)
    }
}

/// `[socket]`: the Unix socket clients connect to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SocketConfig {
    /// Socket path. Default `wshardd.sock`. Relative: like `data_dir`.
    pub path: PathBuf,
    /// Permission bits of the socket file, written as an octal string. Default `"0660"`.
    #[serde(with = "crate::octal")]
    pub mode: u32,
}

impl Default for SocketConfig {
    fn default() -> Self {
        Self {
            path: PathBuf::from("wshardd.sock"),
            mode: 0o660,
        }
    }
}

/// `[limits]`: hard limits; exceeding one refuses the frame, episode or connection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// Largest frame `body_len` accepted (the wire field is a u32). 64..=1 GiB, default 64 MiB.
    pub max_frame_bytes: u32,
    /// Most channels per episode. 1..=4096, default 256.
    pub max_channels: u32,
    /// Bytes of timestep records one episode may receive: per timestep 21 (seq, t_ns,
    /// reward, done) plus its payload, uncompressed, as sent over the socket or the ring
    /// (frame headers not counted). Further timesteps are refused with `LIMIT`. At least
    /// 1 MiB, default 1 TiB. Formerly `max_episode_bytes`, still read (deprecated).
    #[serde(alias = "max_episode_bytes")]
    pub max_episode_wire_bytes: u64,
    /// Most simultaneous client connections. 1..=10000, default 64.
    pub max_connections: u32,
    /// Longest episode id in bytes. 1..=200, default 128.
    pub max_episode_id_bytes: u32,
    /// Most simultaneous connections of one peer uid (`SO_PEERCRED`), root and the
    /// daemon's own uid included, so one local user cannot take every slot. 1..=10000,
    /// default 32; a value at or above `max_connections` lets one uid take them all.
    pub max_connections_per_uid: u32,
    /// A new connection must complete its HELLO within this many milliseconds, else it gets
    /// `ERROR{TIMEOUT}` and is closed. 10..=600000, default 5000.
    pub handshake_timeout_ms: u64,
    /// A connection with no open episode (after HELLO_OK, after its episode ended, however
    /// many other frames it sends) is closed with `ERROR{TIMEOUT}` after this many
    /// milliseconds. A connection with an open episode is never cut, however quiet.
    /// 10..=86400000, default 60000.
    pub no_episode_timeout_ms: u64,
    /// Most bytes of one `EVENT`'s data (protocol version 2); a larger event is refused
    /// with `LIMIT` naming its size and this key. 1..=16 MiB, default 65536.
    pub max_event_bytes: u32,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            max_frame_bytes: 64 << 20,
            max_channels: 256,
            max_episode_wire_bytes: TIB,
            max_connections: 64,
            max_episode_id_bytes: 128,
            max_connections_per_uid: 32,
            handshake_timeout_ms: 5_000,
            no_episode_timeout_ms: 60_000,
            max_event_bytes: 64 << 10,
        }
    }
}

impl LimitsConfig {
    /// `handshake_timeout_ms` as a [`Duration`].
    #[must_use]
    pub fn handshake_timeout(&self) -> Duration {
        Duration::from_millis(self.handshake_timeout_ms)
    }

    /// `no_episode_timeout_ms` as a [`Duration`].
    #[must_use]
    pub fn no_episode_timeout(&self) -> Duration {
        Duration::from_millis(self.no_episode_timeout_ms)
    }
}

/// `[rotation]`: when the open chunk is finalized and a new one started (whichever comes
/// first).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RotationConfig {
    /// Timesteps per chunk. At least 1, default 100000.
    pub max_timesteps: u64,
    /// Chunk budget in memory per episode (uncompressed payload bytes): the open chunk and
    /// the sealed chunk being written share it, so one chunk holds at most half (a third when
    /// a channel is compressed: the compressed copy shares it too). 1 MiB..=1 GiB
    /// (the format cannot compress a block above 1 GiB), default 256 MiB.
    pub max_bytes: u64,
    /// Age of a chunk in seconds. 1..=86400, default 60.
    pub max_seconds: u64,
}

impl Default for RotationConfig {
    fn default() -> Self {
        Self {
            max_timesteps: 100_000,
            max_bytes: 256 * MIB,
            max_seconds: 60,
        }
    }
}

impl RotationConfig {
    /// `max_seconds` as a [`Duration`].
    #[must_use]
    pub fn max_age(&self) -> Duration {
        Duration::from_secs(self.max_seconds)
    }
}

/// `[fsync]`: how often the journal is made durable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FsyncConfig {
    /// `always`, `interval` or `never`. Default `interval`.
    pub policy: FsyncPolicyKind,
    /// Period of the `interval` policy in milliseconds. 1..=1000, default 10. Checked even
    /// when another policy is chosen.
    pub interval_ms: u64,
}

impl Default for FsyncConfig {
    fn default() -> Self {
        Self {
            policy: FsyncPolicyKind::Interval,
            interval_ms: 10,
        }
    }
}

impl FsyncConfig {
    /// The effective policy: `Interval` carries `interval_ms`.
    #[must_use]
    pub fn to_policy(&self) -> FsyncPolicy {
        match self.policy {
            FsyncPolicyKind::Always => FsyncPolicy::Always,
            FsyncPolicyKind::Interval => {
                FsyncPolicy::Interval(Duration::from_millis(self.interval_ms))
            }
            FsyncPolicyKind::Never => FsyncPolicy::Never,
        }
    }
}

/// `[durability]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DurabilityConfig {
    /// Class used when the client's OPEN does not choose one: `ack` or `chunk`. Default `ack`.
    #[serde(with = "durability_text")]
    pub default: Durability,
}

/// `[queues]`: buffering between the socket readers and the writers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueuesConfig {
    /// Frames buffered between a connection's reader and its session's writer thread.
    /// 1..=65536, default 64.
    pub max_pending_frames: u32,
    /// Bytes buffered between a connection's reader and its session's writer thread. At
    /// least `limits.max_frame_bytes` (one frame must fit), default 64 MiB.
    pub max_pending_bytes: u64,
    /// Threads compressing finalized chunks. 1..=64, default 2.
    pub compression_workers: u32,
}

impl Default for QueuesConfig {
    fn default() -> Self {
        Self {
            max_pending_frames: 64,
            max_pending_bytes: 64 * MIB,
            compression_workers: 2,
        }
    }
}

/// `[recovery]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RecoveryConfig {
    /// Directory under `data_dir` that unrecoverable files are moved to. A single path
    /// component. Default `quarantine`.
    pub quarantine_dir_name: String,
}

impl Default for RecoveryConfig {
    fn default() -> Self {
        Self {
            quarantine_dir_name: "quarantine".to_owned(),
        }
    }
}

/// `[log]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// `error`, `warn`, `info`, `debug` or `trace`. Default `info`.
    pub level: LogLevel,
}
