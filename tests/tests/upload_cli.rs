//! `upload_*` for `wshard upload status|retry|drop EPISODE`: a real `wshardd`, the real
//! `wshard` CLI over the control socket, a real s3s-fs 0.14.1 stopped and started again.
//! `retry` ends the uploader's backoff at once (the backoff is set to an hour, so only the
//! retry can explain the upload), a stale error leaves `wshard status` once the uploader
//! recovers, `drop` takes an episode out of the queue for good (durable when answered:
//! across a SIGKILL and a restart) while its files stay and are never evicted, and each
//! refusal is a typed error.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::time::Duration;

use serde_json::Value;
use wshard_client::Outcome;
use wshard_e2e::control_cli::{json_ok, text, wshard};
use wshard_e2e::s3::S3Server;
use wshard_e2e::upload::{
    assert_remote_copy, big_channels, publish_toml, queued, remote_episode_keys, set_credentials,
    status, wait_upload, UPLOAD_TIMEOUT,
};
use wshard_e2e::{data, Daemon, DaemonOptions};
use wshard_publish::episodes::select;

/// A backoff only a retry can cut short within a test.
const HOUR_MS: u64 = 3_600_000;

fn daemon(endpoint: &str, extra: &str) -> Daemon {
    set_credentials();
    Daemon::start(DaemonOptions {
        extra_toml: publish_toml(endpoint, extra),
        ..DaemonOptions::default()
    })
}

/// A server that is down now and can be started again on the same port.
fn stopped_server() -> S3Server {
    let mut s3 = S3Server::start();
    s3.stop();
    s3
}

