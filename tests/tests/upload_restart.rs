//! `upload_restart_*`: a multipart upload the store no longer knows, or that keeps failing,
//! is restarted fresh with a new upload id instead of being retried forever. A real
//! `wshardd` (SIGKILLed and restarted), a real s3s-fs 0.14.1 whose multipart state is
//! changed behind the uploader's back: the upload aborted through the S3 API while the
//! daemon is down (the store answers the old id as unknown), or the upload's state file
//! made unreadable (every part and completion of that id answered 500 for good). The
//! episode is uploaded completely and byte-exact (size and streamed SHA-256) either way.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use serde_json::Value;
use wshard_e2e::s3::S3Server;
use wshard_e2e::upload::{
    assert_remote_copy, publish_toml, queued, record_big, set_credentials, store, wait_upload,
    UPLOAD_TIMEOUT,
};
use wshard_e2e::{Daemon, DaemonOptions};

/// 16 MiB: parts of 5, 5, 5 and 1 MiB.
const MIB: u64 = 16;
/// Slow enough to act halfway (about 5 s for the file), with a margin for a loaded machine.
const LIMIT: u64 = 3 << 20;
/// `publish.multipart_restart_after` of the persistent-5xx test.
const RESTART_AFTER: u64 = 4;

fn daemon(endpoint: &str, extra: &str) -> Daemon {
    set_credentials();
    Daemon::start(DaemonOptions {
        extra_toml: publish_toml(
            endpoint,
            &format!("bandwidth_limit_bytes_per_s = {LIMIT}\n{extra}"),
        ),
        ..DaemonOptions::default()
    })
}

/// Wait until the multipart file of the episode has `n` parts stored.
fn wait_parts(d: &Daemon, n: u64) -> Value {
    wait_upload(d, UPLOAD_TIMEOUT, "parts stored", |u| {
        u["current"]["parts_total"].as_u64().unwrap_or(0) > 1
            && u["current"]["parts_done"].as_u64().unwrap_or(0) >= n
    })
}

/// The queue log's records of kind `kind` (`mpu`, `mpu_failed`, ...), in log order: each
/// body is one JSON object, found by its tag and read up to its end.
fn records(d: &Daemon, kind: &str) -> Vec<Value> {
    let log = std::fs::read(d.data_dir().join(".upload/queue.log")).unwrap();
    let needle = format!("{{\"t\":\"{kind}\"");
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = log[at..]
        .windows(needle.len())
        .position(|w| w == needle.as_bytes())
    {
        let start = at + i;
        let v: Value = serde_json::Deserializer::from_slice(&log[start..])
            .into_iter::<Value>()
            .next()
            .unwrap()
            .unwrap();
        out.push(v);
        at = start + needle.len();
    }
    out
}

#[test]
fn upload_restart_upload_aborted_on_the_server_while_down_is_sent_again_in_a_new_upload() {
    let s3 = S3Server::start();
    let mut d = daemon(s3.endpoint(), "");
    record_big(&d, "aborted", MIB);
    wait_parts(&d, 2);
    d.kill9();
    let mpus = records(&d, "mpu");
    assert_eq!(mpus.len(), 1, "{mpus:?}");
    let key = mpus[0]["key"].as_str().unwrap().to_owned();
    let old_id = mpus[0]["upload_id"].as_str().unwrap().to_owned();
    assert!(!records(&d, "part").is_empty());
    // Behind the uploader's back: the store forgets the upload and its parts.
    store(&s3, "").abort_multipart(&key, &old_id).unwrap();
    d.spawn();
    d.wait_ready();
    let up = wait_upload(&d, UPLOAD_TIMEOUT, "published after the restart", |u| {
        queued(u, "published") == 1
    });
    assert!(
        up["last_error"].is_null(),
        "a recovered uploader shows no error: {up}"
    );
    let mpus = records(&d, "mpu");
    let ids: Vec<&str> = mpus
        .iter()
        .filter_map(|m| m["upload_id"].as_str())
        .collect();
    assert!(
        ids.len() >= 2 && ids.iter().skip(1).all(|i| *i != old_id),
        "a new upload id after the lost one: {ids:?}"
    );
    assert_remote_copy(&s3, "", &d.data_dir(), "aborted");
}

#[test]
fn upload_restart_persistent_5xx_gives_the_upload_up_after_the_bound_even_across_a_sigkill() {
    let s3 = S3Server::start();
    let mut d = daemon(
        s3.endpoint(),
        &format!("multipart_restart_after = {RESTART_AFTER}"),
    );
    record_big(&d, "failing", MIB);
    wait_parts(&d, 1);
    let old_id = records(&d, "mpu")[0]["upload_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // s3s-fs keeps an upload's owner in `.upload-<id>.json`: unreadable, every part and
    // the completion of that upload are answered 500, for good; new uploads still work.
    let state = s3.store_root().join(format!(".upload-{old_id}.json"));
    assert!(state.is_file(), "{} missing", state.display());
    std::fs::write(&state, b"{").unwrap();
    let before_kill = wait_upload(&d, UPLOAD_TIMEOUT, "a failed attempt journaled", |_| {
        !records(&d, "mpu_failed").is_empty()
    });
    d.kill9();
    let counted_before = records(&d, "mpu_failed").len();
    d.spawn();
    d.wait_ready();
    let up = wait_upload(
        &d,
        UPLOAD_TIMEOUT,
        "published after giving the upload up",
        |u| queued(u, "published") == 1,
    );
    assert!(up["last_error"].is_null(), "{up}");
    // The failures of the old upload were counted in a row across the SIGKILL, never from
    // zero again, up to the bound; then it was given up and a new upload sent the file.
    let counts: Vec<u64> = records(&d, "mpu_failed")
        .iter()
        .filter(|r| r["upload_id"] == old_id.as_str())
        .map(|r| r["failures"].as_u64().unwrap())
        .collect();
    assert!(
        counts.windows(2).all(|w| w[1] > w[0]) && counts.last() == Some(&RESTART_AFTER),
        "failures {counts:?} ({counted_before} before the kill; status then {before_kill})"
    );
    let restarts = records(&d, "mpu_restart");
    assert_eq!(restarts.len(), 1, "{restarts:?}");
    assert_eq!(restarts[0]["upload_id"], old_id.as_str());
    let ids: Vec<String> = records(&d, "mpu")
        .iter()
        .filter_map(|m| m["upload_id"].as_str().map(str::to_owned))
        .collect();
    assert!(
        ids.len() == 2 && ids[1] != old_id,
        "one new upload: {ids:?}"
    );
    assert!(
        d.log().contains("giving it up"),
        "the restart is logged:\n{}",
        d.log()
    );
    assert_remote_copy(&s3, "", &d.data_dir(), "failing");
}
