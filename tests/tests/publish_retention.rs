//! `publish_retention_*`: retention and the quota of the robot's uploader against a real
//! s3s-fs. Nothing is deleted that is not published with its remote copy verified; the
//! quota evicts the oldest published episodes first; free space under the low watermark
//! (plus its margin) evicts published episodes, never unpublished ones.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use serde_json::Value;
use wshard_e2e::s3::S3Server;
use wshard_e2e::upload::{
    assert_remote_episode_verifies, episodes, publish_toml, queued, record_big, set_credentials,
    wait_upload, ROBOT, UPLOAD_TIMEOUT,
};
use wshard_e2e::{Daemon, DaemonOptions};

fn options(endpoint: &str, extra: &str) -> DaemonOptions {
    set_credentials();
    DaemonOptions {
        extra_toml: publish_toml(endpoint, extra),
        ..DaemonOptions::default()
    }
}

fn upload_state(list: &Value, id: &str) -> String {
    list["episodes"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["episode"] == id))
        .map(|e| e["upload"]["state"].as_str().unwrap_or("-").to_owned())
        .unwrap_or_else(|| panic!("episode {id} not listed: {list}"))
}

#[test]
fn publish_retention_delete_after_publish_deletes_only_verified_published_episodes() {
    let mut s3 = S3Server::start();
    s3.stop();
    let d = Daemon::start(options(s3.endpoint(), "delete_after_publish = true"));
    record_big(&d, "ret-a", 2);
    d.record_ok("ret-b", 100);
    // The store is down: nothing is published, so nothing is deleted.
    wait_upload(&d, UPLOAD_TIMEOUT, "offline with both queued", |u| {
        u["state"] == "offline" && u["pending_bytes"].as_u64().unwrap_or(0) > 0
    });
    assert!(d.data_dir().join("ret-a").is_dir() && d.data_dir().join("ret-b").is_dir());
    s3.start_again_same_port();
    let up = wait_upload(&d, UPLOAD_TIMEOUT, "both published and evicted", |u| {
        queued(u, "evicted") == 2
    });
    assert_eq!(up["episodes_evicted_total"], 2, "{up}");
    for id in ["ret-a", "ret-b"] {
        assert!(!d.data_dir().join(id).exists(), "{id} still on disk");
        assert_remote_episode_verifies(&s3, "", &format!("{ROBOT}/{id}"));
    }
    assert!(!d.data_dir().join(".upload/evicting/ret-a").exists());
    let list = episodes(&d);
    assert_eq!(upload_state(&list, "ret-a"), "evicted", "{list}");
}

#[test]
fn publish_retention_quota_evicts_the_oldest_published_first() {
    let mut s3 = S3Server::start();
    s3.stop();
    // Three episodes of about 2 MiB each; a 5 MiB quota holds two. They are recorded while
    // the store is down, so no eviction pass runs during a recording (the quota counts an
    // episode being recorded too, journal and all, and a pass then may evict more).
    let d = Daemon::start(options(s3.endpoint(), "quota_bytes = 5242880"));
    for id in ["q-1", "q-2", "q-3"] {
        record_big(&d, id, 2);
    }
    wait_upload(&d, UPLOAD_TIMEOUT, "offline with three queued", |u| {
        u["state"] == "offline" && queued(u, "queued") + queued(u, "uploading") == 3
    });
    s3.start_again_same_port();
    let up = wait_upload(&d, UPLOAD_TIMEOUT, "all published, one evicted", |u| {
        queued(u, "published") + queued(u, "evicted") == 3 && queued(u, "evicted") >= 1
    });
    assert_eq!(
        queued(&up, "evicted"),
        1,
        "only the oldest is evicted: {up}"
    );
    assert!(!d.data_dir().join("q-1").exists(), "the oldest is evicted");
    assert!(d.data_dir().join("q-2").is_dir() && d.data_dir().join("q-3").is_dir());
    assert_remote_episode_verifies(&s3, "", &format!("{ROBOT}/q-1"));
}

#[test]
fn publish_retention_low_watermark_evicts_published_never_unpublished() {
    let mut s3 = S3Server::start();
    let mut d = Daemon::start(options(s3.endpoint(), ""));
    record_big(&d, "w-old", 2);
    record_big(&d, "w-new", 2);
    wait_upload(&d, UPLOAD_TIMEOUT, "published", |u| {
        queued(u, "published") == 2
    });
    // One more while the store is down: never published, never evicted.
    s3.stop();
    d.record_ok("w-unpublished", 100);
    wait_upload(&d, UPLOAD_TIMEOUT, "offline", |u| u["state"] == "offline");
    d.terminate();
    d.wait_exit(std::time::Duration::from_secs(10));
    // Restart with a low watermark above the free space: every published episode goes.
    let mut opts = d.options().clone();
    opts.disk_low_watermark = 1 << 60;
    d.set_options(opts);
    d.spawn();
    d.wait_ready();
    let up = wait_upload(&d, UPLOAD_TIMEOUT, "published episodes evicted", |u| {
        queued(u, "evicted") == 2
    });
    assert!(!d.data_dir().join("w-old").exists() && !d.data_dir().join("w-new").exists());
    assert!(
        d.data_dir().join("w-unpublished").is_dir(),
        "an unpublished episode was evicted: {up}"
    );
    s3.start_again_same_port();
    assert_remote_episode_verifies(&s3, "", &format!("{ROBOT}/w-old"));
}
