//! `publish_retention_keep_*`: the keep mark (`wshard keep`) against the robot's uploader
//! and a real s3s-fs. A kept episode is uploaded and published like any other, but its
//! local copy is never evicted (here by `delete_after_publish`, the strictest retention),
//! while an unkept published one is; once the mark is released, the next pass evicts it.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use wshard_e2e::check::check_episode;
use wshard_e2e::s3::S3Server;
use wshard_e2e::upload::{
    assert_remote_episode_verifies, episodes, publish_toml, queued, set_credentials, status,
    wait_upload, ROBOT, UPLOAD_TIMEOUT,
};
use wshard_e2e::{bins, data, Daemon, DaemonOptions};

/// Scan passes to wait for, to see that a pass leaves the kept episode alone
/// (`scan_interval_ms` is 100 in `publish_toml`).
const PASSES: Duration = Duration::from_millis(1500);

fn control_socket(d: &Daemon) -> PathBuf {
    d.root().join("wshardd-control.sock")
}

/// `wshard keep ARGS --json` must succeed: its result.
fn keep(d: &Daemon, args: &[&str]) -> Value {
    let o = Command::new(bins::wshard())
        .arg("keep")
        .args(args)
        .arg("--json")
        .arg("--control")
        .arg(control_socket(d))
        .env_remove("WSHARDD_CONFIG")
        .output()
        .unwrap();
    let text = wshard_e2e::check::output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["result"].clone()
}

fn upload_state(list: &Value, id: &str) -> String {
    list["episodes"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["episode"] == id))
        .map(|e| e["upload"]["state"].as_str().unwrap_or("-").to_owned())
        .unwrap_or_else(|| panic!("episode {id} not listed: {list}"))
}

#[test]
fn publish_retention_keep_kept_episode_is_never_evicted_an_unkept_one_is() {
    set_credentials();
    let mut s3 = S3Server::start();
    s3.stop();
    let d = Daemon::start(DaemonOptions {
        extra_toml: publish_toml(s3.endpoint(), "delete_after_publish = true"),
        ..DaemonOptions::default()
    });
    d.record_ok("kept-a", 50);
    d.record_ok("plain-b", 50);
    let r = keep(&d, &["kept-a"]);
    assert_eq!(r["kept"], true, "{r}");
    wait_upload(&d, UPLOAD_TIMEOUT, "offline with both queued", |u| {
        u["state"] == "offline"
    });
    s3.start_again_same_port();
    let up = wait_upload(
        &d,
        UPLOAD_TIMEOUT,
        "both published, the unkept one evicted",
        |u| {
            queued(u, "evicted") == 1
                && queued(u, "published") == 1
                && u["episodes_evicted_total"] == 1
        },
    );
    assert_eq!(
        up["evicted_bytes_total"].as_u64().map(|b| b > 0),
        Some(true),
        "{up}"
    );
    assert!(
        !d.data_dir().join("plain-b").exists(),
        "plain-b still on disk"
    );
    // More passes: the kept episode stays, whole, published, and is listed kept.
    std::thread::sleep(PASSES);
    let up = status(&d)["upload"].clone();
    assert_eq!(queued(&up, "evicted"), 1, "{up}");
    let st = check_episode(&d.data_dir(), "kept-a", &data::channels()).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 50));
    let list = episodes(&d);
    assert_eq!(upload_state(&list, "kept-a"), "published", "{list}");
    assert_eq!(upload_state(&list, "plain-b"), "evicted", "{list}");
    let kept_a = list["episodes"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["episode"] == "kept-a"))
        .unwrap();
    assert_eq!(kept_a["kept"], true, "{kept_a}");
    // Both remote copies are whole.
    for id in ["kept-a", "plain-b"] {
        assert_remote_episode_verifies(&s3, "", &format!("{ROBOT}/{id}"));
    }
    // Released: the next pass evicts it.
    let r = keep(&d, &["kept-a", "--release"]);
    assert_eq!(
        (&r["kept"], &r["changed"]),
        (&Value::Bool(false), &Value::Bool(true))
    );
    wait_upload(&d, UPLOAD_TIMEOUT, "the released episode evicted", |u| {
        queued(u, "evicted") == 2
    });
    assert!(
        !d.data_dir().join("kept-a").exists(),
        "kept-a still on disk"
    );
}
