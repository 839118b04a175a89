#![allow(clippy::unwrap_used)]
//! `[publish]`: the robot's uploader. Every error names the `publish.*` key.

use wshardd_config::{Config, ConfigError};

const ORIGIN: &str = "t.toml";
const ENABLED: &str = "[publish]\nenabled = true\nendpoint = \"http://127.0.0.1:9000\"\n\
                       allow_http = true\nbucket = \"b\"\ndataset = \"lab/pick\"\n";

fn invalid_key(text: &str) -> String {
    match Config::from_toml_str(text, ORIGIN).unwrap_err() {
        ConfigError::Invalid { key, .. } => key,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn config_publish_enabled_table_parses_and_needs_a_restart() {
    let c = Config::from_toml_str(ENABLED, ORIGIN).unwrap();
    assert!(c.publish.enabled);
    assert_eq!(c.publish.dataset, "lab/pick");
    let (applied, restart) = Config::default().reloadable_diff(&c);
    assert!(applied.is_empty(), "{applied:?}");
    assert!(restart.contains(&"publish.enabled"), "{restart:?}");
}

#[test]
fn config_publish_gcs_may_leave_the_endpoint_to_google() {
    let c = Config::from_toml_str(
        "[publish]\nenabled = true\nprovider = \"gcs\"\nbucket = \"b\"\ndataset = \"a/b\"\n",
        ORIGIN,
    )
    .unwrap();
    assert_eq!(c.publish.provider, "gcs");
    assert_eq!(Config::default().publish.provider, "s3");
}

#[test]
fn config_publish_disabled_does_not_need_the_store_keys() {
    let c = Config::from_toml_str("[publish]\nenabled = false\n", ORIGIN).unwrap();
    assert!(!c.publish.enabled);
}

#[test]
fn config_publish_errors_name_the_key() {
    let cases = [
        ("[publish]\nenabled = true\n", "publish.endpoint"),
        (
            "[publish]\nenabled = true\nendpoint = \"http://h:1\"\nbucket = \"b\"\ndataset = \"a/b\"\n",
            "publish.endpoint",
        ),
        (
            "[publish]\nenabled = true\nendpoint = \"https://h:1\"\ndataset = \"a/b\"\n",
            "publish.bucket",
        ),
        (
            "[publish]\nenabled = true\nendpoint = \"https://h:1\"\nbucket = \"b\"\n",
            "publish.dataset",
        ),
        (
            "[publish]\nenabled = true\nendpoint = \"https://h:1\"\nbucket = \"b\"\ndataset = \"A/b\"\n",
            "publish.dataset",
        ),
        ("[publish]\npart_size_bytes = 1024\n", "publish.part_size_bytes"),
        (
            "[publish]\nmultipart_threshold_bytes = 6000000\n",
            "publish.multipart_threshold_bytes",
        ),
        ("[publish]\nretry_min_ms = 0\n", "publish.retry_min_ms"),
        (
            "[publish]\nretry_min_ms = 5000\nretry_max_ms = 10\n",
            "publish.retry_max_ms",
        ),
        ("[publish]\nscan_interval_ms = 1\n", "publish.scan_interval_ms"),
        ("[publish]\nmultipart_restart_after = 0\n", "publish.multipart_restart_after"),
        ("[publish]\nmultipart_restart_after = 1001\n", "publish.multipart_restart_after"),
        ("[publish]\nrobot = \"a/b\"\n", "publish.robot"),
        ("[publish]\nprefix = \"../x\"\n", "publish.prefix"),
        ("[publish]\nprovider = \"ftp\"\n", "publish.provider"),
        (
            "[publish]\nenabled = true\nprovider = \"azure\"\nbucket = \"c\"\ndataset = \"a/b\"\n",
            "publish.endpoint",
        ),
    ];
    for (text, key) in cases {
        assert_eq!(invalid_key(text), key, "{text}");
    }
}
