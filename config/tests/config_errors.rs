#![allow(clippy::unwrap_used)]
//! Unknown keys and bad values: every error names the key.

use wshardd_config::{Config, ConfigError};

const ORIGIN: &str = "/etc/wshardd/wshardd.toml";

fn err(text: &str) -> ConfigError {
    Config::from_toml_str(text, ORIGIN).unwrap_err()
}

/// Assert `text` is rejected as Invalid for `key`, and the message names key and value.
fn assert_invalid(text: &str, key: &str, value: &str) -> String {
    let e = err(text);
    let message = e.to_string();
    match &e {
        ConfigError::Invalid {
            key: k, value: v, ..
        } => {
            assert_eq!(k, key, "{message}");
            assert_eq!(v, value, "{message}");
        }
        other => panic!("expected Invalid for {key}, got {other:?}"),
    }
    assert!(
        message.starts_with(&format!("config {ORIGIN}: {key} = {value}: ")),
        "{message}"
    );
    message
}

#[test]
fn config_unknown_top_level_key_names_key_and_line() {
    let text = "data_dir = \"d\"\n\n[rotaton]\nmax_bytes = 1\n";
    let e = err(text);
    assert!(matches!(e, ConfigError::Parse { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "config /etc/wshardd/wshardd.toml: unknown key `rotaton` at top level (line 3); \
         did you mean `rotation`?"
    );
}

#[test]
fn config_unknown_key_in_table_names_table_and_line() {
    let text = "[log]\nlevel = \"info\"\n\n[rotation]\nmax_timesteps = 5\nmax_secs = 3\n";
    let message = err(text).to_string();
    assert!(
        message.contains("unknown key `max_secs` in table [rotation] (line 6)"),
        "{message}"
    );
    assert!(message.contains("did you mean `max_seconds`?"), "{message}");
}

#[test]
fn config_unknown_key_without_close_match_lists_known_keys() {
    let message = err("[fsync]\nwhatever = 1\n").to_string();
    assert!(
        message.contains(
            "unknown key `whatever` in table [fsync] (line 2); known keys: interval_ms, policy"
        ),
        "{message}"
    );
}

#[test]
fn config_unknown_key_in_dotted_and_inline_forms() {
    let message = err("limits.max_conections = 3\n").to_string();
    assert!(
        message.contains("unknown key `max_conections` in table [limits] (line 1)"),
        "{message}"
    );
    let message = err("codecs = { default = \"lz4\", chanels = {} }\n").to_string();
    assert!(
        message.contains("unknown key `chanels` in table [codecs]"),
        "{message}"
    );
}

#[test]
fn config_syntax_error_names_line() {
    let e = err("[log]\nlevel = \n");
    assert!(matches!(e, ConfigError::Parse { .. }), "{e:?}");
    assert!(e.to_string().contains("(line 2)"), "{e}");
    assert!(!e.to_string().contains('\n'), "{e}");
}

#[test]
fn config_wrong_type_names_key() {
    let message = assert_invalid(
        "[limits]\nmax_channels = \"lots\"\n",
        "limits.max_channels",
        "\"lots\"",
    );
    assert!(message.contains("invalid type"), "{message}");
    assert_invalid("data_dir = 5\n", "data_dir", "5");
    assert_invalid("socket = 5\n", "socket", "5");
    assert_invalid(
        "[rotation]\nmax_seconds = -1\n",
        "rotation.max_seconds",
        "-1",
    );
}

#[test]
fn config_bad_fsync_interval() {
    let message = assert_invalid("[fsync]\ninterval_ms = 0\n", "fsync.interval_ms", "0");
    assert!(
        message.ends_with("fsync.interval_ms = 0: must be 1..=1000"),
        "{message}"
    );
    assert_invalid("[fsync]\ninterval_ms = 1001\n", "fsync.interval_ms", "1001");
    // Checked whatever the policy.
    assert_invalid(
        "[fsync]\npolicy = \"never\"\ninterval_ms = 0\n",
        "fsync.interval_ms",
        "0",
    );
}

#[test]
fn config_bad_fsync_policy() {
    let message = assert_invalid(
        "[fsync]\npolicy = \"sometimes\"\n",
        "fsync.policy",
        "\"sometimes\"",
    );
    assert!(message.contains("always"), "{message}");
}

#[test]
fn config_bad_socket_mode() {
    assert_invalid("[socket]\nmode = \"0999\"\n", "socket.mode", "\"0999\"");
    assert_invalid("[socket]\nmode = \"1777\"\n", "socket.mode", "\"1777\"");
    assert_invalid("[socket]\nmode = \"\"\n", "socket.mode", "\"\"");
    assert_invalid("[socket]\nmode = 432\n", "socket.mode", "432");
}

#[test]
fn config_bad_paths() {
    assert_invalid("data_dir = \"\"\n", "data_dir", "\"\"");
    assert_invalid("[socket]\npath = \"\"\n", "socket.path", "\"\"");
}

#[test]
fn config_bad_limits() {
    assert_invalid(
        "[limits]\nmax_frame_bytes = 63\n",
        "limits.max_frame_bytes",
        "63",
    );
    assert_invalid(
        "[limits]\nmax_frame_bytes = 1073741825\n",
        "limits.max_frame_bytes",
        "1073741825",
    );
    assert_invalid("[limits]\nmax_channels = 0\n", "limits.max_channels", "0");
    assert_invalid(
        "[limits]\nmax_channels = 4097\n",
        "limits.max_channels",
        "4097",
    );
    let message = assert_invalid(
        "[limits]\nmax_episode_wire_bytes = 1048575\n",
        "limits.max_episode_wire_bytes",
        "1048575",
    );
    assert!(message.ends_with("must be at least 1048576"), "{message}");
    // Set under its deprecated name, the error names that name.
    let message = assert_invalid(
        "[limits]\nmax_episode_bytes = 1048575\n",
        "limits.max_episode_bytes (deprecated name of limits.max_episode_wire_bytes)",
        "1048575",
    );
    assert!(message.ends_with("must be at least 1048576"), "{message}");
    assert_invalid(
        "[limits]\nmax_connections = 0\n",
        "limits.max_connections",
        "0",
    );
    assert_invalid(
        "[limits]\nmax_connections = 10001\n",
        "limits.max_connections",
        "10001",
    );
    assert_invalid(
        "[limits]\nmax_episode_id_bytes = 0\n",
        "limits.max_episode_id_bytes",
        "0",
    );
    assert_invalid(
        "[limits]\nmax_episode_id_bytes = 201\n",
        "limits.max_episode_id_bytes",
        "201",
    );
}

#[test]
fn config_bad_connection_limit_per_uid_and_deadlines() {
    for (key, low, high, max) in [
        ("max_connections_per_uid", "0", "10001", 10_000u64),
        ("handshake_timeout_ms", "9", "600001", 600_000),
        ("no_episode_timeout_ms", "9", "86400001", 86_400_000),
        ("max_event_bytes", "0", "16777217", 16_777_216),
    ] {
        let path = format!("limits.{key}");
        let message = assert_invalid(&format!("[limits]\n{key} = {low}\n"), &path, low);
        assert!(message.ends_with(&format!("..={max}")), "{message}");
        assert_invalid(&format!("[limits]\n{key} = {high}\n"), &path, high);
        assert_invalid(&format!("[limits]\n{key} = -5\n"), &path, "-5");
        let message = assert_invalid(&format!("[limits]\n{key} = \"1s\"\n"), &path, "\"1s\"");
        assert!(message.contains("invalid type"), "{message}");
        // Both ends of the range are accepted.
        for ok in [if key.ends_with("_ms") { 10 } else { 1 }, max] {
            let c = Config::from_toml_str(&format!("[limits]\n{key} = {ok}\n"), ORIGIN);
            assert!(c.is_ok(), "{key} = {ok}: {c:?}");
        }
    }
}

#[test]
fn config_bad_rotation() {
    assert_invalid(
        "[rotation]\nmax_timesteps = 0\n",
        "rotation.max_timesteps",
        "0",
    );
    assert_invalid(
        "[rotation]\nmax_bytes = 1048575\n",
        "rotation.max_bytes",
        "1048575",
    );
    let message = assert_invalid(
        "[rotation]\nmax_bytes = 1073741825\n",
        "rotation.max_bytes",
        "1073741825",
    );
    assert!(
        message.ends_with("must be 1048576..=1073741824"),
        "{message}"
    );
    assert_invalid("[rotation]\nmax_seconds = 0\n", "rotation.max_seconds", "0");
    assert_invalid(
        "[rotation]\nmax_seconds = 86401\n",
        "rotation.max_seconds",
        "86401",
    );
}

#[test]
fn config_bad_codecs() {
    let message = assert_invalid(
        "[codecs]\ndefault = \"brotli\"\n",
        "codecs.default",
        "\"brotli\"",
    );
    assert!(message.contains("zstd-22"), "{message}");
    assert_invalid(
        "[codecs]\ndefault = \"zstd-23\"\n",
        "codecs.default",
        "\"zstd-23\"",
    );
    assert_invalid(
        "[codecs.channels]\n\"cam*\" = \"lz4\"\nimu = \"gzip\"\n",
        "codecs.channels.imu",
        "\"gzip\"",
    );
    assert_invalid(
        "[codecs.channels]\n\"cam*\" = 3\n",
        "codecs.channels.\"cam*\"",
        "3",
    );
    let message = assert_invalid(
        "[codecs.channels]\n\"c*m\" = \"lz4\"\n",
        "codecs.channels.\"c*m\"",
        "\"lz4\"",
    );
    assert!(message.contains("last character"), "{message}");
    assert_invalid(
        "[codecs.channels]\n\"\" = \"lz4\"\n",
        "codecs.channels.\"\"",
        "\"lz4\"",
    );
}

#[test]
fn config_bad_durability_and_log_level() {
    assert_invalid(
        "[durability]\ndefault = \"fsync\"\n",
        "durability.default",
        "\"fsync\"",
    );
    assert_invalid("[log]\nlevel = \"verbose\"\n", "log.level", "\"verbose\"");
}

#[test]
fn config_bad_queues() {
    assert_invalid(
        "[queues]\nmax_pending_frames = 0\n",
        "queues.max_pending_frames",
        "0",
    );
    assert_invalid(
        "[queues]\nmax_pending_frames = 65537\n",
        "queues.max_pending_frames",
        "65537",
    );
    let message = assert_invalid(
        "[limits]\nmax_frame_bytes = 2000000\n[queues]\nmax_pending_bytes = 1999999\n",
        "queues.max_pending_bytes",
        "1999999",
    );
    assert!(
        message.contains("limits.max_frame_bytes (2000000)"),
        "{message}"
    );
    assert_invalid(
        "[queues]\ncompression_workers = 0\n",
        "queues.compression_workers",
        "0",
    );
    assert_invalid(
        "[queues]\ncompression_workers = 65\n",
        "queues.compression_workers",
        "65",
    );
}

#[test]
fn config_bad_quarantine_dir_name() {
    for bad in ["", ".", "..", "a/b", "/abs"] {
        let text = format!("[recovery]\nquarantine_dir_name = {bad:?}\n");
        assert_invalid(&text, "recovery.quarantine_dir_name", &format!("{bad:?}"));
    }
}

#[test]
fn config_error_key_accessor() {
    assert_eq!(
        err("[fsync]\ninterval_ms = 0\n").key(),
        Some("fsync.interval_ms")
    );
    assert_eq!(err("nope = 1\n").key(), None);
}

#[test]
fn config_bad_control_access_and_disk() {
    assert_invalid(
        "socket = { path = \"a.sock\" }\n[control]\npath = \"a.sock\"\n",
        "control.path",
        "\"a.sock\"",
    );
    assert_invalid("[control]\npath = \"\"\n", "control.path", "\"\"");
    assert_invalid("[control]\nmode = \"1777\"\n", "control.mode", "\"1777\"");
    let message = assert_invalid(
        "[control]\nmetrics_listen = \"0.0.0.0:9464\"\n",
        "control.metrics_listen",
        "\"0.0.0.0:9464\"",
    );
    assert!(message.contains("loopback"), "{message}");
    assert_invalid(
        "[control]\nmetrics_listen = \"localhost\"\n",
        "control.metrics_listen",
        "\"localhost\"",
    );
    assert_invalid(
        "[access]\nsocket_group = \"a:b\"\n",
        "access.socket_group",
        "\"a:b\"",
    );
    assert_invalid(
        "[disk]\ncheck_interval_ms = 5\n",
        "disk.check_interval_ms",
        "5",
    );
    let message = assert_invalid(
        "[disk]\nlow_watermark_free_bytes = 100\nhigh_watermark_free_bytes = 100\n",
        "disk.high_watermark_free_bytes",
        "100",
    );
    assert!(
        message.contains("low_watermark_free_bytes (100)"),
        "{message}"
    );
}

#[test]
fn config_service_tables_parse() {
    let text = "[control]\nmetrics_listen = \"127.0.0.1:9464\"\nadmin_uids = [1000]\n\
                [access]\nsocket_group = \"robot\"\nallow_gids = [27, 1001]\n\
                [disk]\nlow_watermark_free_bytes = 2000\nhigh_watermark_free_bytes = 1000\n";
    let cfg = Config::from_toml_str(text, "t.toml").unwrap();
    assert_eq!(cfg.control.metrics_listen, "127.0.0.1:9464");
    assert_eq!(cfg.control.admin_uids, [1000]);
    assert_eq!(cfg.access.socket_group, "robot");
    assert_eq!(cfg.access.allow_gids, [27, 1001]);
    assert_eq!(cfg.disk.high_watermark_free_bytes, 1000);
    assert!(cfg.disk.preallocate);
}

#[test]
fn flight_config_bad_retries_backoff_and_grace_name_the_key() {
    assert_invalid(
        "[flight]\npersist_retries = 1001\n",
        "flight.persist_retries",
        "1001",
    );
    assert_invalid(
        "[flight]\npersist_retry_backoff_ms = 3600001\n",
        "flight.persist_retry_backoff_ms",
        "3600001",
    );
    assert_invalid(
        "[flight]\npost_grace_ms = 3600001\n",
        "flight.post_grace_ms",
        "3600001",
    );
    let ok = Config::from_toml_str(
        "[flight]\npersist_retries = 0\npersist_retry_backoff_ms = 0\npost_grace_ms = 0\n",
        ORIGIN,
    )
    .unwrap();
    assert_eq!(ok.flight.persist_retries, 0);
}
