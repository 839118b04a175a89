//! Semantic checks after parsing: ranges and cross-key rules. Every error names the dotted
//! key path and the offending value.

use std::fmt::Display;
use std::ops::RangeInclusive;
use std::path::{Component, Path};

use crate::codecs::pattern_problem;
use crate::error::ConfigError;
use crate::octal::{format_mode, MAX_MODE};
use crate::parse::key_path;
use crate::schema::Config;
use crate::units::{GIB, MIB};

/// The largest `limits.max_episode_id_bytes`: an id is a directory name and the stem of
/// file names such as `{id}_chunk_0000.wshard.partial`, which must stay under 255 bytes.
/// The protocol crate's `MAX_EPISODE_ID_BYTES` is the same value (a daemon test checks).
pub const MAX_EPISODE_ID_BYTES: u32 = 200;
/// The largest `limits.max_event_bytes`: an event is one frame, and stays small.
pub const MAX_EVENT_BYTES: u32 = 16 << 20;

/// Longest Unix socket path in bytes (`sun_path` is 108 bytes including the NUL).
pub const MAX_SOCKET_PATH_BYTES: usize = 107;

fn range<T>(
    origin: &str,
    key: &str,
    value: T,
    allowed: RangeInclusive<T>,
) -> Result<(), ConfigError>
where
    T: PartialOrd + Display + Copy,
{
    if allowed.contains(&value) {
        Ok(())
    } else {
        Err(ConfigError::invalid(
            origin,
            key,
            value.to_string(),
            format!("must be {}..={}", allowed.start(), allowed.end()),
        ))
    }
}

fn at_least(origin: &str, key: &str, value: u64, min: u64) -> Result<(), ConfigError> {
    if value >= min {
        Ok(())
    } else {
        Err(ConfigError::invalid(
            origin,
            key,
            value.to_string(),
            format!("must be at least {min}"),
        ))
    }
}

fn quoted(path: &Path) -> String {
    format!("{:?}", path.display().to_string())
}

fn non_empty_path(origin: &str, key: &str, path: &Path) -> Result<(), ConfigError> {
    if path.as_os_str().is_empty() {
        Err(ConfigError::invalid(
            origin,
            key,
            "\"\"",
            "must not be empty",
        ))
    } else {
        Ok(())
    }
}

