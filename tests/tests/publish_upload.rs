//! `publish_upload_*`: the robot's uploader in the real `wshardd` against a real s3s-fs
//! 0.14.1: finished episodes are uploaded (small puts and multipart) and appended to the
//! dataset; an episode being recorded is never uploaded until it is finished; with the
//! store down the uploader is `offline` with bytes pending while recording goes on, and
//! catches up when the store is back; the bandwidth limit holds.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::time::{Duration, Instant};

use serde_json::Value;
use wshard_client::{Durability, Outcome};
use wshard_e2e::s3::S3Server;
use wshard_e2e::upload::{
    assert_remote_copy, big_channels, episodes, publish_toml, queued, record_big,
    remote_episode_keys, set_credentials, status, wait_upload, PART, UPLOAD_TIMEOUT,
};
use wshard_e2e::{data, Daemon, DaemonOptions};

fn daemon(endpoint: &str, extra: &str) -> Daemon {
    set_credentials();
    Daemon::start(DaemonOptions {
        extra_toml: publish_toml(endpoint, extra),
        ..DaemonOptions::default()
    })
}

fn has_key(keys: &[String], id: &str) -> bool {
    keys.iter()
        .any(|k| k == id || k.ends_with(&format!("/{id}")))
}

fn row<'a>(list: &'a Value, id: &str) -> &'a Value {
    list["episodes"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["episode"] == id))
        .unwrap_or_else(|| panic!("episode {id} not in {list}"))
}

#[test]
fn publish_upload_finished_episodes_are_uploaded_and_appended() {
    let s3 = S3Server::start();
    let d = daemon(s3.endpoint(), "");
    d.record_ok("small-a", 200);
    record_big(&d, "big-b", 12);
    let up = wait_upload(&d, UPLOAD_TIMEOUT, "both episodes published", |u| {
        queued(u, "published") == 2
    });
    assert_eq!(up["state"], "idle", "{up}");
    assert_eq!(up["pending_bytes"], 0, "{up}");
    assert!(up["parts_sent_total"].as_u64().unwrap() >= 3, "{up}");
    assert!(up["last_error"].is_null(), "{up}");
    for id in ["small-a", "big-b"] {
        assert_remote_copy(&s3, "", &d.data_dir(), id);
    }
    let keys = remote_episode_keys(&s3, "");
    assert!(
        has_key(&keys, "small-a") && has_key(&keys, "big-b"),
        "{keys:?}"
    );
    let list = episodes(&d);
    assert_eq!(
        row(&list, "big-b")["upload"]["state"],
        "published",
        "{list}"
    );
    assert_eq!(row(&list, "big-b")["upload"]["pending_bytes"], 0, "{list}");
    // The metrics carry the same figures.
    let metrics = std::process::Command::new(wshard_e2e::bins::wshard())
        .args(["metrics", "--control"])
        .arg(d.root().join("wshardd-control.sock"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&metrics.stdout);
    assert!(
        text.contains("wshardd_upload_episodes{state=\"published\"} 2"),
        "{text}"
    );
    assert!(text.contains("wshardd_upload_sent_bytes_total"), "{text}");
    // The secret is nowhere: not in the log, status, episodes, metrics or the queue.
    let secret = wshard_e2e::s3::SECRET_KEY;
    for (what, body) in [
        ("log", d.log()),
        ("status", status(&d).to_string()),
        ("episodes", list.to_string()),
        ("metrics", text.to_string()),
    ] {
        assert!(!body.contains(secret), "the secret key is in the {what}");
    }
    let leaked = wshard_e2e::s3::files_containing(d.root(), secret.as_bytes());
    assert!(leaked.is_empty(), "the secret key is in {leaked:?}");
}

#[test]
fn publish_upload_a_recording_episode_is_never_uploaded_until_finished() {
    let s3 = S3Server::start();
    let d = daemon(s3.endpoint(), "");
    let ch = big_channels();
    let mut client = d.client("upload-test/open");
    let mut w = client
        .open_episode(data::open_spec("open-one", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 2).unwrap();
    // Another episode goes all the way while this one stays open: scans happened.
    d.record_ok("done-first", 50);
    wait_upload(&d, UPLOAD_TIMEOUT, "the finished episode published", |u| {
        queued(u, "published") == 1
    });
    let list = episodes(&d);
    assert!(row(&list, "open-one")["upload"].is_null(), "{list}");
    assert!(!has_key(&remote_episode_keys(&s3, ""), "open-one"));
    data::push_steps(&mut w, &ch, 1).unwrap();
    w.close(Outcome::Completed).unwrap();
    wait_upload(&d, UPLOAD_TIMEOUT, "the closed episode published", |u| {
        queued(u, "published") == 2
    });
    assert_remote_copy(&s3, "", &d.data_dir(), "open-one");
    assert!(has_key(&remote_episode_keys(&s3, ""), "open-one"));
}

#[test]
fn publish_upload_store_down_is_offline_with_bytes_pending_and_recording_goes_on() {
    let mut s3 = S3Server::start();
    s3.stop();
    let d = daemon(s3.endpoint(), "");
    record_big(&d, "while-down", 6);
    let up = wait_upload(&d, UPLOAD_TIMEOUT, "offline with bytes pending", |u| {
        u["state"] == "offline" && u["pending_bytes"].as_u64().unwrap_or(0) > 0
    });
    assert_eq!(up["last_error"]["kind"], "endpoint_unreachable", "{up}");
    assert!(up["next_retry_unix_s"].is_number(), "{up}");
    let list = episodes(&d);
    assert!(
        row(&list, "while-down")["upload"]["pending_bytes"]
            .as_u64()
            .unwrap()
            > 6 << 20,
        "{list}"
    );
    // Recording is not held up by the uploader being offline.
    d.record_ok("also-while-down", 100);
    s3.start_again_same_port();
    let up = wait_upload(
        &d,
        UPLOAD_TIMEOUT,
        "caught up once the store is back",
        |u| queued(u, "published") == 2,
    );
    assert_eq!(up["pending_bytes"], 0, "{up}");
    assert_remote_copy(&s3, "", &d.data_dir(), "while-down");
    assert_remote_copy(&s3, "", &d.data_dir(), "also-while-down");
}

#[test]
fn publish_upload_bandwidth_limit_is_respected() {
    const LIMIT: u64 = 4 << 20;
    let s3 = S3Server::start();
    let d = daemon(
        s3.endpoint(),
        &format!("bandwidth_limit_bytes_per_s = {LIMIT}"),
    );
    record_big(&d, "paced", 16);
    let t0 = Instant::now();
    let mut samples = 0;
    loop {
        let s = status(&d);
        let up = &s["upload"];
        let sent = up["sent_bytes_total"].as_u64().unwrap();
        // The pacer lets a part go once the earlier ones' time at the limit has passed:
        // by any moment, at most one part beyond the limit (counted from the first send,
        // which is after t0).
        let allowed = (t0.elapsed().as_secs_f64() * LIMIT as f64) as u64 + PART;
        assert!(sent <= allowed, "sent {sent} > allowed {allowed}: {up}");
        samples += 1;
        if queued(up, "published") == 1 {
            break;
        }
        assert!(t0.elapsed() < UPLOAD_TIMEOUT, "not published: {up}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        samples > 3,
        "the upload was not paced at all ({samples} samples)"
    );
    assert_remote_copy(&s3, "", &d.data_dir(), "paced");
}
