//! `rolling.quota_policy = "refuse_windows"` against the real daemon and a real
//! S3-compatible server that is down: once what the daemon may not evict exceeds
//! `publish.quota_bytes`, a trigger is refused with `QUOTA_EXCEEDED` (naming both byte
//! counts) and the flight stream records on; when the quota passes, triggers work again.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use wshard_e2e::{bins, data, Daemon, DaemonOptions, TIMEOUT};
use wshard_ingest_proto::{Durability, Outcome};

/// Set `publish.quota_bytes` (1 MiB): a few big timesteps exceed it.
const QUOTA_BYTES: u64 = 1 << 20;

fn trigger(d: &Daemon) -> std::process::Output {
    Command::new(bins::wshard())
        .args([
            "trigger",
            "--pre",
            "1s",
            "--post",
            "0s",
            "--reason",
            "quota test",
            "--json",
        ])
        .arg("--control")
        .arg(d.root().join("wshardd-control.sock"))
        .output()
        .expect("run wshard trigger")
}

fn quota_exceeded(d: &Daemon) -> bool {
    wshard_e2e::upload::status(d)["daemon"]["quota"]["exceeded"] == json!(true)
}

#[test]
fn flight_quota_refuse_windows_refuses_triggers_while_over_and_recording_goes_on() {
    let mut s3 = wshard_e2e::s3::S3Server::start();
    s3.stop();
    wshard_e2e::upload::set_credentials();
    let d = Daemon::start(DaemonOptions {
        extra_toml: format!(
            "{}\n[rolling]\nquota_policy = \"refuse_windows\"\n",
            wshard_e2e::upload::publish_toml(
                s3.endpoint(),
                &format!("quota_bytes = {QUOTA_BYTES}")
            )
        ),
        ..DaemonOptions::default()
    });
    let ch = wshard_e2e::upload::big_channels();
    let mut client = d.client("e2e/flight-quota");
    let mut spec = data::open_spec("fq", &ch, Durability::Ack);
    spec.metadata_json = json!({ "wshard.flight": true }).to_string();
    let mut w = client.open_episode(spec).expect("open a flight episode");
    // Record until an eviction pass finds the quota exceeded (the store is down: nothing
    // can be published, so nothing can be evicted).
    let deadline = Instant::now() + TIMEOUT;
    let mut acked = 0;
    while !quota_exceeded(&d) {
        acked = data::push_steps(&mut w, &ch, 1)
            .and_then(|_| w.flush())
            .expect("flight recording goes on");
        assert!(Instant::now() < deadline, "the quota was never exceeded");
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = trigger(&d);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let err = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("QUOTA_EXCEEDED"), "{err}");
    assert!(err.contains("publish.quota_bytes"), "{err}");
    assert!(err.contains("refuse_windows"), "{err}");
    // No window episode was made, and the stream records on.
    let windows: Vec<_> = std::fs::read_dir(d.data_dir())
        .expect("data dir")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("flight-"))
        .collect();
    assert!(windows.is_empty(), "{windows:?}");
    let after = data::push_steps(&mut w, &ch, 1)
        .and_then(|_| w.flush())
        .expect("recording goes on after the refusal");
    assert!(after > acked);
    assert_eq!(w.close(Outcome::Completed).expect("close").timesteps, after);
}

/// A window episode is published like any other, but never evicted (here by
/// `delete_after_publish`, the strictest retention), while a plain published one is.
#[test]
fn flight_window_is_published_but_never_evicted() {
    use wshard_e2e::upload::{queued, wait_upload, UPLOAD_TIMEOUT};
    wshard_e2e::upload::set_credentials();
    let s3 = wshard_e2e::s3::S3Server::start();
    let d = Daemon::start(DaemonOptions {
        extra_toml: wshard_e2e::upload::publish_toml(s3.endpoint(), "delete_after_publish = true"),
        ..DaemonOptions::default()
    });
    let ch = data::channels();
    let mut client = d.client("e2e/flight-window-evict");
    let mut spec = data::open_spec("fw-src", &ch, Durability::Ack);
    spec.metadata_json = json!({ "wshard.flight": true }).to_string();
    let mut w = client.open_episode(spec).expect("open a flight episode");
    data::push_steps(&mut w, &ch, 40).expect("record");
    w.flush().expect("flush");
    let o = trigger(&d);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let reply: serde_json::Value = serde_json::from_slice(&o.stdout).expect("--json reply");
    let window = reply["result"]["episode"]
        .as_str()
        .expect("the reply names the window")
        .to_owned();
    w.close(Outcome::Completed).expect("close");
    d.record_ok("plain-b", 20);
    // The source, the window and the plain episode are published; the two that may be
    // evicted are.
    wait_upload(
        &d,
        UPLOAD_TIMEOUT,
        "two evicted, the window published",
        |u| queued(u, "evicted") == 2 && queued(u, "published") == 1,
    );
    assert!(
        !d.data_dir().join("plain-b").exists(),
        "plain-b still on disk"
    );
    assert!(
        !d.data_dir().join("fw-src").exists(),
        "fw-src still on disk"
    );
    std::thread::sleep(Duration::from_millis(1500));
    let up = wshard_e2e::upload::status(&d)["upload"].clone();
    assert_eq!(queued(&up, "evicted"), 2, "{up}");
    let index = wshard_e2e::multi::read_index(&d.data_dir(), &window)
        .unwrap_or_else(|e| panic!("window {window} gone: {e:?}"));
    assert_eq!(
        index.metadata["origin"],
        json!("flight_window"),
        "{:?}",
        index.metadata
    );
}
