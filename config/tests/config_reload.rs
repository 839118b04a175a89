#![allow(clippy::unwrap_used)]
//! `Config::reloadable_diff`: what SIGHUP applies and what needs a restart.

use std::path::PathBuf;

use wshardd_config::{schema_keys, Codec, Config, FsyncPolicyKind, LogLevel, ReloadClass};

#[test]
fn config_reload_no_change() {
    let c = Config::default();
    let (applied, restart) = c.reloadable_diff(&c.clone());
    assert!(applied.is_empty() && restart.is_empty());
}

#[test]
fn config_reload_applied_keys() {
    let old = Config::default();
    let mut new = old.clone();
    new.log.level = LogLevel::Debug;
    new.fsync.policy = FsyncPolicyKind::Always;
    new.fsync.interval_ms = 5;
    new.rotation.max_timesteps = 10;
    new.rotation.max_bytes = 1 << 20;
    new.rotation.max_seconds = 5;
    new.codecs.default = Codec::Lz4;
    new.codecs.channels.insert("cam*".into(), Codec::None);
    new.limits.max_connections = 3;
    new.limits.max_connections_per_uid = 2;
    new.limits.handshake_timeout_ms = 100;
    new.limits.no_episode_timeout_ms = 100;
    let (applied, restart) = old.reloadable_diff(&new);
    assert_eq!(
        applied,
        [
            "limits.max_connections",
            "limits.max_connections_per_uid",
            "limits.handshake_timeout_ms",
            "limits.no_episode_timeout_ms",
            "rotation.max_timesteps",
            "rotation.max_bytes",
            "rotation.max_seconds",
            "codecs.default",
            "codecs.channels",
            "fsync.policy",
            "fsync.interval_ms",
            "log.level",
        ]
    );
    assert!(restart.is_empty(), "{restart:?}");
}

#[test]
fn config_reload_restart_keys() {
    let old = Config::default();
    let mut new = old.clone();
    new.data_dir = PathBuf::from("/elsewhere");
    new.socket.path = PathBuf::from("/run/other.sock");
    new.socket.mode = 0o600;
    new.queues.max_pending_frames = 8;
    new.queues.max_pending_bytes = 1 << 30;
    new.queues.compression_workers = 4;
    new.limits.max_frame_bytes = 1 << 20;
    new.log.level = LogLevel::Warn;
    let (applied, restart) = old.reloadable_diff(&new);
    assert_eq!(applied, ["log.level"]);
    assert_eq!(
        restart,
        [
            "data_dir",
            "socket.path",
            "socket.mode",
            "limits.max_frame_bytes",
            "queues.max_pending_frames",
            "queues.max_pending_bytes",
            "queues.compression_workers",
        ]
    );
}

#[test]
fn config_reload_classes_match_the_documented_rule() {
    for (key, class) in schema_keys() {
        let applied = key.starts_with("fsync.")
            || key.starts_with("rotation.")
            || (key.starts_with("rolling.") && key != "rolling.quota_policy")
            || key.starts_with("codecs.")
            || key == "log.level"
            || key == "limits.max_connections"
            || key == "limits.max_connections_per_uid"
            || key == "limits.handshake_timeout_ms"
            || key == "limits.no_episode_timeout_ms"
            || key.starts_with("disk.")
            || key.starts_with("access.allow_")
            || key.starts_with("control.admin_");
        let expected = if applied {
            ReloadClass::Applied
        } else {
            ReloadClass::Restart
        };
        assert_eq!(class, expected, "{key}");
    }
}