/// `wshard upload ARGS --json` that must be refused with `code` and exit `exit`.
fn refused(d: &Daemon, args: &[&str], code: &str, exit: i32) -> Value {
    let mut all = vec!["upload"];
    all.extend_from_slice(args);
    all.push("--json");
    let o = wshard(d, &all);
    assert_eq!(o.status.code(), Some(exit), "wshard {all:?}: {}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["error"]["code"], code, "{v}");
    v["error"].clone()
}

fn entry(d: &Daemon, id: &str) -> Value {
    let r = json_ok(d, &["upload", "status", id, "--json"]);
    let entries = r["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{r}");
    entries[0].clone()
}

fn has_key(keys: &[String], id: &str) -> bool {
    keys.iter()
        .any(|k| k == id || k.ends_with(&format!("/{id}")))
}

#[test]
fn upload_retry_ends_the_backoff_and_a_stale_error_leaves_status() {
    let mut s3 = stopped_server();
    set_credentials();
    let toml = publish_toml(s3.endpoint(), "").replace(
        "retry_min_ms = 100\nretry_max_ms = 400",
        &format!("retry_min_ms = {HOUR_MS}\nretry_max_ms = {HOUR_MS}"),
    );
    assert!(toml.contains(&HOUR_MS.to_string()), "{toml}");
    let d = Daemon::start(DaemonOptions {
        extra_toml: toml,
        ..DaemonOptions::default()
    });
    d.record_ok("r1", 20);
    wait_upload(&d, UPLOAD_TIMEOUT, "offline with an error", |u| {
        u["state"] == "offline" && u["last_error"]["kind"] == "endpoint_unreachable"
    });
    let e = entry(&d, "r1");
    assert_eq!(e["state"], "queued", "{e}");
    assert!(e["attempts"].as_u64().unwrap() >= 1, "{e}");
    assert_eq!(e["last_error"]["kind"], "endpoint_unreachable", "{e}");
    // The text form lists it with its error.
    let o = wshard(&d, &["upload", "status"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(
        shown.contains("r1") && shown.contains("endpoint_unreachable"),
        "{shown}"
    );
    s3.start_again_same_port();
    // The next attempt is an hour away: only the retry brings it now.
    let r = json_ok(&d, &["upload", "retry", "r1", "--json"]);
    assert_eq!(r["retry"], true, "{r}");
    let up = wait_upload(&d, UPLOAD_TIMEOUT, "published after the retry", |u| {
        queued(u, "published") == 1
    });
    assert_eq!(up["state"], "idle", "{up}");
    assert!(up["last_error"].is_null(), "the stale error stays: {up}");
    assert!(status(&d)["upload"]["last_error"].is_null());
    let e = entry(&d, "r1");
    assert_eq!(e["state"], "published", "{e}");
    assert!(e["last_error"].is_null(), "{e}");
    assert_remote_copy(&s3, "", &d.data_dir(), "r1");
    // Typed refusals.
    let err = refused(&d, &["retry", "r1"], "NOT_QUEUED", 1);
    assert_eq!(err["episode"], "r1");
    assert_eq!(err["state"], "published");
    refused(&d, &["retry", "no-such-episode"], "UNKNOWN_EPISODE", 1);
    refused(&d, &["status", "no-such-episode"], "UNKNOWN_EPISODE", 1);
    refused(&d, &["drop", "../x"], "BAD_REQUEST", 2);
}

#[test]
fn upload_drop_keeps_the_files_and_the_episode_is_never_uploaded_nor_evicted() {
    let mut s3 = stopped_server();
    let mut d = daemon(s3.endpoint(), "delete_after_publish = true");
    // An episode still recording is not in the queue.
    let ch = big_channels();
    let mut client = d.client("upload-test/open");
    let mut w = client
        .open_episode(data::open_spec("open", &ch, wshard_client::Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 1).unwrap();
    refused(&d, &["drop", "open"], "NOT_QUEUED", 1);
    w.close(Outcome::Completed).unwrap();
    d.record_ok("keepme", 40);
    d.record_ok("sent", 40);
    wait_upload(&d, UPLOAD_TIMEOUT, "three queued, offline", |u| {
        queued(u, "queued") == 3 && u["state"] == "offline"
    });
    let before = select(&d.data_dir(), &["keepme".to_owned()]).unwrap();
    let r = json_ok(&d, &["upload", "drop", "keepme", "--json"]);
    assert_eq!(
        (r["state"].clone(), r["was"].clone()),
        ("dropped".into(), "queued".into()),
        "{r}"
    );
    assert_eq!(entry(&d, "keepme")["state"], "dropped");
    refused(&d, &["drop", "keepme"], "NOT_QUEUED", 1);
    refused(&d, &["retry", "keepme"], "NOT_QUEUED", 1);
    // The drop is durable once answered: a SIGKILL right after it keeps it.
    d.kill9();
    d.spawn();
    d.wait_ready();
    // The restarted uploader reads its queue log first: the drop is there once it has.
    wait_upload(&d, UPLOAD_TIMEOUT, "the queue log read again", |u| {
        queued(u, "dropped") == 1
    });
    assert_eq!(entry(&d, "keepme")["state"], "dropped");
    s3.start_again_same_port();
    // The others are published and, with delete_after_publish, evicted.
    let up = wait_upload(&d, UPLOAD_TIMEOUT, "the others evicted", |u| {
        queued(u, "evicted") == 2
    });
    assert_eq!(queued(&up, "dropped"), 1, "{up}");
    // Across a restart: still dropped, never enqueued again by the startup scan.
    d.terminate();
    d.wait_exit(Duration::from_secs(10));
    d.spawn();
    d.wait_ready();
    d.record_ok("later", 20);
    let up = wait_upload(&d, UPLOAD_TIMEOUT, "the later episode evicted", |u| {
        queued(u, "evicted") == 3
    });
    assert_eq!(queued(&up, "dropped"), 1, "{up}");
    assert_eq!(entry(&d, "keepme")["state"], "dropped");
    // Never uploaded, never evicted: the files are as they were.
    let keys = remote_episode_keys(&s3, "");
    assert!(!has_key(&keys, "keepme"), "{keys:?}");
    assert!(
        has_key(&keys, "sent") && has_key(&keys, "later"),
        "{keys:?}"
    );
    let after = select(&d.data_dir(), &["keepme".to_owned()]).unwrap();
    assert_eq!(before.episodes[0].files, after.episodes[0].files);
    assert!(
        !d.data_dir().join("sent").exists(),
        "published ones are evicted"
    );
}
