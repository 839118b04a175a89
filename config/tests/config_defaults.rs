#![allow(clippy::unwrap_used)]
//! The built-in defaults, and the default file and README that must not drift from them.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use toml::{Table, Value};
use wshardd_config::{
    schema_keys, Codec, Config, Durability, FsyncPolicy, FsyncPolicyKind, LogLevel,
    DEFAULT_CONFIG_TOML,
};

const README: &str = include_str!("../README.md");

/// Every key path of a table: tables and leaves, `a.b.c`.
fn key_paths(table: &Table, prefix: &str, out: &mut BTreeSet<String>) {
    for (key, value) in table {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        if let Value::Table(sub) = value {
            key_paths(sub, &path, out);
        }
        out.insert(path);
    }
}

fn default_key_paths() -> BTreeSet<String> {
    let table: Table = toml::from_str(&toml::to_string(&Config::default()).unwrap()).unwrap();
    let mut keys = BTreeSet::new();
    key_paths(&table, "", &mut keys);
    keys
}

#[test]
fn config_defaults_match_the_brief() {
    let c = Config::default();
    assert_eq!(c.data_dir, PathBuf::from("wshard-data"));
    assert_eq!(c.socket.path, PathBuf::from("wshardd.sock"));
    assert_eq!(c.socket.mode, 0o660);
    assert_eq!(c.limits.max_frame_bytes, 67_108_864);
    assert_eq!(c.limits.max_channels, 256);
    assert_eq!(c.limits.max_episode_wire_bytes, 1 << 40);
    assert_eq!(c.limits.max_connections, 64);
    assert_eq!(c.limits.max_episode_id_bytes, 128);
    assert_eq!(c.limits.max_connections_per_uid, 32);
    assert_eq!(c.limits.handshake_timeout_ms, 5_000);
    assert_eq!(c.limits.handshake_timeout(), Duration::from_secs(5));
    assert_eq!(c.limits.no_episode_timeout_ms, 60_000);
    assert_eq!(c.limits.max_event_bytes, 65_536);
    assert_eq!(c.limits.no_episode_timeout(), Duration::from_secs(60));
    assert!(c.limits.max_connections_per_uid < c.limits.max_connections);
    assert_eq!(c.rotation.max_timesteps, 100_000);
    assert_eq!(c.rotation.max_bytes, 256 << 20);
    assert_eq!(c.rotation.max_seconds, 60);
    assert_eq!(c.rotation.max_age(), Duration::from_secs(60));
    assert_eq!(c.codecs.default, Codec::Zstd { level: 3 });
    assert!(c.codecs.channels.is_empty());
    assert_eq!(c.fsync.policy, FsyncPolicyKind::Interval);
    assert_eq!(c.fsync.interval_ms, 10);
    assert_eq!(
        c.fsync_policy(),
        FsyncPolicy::Interval(Duration::from_millis(10))
    );
    assert_eq!(c.durability.default, Durability::Ack);
    assert_eq!(c.queues.max_pending_frames, 64);
    assert_eq!(c.queues.max_pending_bytes, 64 << 20);
    assert_eq!(c.queues.compression_workers, 2);
    assert_eq!(c.recovery.quarantine_dir_name, "quarantine");
    assert_eq!(c.quarantine_dir(), PathBuf::from("wshard-data/quarantine"));
    assert_eq!(c.log.level, LogLevel::Info);
    c.validate("built-in defaults").unwrap();
}

#[test]
fn config_empty_text_is_the_defaults() {
    assert_eq!(
        Config::from_toml_str("", "empty").unwrap(),
        Config::default()
    );
    assert_eq!(
        Config::from_toml_str("[socket]\n[limits]\n", "empty tables").unwrap(),
        Config::default()
    );
}

#[test]
fn config_partial_table_keeps_other_defaults() {
    let c = Config::from_toml_str("[limits]\nmax_channels = 17\n", "t").unwrap();
    assert_eq!(c.limits.max_channels, 17);
    assert_eq!(c.limits.max_connections, 64);
    assert_eq!(c.rotation, Config::default().rotation);
}

#[test]
fn config_fsync_policy_and_enums_parse() {
    let c = Config::from_toml_str(
        "[fsync]\npolicy = \"always\"\n[durability]\ndefault = \"chunk\"\n[log]\nlevel = \"trace\"\n",
        "t",
    )
    .unwrap();
    assert_eq!(c.fsync_policy(), FsyncPolicy::Always);
    assert_eq!(c.durability.default, Durability::Chunk);
    assert_eq!(c.log.level.as_str(), "trace");
    let c = Config::from_toml_str("[fsync]\npolicy = \"never\"\ninterval_ms = 999\n", "t").unwrap();
    assert_eq!(c.fsync_policy(), FsyncPolicy::Never);
    let c = Config::from_toml_str("[fsync]\ninterval_ms = 250\n", "t").unwrap();
    assert_eq!(
        c.fsync_policy(),
        FsyncPolicy::Interval(Duration::from_millis(250))
    );
}

#[test]
fn config_socket_mode_forms() {
    for (text, mode) in [
        ("0660", 0o660),
        ("600", 0o600),
        ("0o640", 0o640),
        ("0777", 0o777),
    ] {
        let c = Config::from_toml_str(&format!("[socket]\nmode = {text:?}\n"), "t").unwrap();
        assert_eq!(c.socket.mode, mode, "{text}");
    }
    assert_eq!(wshardd_config::format_mode(0o600), "0600");
}

#[test]
fn config_default_file_equals_defaults() {
    let parsed = Config::from_toml_str(DEFAULT_CONFIG_TOML, "config/wshardd.toml").unwrap();
    assert_eq!(parsed, Config::default());
}

#[test]
fn config_default_file_has_every_key() {
    let file: Table = toml::from_str(DEFAULT_CONFIG_TOML).unwrap();
    let mut in_file = BTreeSet::new();
    key_paths(&file, "", &mut in_file);
    assert_eq!(in_file, default_key_paths());
}

#[test]
fn config_default_file_comments_every_key() {
    let mut previous = "";
    for line in DEFAULT_CONFIG_TOML.lines() {
        let line = line.trim();
        let is_key = !line.is_empty() && !line.starts_with('#') && !line.starts_with('[');
        if is_key {
            assert!(
                previous.starts_with('#') && previous.contains("Default"),
                "no comment with the default directly above `{line}`"
            );
        }
        if line == "[codecs.channels]" {
            assert!(previous.starts_with('#'), "no comment above `{line}`");
        }
        previous = line;
    }
}

#[test]
fn config_reload_table_covers_every_leaf_key() {
    let classified: BTreeSet<String> = schema_keys().map(|(k, _)| k.to_owned()).collect();
    let tables = [
        "socket",
        "limits",
        "rotation",
        "rolling",
        "codecs",
        "fsync",
        "durability",
        "queues",
        "recovery",
        "log",
        "control",
        "access",
        "disk",
        "publish",
        "flight",
    ];
    let leaves: BTreeSet<String> = default_key_paths()
        .into_iter()
        .filter(|k| !tables.contains(&k.as_str()))
        .collect();
    assert_eq!(classified, leaves);
}

#[test]
fn config_readme_documents_every_key() {
    for key in default_key_paths() {
        let leaf = key.rsplit('.').next().unwrap();
        assert!(
            README.contains(&format!("`{key}`")) || README.contains(&format!("[{key}]")),
            "README.md does not document `{key}` ({leaf})"
        );
    }
}