impl Config {
    /// Check every key's range and the cross-key rules. `origin` names the configuration in
    /// the error (a file name, `built-in defaults`, ...).
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] for the first offending key.
    pub fn validate(&self, origin: &str) -> Result<(), ConfigError> {
        let o = origin;
        non_empty_path(o, "data_dir", &self.data_dir)?;

        non_empty_path(o, "socket.path", &self.socket.path)?;
        if self.socket.mode > MAX_MODE {
            return Err(ConfigError::invalid(
                o,
                "socket.mode",
                format!("{:?}", format_mode(self.socket.mode)),
                "must be at most \"0777\" (permission bits only)",
            ));
        }

        let l = &self.limits;
        // The wire field is a u32; the upper bound keeps one frame one block.
        range(
            o,
            "limits.max_frame_bytes",
            u64::from(l.max_frame_bytes),
            64..=GIB,
        )?;
        range(o, "limits.max_channels", l.max_channels, 1..=4096)?;
        at_least(
            o,
            "limits.max_episode_wire_bytes",
            l.max_episode_wire_bytes,
            MIB,
        )?;
        range(o, "limits.max_connections", l.max_connections, 1..=10_000)?;
        range(
            o,
            "limits.max_episode_id_bytes",
            l.max_episode_id_bytes,
            1..=MAX_EPISODE_ID_BYTES,
        )?;
        range(
            o,
            "limits.max_connections_per_uid",
            l.max_connections_per_uid,
            1..=10_000,
        )?;
        range(
            o,
            "limits.handshake_timeout_ms",
            l.handshake_timeout_ms,
            10..=600_000,
        )?;
        range(
            o,
            "limits.max_event_bytes",
            l.max_event_bytes,
            1..=MAX_EVENT_BYTES,
        )?;
        range(
            o,
            "limits.no_episode_timeout_ms",
            l.no_episode_timeout_ms,
            10..=86_400_000,
        )?;

        let r = &self.rotation;
        at_least(o, "rotation.max_timesteps", r.max_timesteps, 1)?;
        // The format cannot compress blocks above 1 GiB.
        range(o, "rotation.max_bytes", r.max_bytes, MIB..=GIB)?;
        range(o, "rotation.max_seconds", r.max_seconds, 1..=86_400)?;

        for pattern in self.codecs.channels.keys() {
            if let Some(reason) = pattern_problem(pattern) {
                let key = key_path(&["codecs", "channels", pattern]);
                let value = self
                    .codecs
                    .channels
                    .get(pattern)
                    .map(|c| format!("{:?}", crate::codecs::codec_to_string(*c)))
                    .unwrap_or_default();
                return Err(ConfigError::invalid(o, key, value, reason));
            }
        }

        range(o, "fsync.interval_ms", self.fsync.interval_ms, 1..=1000)?;

        let q = &self.queues;
        range(
            o,
            "queues.max_pending_frames",
            q.max_pending_frames,
            1..=65_536,
        )?;
        if q.max_pending_bytes < u64::from(l.max_frame_bytes) {
            return Err(ConfigError::invalid(
                o,
                "queues.max_pending_bytes",
                q.max_pending_bytes.to_string(),
                format!(
                    "must be at least limits.max_frame_bytes ({}) so one frame fits",
                    l.max_frame_bytes
                ),
            ));
        }
        range(
            o,
            "queues.compression_workers",
            q.compression_workers,
            1..=64,
        )?;

        self.validate_service(o)?;
        self.publish.validate(o)?;
        self.flight.validate(o)?;

        let name = &self.recovery.quarantine_dir_name;
        let mut components = Path::new(name).components();
        let single = matches!(
            (components.next(), components.next()),
            (Some(Component::Normal(_)), None)
        );
        if !single || name.contains(['/', '\0']) {
            return Err(ConfigError::invalid(
                o,
                "recovery.quarantine_dir_name",
                format!("{name:?}"),
                "must be a single directory name (not empty, no `/`, not `.` or `..`)",
            ));
        }
        Ok(())
    }

    fn validate_service(&self, o: &str) -> Result<(), ConfigError> {
        non_empty_path(o, "control.path", &self.control.path)?;
        if self.control.path == self.socket.path {
            return Err(ConfigError::invalid(
                o,
                "control.path",
                quoted(&self.control.path),
                "must differ from socket.path",
            ));
        }
        if self.control.mode > MAX_MODE {
            return Err(ConfigError::invalid(
                o,
                "control.mode",
                format!("{:?}", format_mode(self.control.mode)),
                "must be at most \"0777\" (permission bits only)",
            ));
        }
        let listen = &self.control.metrics_listen;
        if !listen.is_empty() {
            match listen.parse::<std::net::SocketAddr>() {
                Ok(addr) if addr.ip().is_loopback() => {}
                Ok(_) => {
                    return Err(ConfigError::invalid(
                        o,
                        "control.metrics_listen",
                        format!("{listen:?}"),
                        "must be a loopback address (127.0.0.1:PORT or [::1]:PORT)",
                    ))
                }
                Err(_) => {
                    return Err(ConfigError::invalid(
                        o,
                        "control.metrics_listen",
                        format!("{listen:?}"),
                        "must be \"\" or HOST:PORT with a numeric loopback address",
                    ))
                }
            }
        }
        let group = &self.access.socket_group;
        if group.contains(['\0', ':', '/']) || group.len() > 64 {
            return Err(ConfigError::invalid(
                o,
                "access.socket_group",
                format!("{group:?}"),
                "must be a group name (at most 64 bytes, no `:`, `/` or NUL) or a numeric gid",
            ));
        }
        let d = &self.disk;
        range(
            o,
            "disk.check_interval_ms",
            d.check_interval_ms,
            10..=10_000,
        )?;
        if d.high_watermark_free_bytes >= d.low_watermark_free_bytes {
            return Err(ConfigError::invalid(
                o,
                "disk.high_watermark_free_bytes",
                d.high_watermark_free_bytes.to_string(),
                format!(
                    "must be less than disk.low_watermark_free_bytes ({})",
                    d.low_watermark_free_bytes
                ),
            ));
        }
        Ok(())
    }

    /// The checks that need the resolved paths (see [`Config::resolve_relative_paths`]).
    pub(crate) fn validate_resolved(&self, origin: &str) -> Result<(), ConfigError> {
        for (key, path) in [
            ("socket.path", &self.socket.path),
            ("control.path", &self.control.path),
        ] {
            let len = path.as_os_str().len();
            if len <= MAX_SOCKET_PATH_BYTES {
                continue;
            }
            return Err(ConfigError::invalid(
                origin,
                key,
                quoted(path),
                format!(
                    "resolved path is {len} bytes; a Unix socket path can have at most \
                     {MAX_SOCKET_PATH_BYTES}"
                ),
            ));
        }
        Ok(())
    }
}
