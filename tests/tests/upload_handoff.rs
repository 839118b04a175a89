//! `upload_handoff_*`: the recorder hands each finalized episode to the uploader, which
//! starts on it at once; the data directory is listed only at startup (and by the safety
//! rescan, `scan_interval_ms`, set to an hour here). A real `wshardd`, a real s3s-fs
//! 0.14.1, real clients: an episode finished after the uploader's first pass can only reach
//! the store through the hand-off, so its publication within [`UPLOAD_TIMEOUT`] (far under
//! the hour) is the proof; no timing is measured that could flake.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::time::{Duration, Instant};

use wshard_e2e::multi::{episode_close, owner, producer, stream_spec, wait_index_final};
use wshard_e2e::s3::S3Server;
use wshard_e2e::upload::{
    assert_remote_copy, publish_toml, queued, record_big, remote_episode_keys, set_credentials,
    wait_upload, UPLOAD_TIMEOUT,
};
use wshard_e2e::{data, Daemon, DaemonOptions};
use wshard_ingest_proto::{Durability, Outcome};

/// The safety rescan: an hour, far beyond any wait of these tests.
const RESCAN_MS: u64 = 3_600_000;

fn daemon(endpoint: &str) -> Daemon {
    set_credentials();
    Daemon::start(DaemonOptions {
        extra_toml: publish_toml(endpoint, "").replace(
            "scan_interval_ms = 100",
            &format!("scan_interval_ms = {RESCAN_MS}"),
        ),
        ..DaemonOptions::default()
    })
}

fn has_key(keys: &[String], id: &str) -> bool {
    keys.iter()
        .any(|k| k == id || k.ends_with(&format!("/{id}")))
}

/// The first episode is published (found by the startup scan or handed over): the
/// uploader's first pass, the only listing of the data directory within the hour, is over.
fn first_pass_over(d: &Daemon) {
    d.record_ok("before", 20);
    wait_upload(d, UPLOAD_TIMEOUT, "the first episode published", |u| {
        queued(u, "published") == 1
    });
}

#[test]
fn upload_handoff_episode_closed_after_the_first_pass_is_uploaded_at_once() {
    let s3 = S3Server::start();
    let d = daemon(s3.endpoint());
    first_pass_over(&d);
    let closed = Instant::now();
    d.record_ok("small-after", 50);
    record_big(&d, "big-after", 7);
    let up = wait_upload(&d, UPLOAD_TIMEOUT, "both later episodes published", |u| {
        queued(u, "published") == 3
    });
    let took = closed.elapsed();
    assert!(
        took < Duration::from_millis(RESCAN_MS),
        "published after {took:?}: the rescan, not the hand-off"
    );
    assert_eq!(up["state"], "idle", "{up}");
    assert!(up["last_error"].is_null(), "{up}");
    for id in ["small-after", "big-after"] {
        assert_remote_copy(&s3, "", &d.data_dir(), id);
    }
    let keys = remote_episode_keys(&s3, "");
    for id in ["before", "small-after", "big-after"] {
        assert!(has_key(&keys, id), "{id} not in {keys:?}");
    }
    eprintln!("upload_handoff: close to published in {took:?} (rescan every {RESCAN_MS} ms)");
}

#[test]
fn upload_handoff_multi_stream_episode_is_handed_over_when_its_index_is_final() {
    let s3 = S3Server::start();
    let d = daemon(s3.endpoint());
    first_pass_over(&d);
    let ep = "multi-after";
    let mut o = owner(&d.socket(), ep);
    let joints = stream_spec(ep, "joints", &data::channels(), 1000.0, Durability::Ack);
    let imu = stream_spec(ep, "imu", &data::small_channels(), 200.0, Durability::Chunk);
    let mut a = producer(&d.socket(), &joints);
    let mut b = producer(&d.socket(), &imu);
    a.timesteps(&data::channels(), 0..30);
    b.timesteps(&data::small_channels(), 0..12);
    a.flush_until(30);
    // A stream finalized while the episode records: nothing of the episode is enqueued.
    a.close(Outcome::Completed, 30);
    std::thread::sleep(Duration::from_millis(300));
    let up = wait_upload(&d, UPLOAD_TIMEOUT, "status", |_| true);
    let total: u64 = ["queued", "uploading", "uploaded", "published"]
        .iter()
        .map(|s| queued(&up, s))
        .sum();
    assert_eq!(total, 1, "an episode still recording was enqueued: {up}");
    b.close(Outcome::Completed, 12);
    assert_eq!(episode_close(&mut o), 0, "finalized before the reply");
    wait_index_final(&d.data_dir(), ep, UPLOAD_TIMEOUT).unwrap();
    wait_upload(
        &d,
        UPLOAD_TIMEOUT,
        "the multi-stream episode published",
        |u| queued(u, "published") == 2,
    );
    assert_remote_copy(&s3, "", &d.data_dir(), ep);
}

#[test]
fn upload_handoff_flight_window_is_handed_over_when_it_is_in_place() {
    use serde_json::json;
    use wshard_e2e::flight::{open_flight, trigger_ok, wait_window};
    let s3 = S3Server::start();
    let d = daemon(s3.endpoint());
    first_pass_over(&d);
    // The flight stream stays open: the window is the only episode finished after the
    // first pass.
    let ch = data::channels();
    let mut c = open_flight(&d, "ring", &json!({"ring_seconds": 1}));
    c.timesteps(&ch, 0..100);
    c.flush_until(100);
    let r = trigger_ok(
        &d,
        json!({"verb":"trigger","pre_ms":50,"post_ms":20,"reason":"handoff"}),
    );
    let w = r["episode"].as_str().expect("episode").to_owned();
    c.timesteps(&ch, 100..200);
    c.flush_until(200);
    wait_window(&d, &w);
    wait_upload(&d, UPLOAD_TIMEOUT, "the window published", |u| {
        queued(u, "published") == 2
    });
    assert_remote_copy(&s3, "", &d.data_dir(), &w);
    assert!(has_key(&remote_episode_keys(&s3, ""), &w));
    c.close(Outcome::Completed, 200);
}
