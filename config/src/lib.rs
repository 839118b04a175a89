//! wshardd configuration: the schema of `wshardd.toml`, its defaults, loading and validation.
//!
//! Every key is optional and has a default ([`Config::default`]); unknown keys are errors.
//! The commented default file is `config/wshardd.toml` ([`DEFAULT_CONFIG_TOML`]).
//!
//! # Where the configuration comes from
//! [`Config::load`]: `--config PATH` > `$WSHARDD_CONFIG` > `/etc/wshardd/wshardd.toml` if it
//! exists > `./wshardd.toml` if it exists > built-in defaults. [`ConfigSource`] says which.
//! A missing `--config` or `$WSHARDD_CONFIG` file is an error.
//!
//! # Relative paths
//! A relative `data_dir`, `socket.path` or `control.path` is resolved against the directory of the file it was
//! read from, or against the working directory of the daemon for the built-in defaults.
//! [`Config::load`] and [`Config::from_file`] return absolute paths;
//! [`Config::from_toml_str`] returns them as written.
//!
//! # Deprecated keys
//! A renamed key ([`DEPRECATED_KEYS`]) is still read under its old name;
//! [`Config::deprecations`] lists the ones a file used, for the daemon to warn about
//! (`wshardd --check-config` prints them). Setting both names is an error.
//!
//! # SIGHUP
//! [`Config::reloadable_diff`] splits the changed keys into those a reload applies
//! (`log.level`, `fsync.*`, `rotation.*`, `rolling.*`, `codecs.*`, `limits.max_connections`,
//! `limits.max_connections_per_uid`, `limits.handshake_timeout_ms`,
//! `limits.no_episode_timeout_ms`, ...) and those that need a restart; see [`schema_keys`].

mod codecs;
mod deprecated;
mod error;
mod flight;
mod kinds;
mod load;
mod octal;
mod parse;
mod publish;
mod reload;
mod rolling;
mod schema;
mod service;
mod units;
mod validate;

pub use codecs::{codec_to_string, parse_codec, CodecTextError, CodecsConfig};
pub use deprecated::{Deprecation, DEPRECATED_KEYS};
pub use error::ConfigError;
pub use flight::{
    FlightConfig, DEFAULT_PERSIST_RETRIES, DEFAULT_PERSIST_RETRY_BACKOFF_MS, DEFAULT_POST_GRACE_MS,
    DEFAULT_RING_BYTES, DEFAULT_RING_SECONDS,
};
pub use kinds::{Durability, FsyncPolicy, FsyncPolicyKind, LogLevel};
pub use load::{
    default_candidates, ConfigSource, DEFAULTS_ORIGIN, ENV_VAR, LOCAL_CONFIG_PATH,
    SYSTEM_CONFIG_PATH,
};
pub use octal::{format_mode, parse_mode, ModeTextError, MAX_MODE};
pub use publish::{
    PublishConfig, MAX_MULTIPART_RESTART_AFTER, MAX_PUBLISH_PART_BYTES, MAX_ROBOT_BYTES,
    MIN_PUBLISH_PART_BYTES,
};
pub use reload::{schema_keys, ReloadClass};
pub use rolling::{QuotaPolicy, RollingConfig};
pub use schema::{
    Config, DurabilityConfig, FsyncConfig, LimitsConfig, LogConfig, QueuesConfig, RecoveryConfig,
    RotationConfig, SocketConfig,
};
pub use service::{AccessConfig, ControlConfig, DiskConfig};
pub use units::{GIB, MIB, TIB};
pub use validate::{MAX_EPISODE_ID_BYTES, MAX_EVENT_BYTES, MAX_SOCKET_PATH_BYTES};
pub use wshard::codec::Codec;

/// The commented default configuration file, every key at its default.
pub const DEFAULT_CONFIG_TOML: &str = include_str!("../wshardd.toml");
