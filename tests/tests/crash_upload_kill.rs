//! `crash_upload_*` with real processes: SIGKILL of wshardd mid-multipart, and s3s-fs
//! killed and restarted mid-multipart. The upload resumes with the journaled upload id;
//! parts whose ETag was journaled are never sent again (at most the part in flight is),
//! and the remote copy verifies.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use serde_json::Value;
use wshard_e2e::s3::S3Server;
use wshard_e2e::upload::{
    assert_remote_copy, publish_toml, queued, record_big, set_credentials, wait_upload, PART,
    UPLOAD_TIMEOUT,
};
use wshard_e2e::{Daemon, DaemonOptions};
use wshard_publish::episodes::select;

/// 16 MiB: parts of 5, 5, 5 and 1 MiB (plus the chunk file's header and index).
const MIB: u64 = 16;
/// Slow enough to stop it halfway.
const LIMIT: u64 = 5 << 20;

fn daemon(endpoint: &str) -> Daemon {
    set_credentials();
    Daemon::start(DaemonOptions {
        extra_toml: publish_toml(endpoint, &format!("bandwidth_limit_bytes_per_s = {LIMIT}")),
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

/// Records of `kind` in the queue log (each JSON body holds `"t":"<kind>"` once; the
/// small records never straddle a block boundary in these runs).
fn journaled(d: &Daemon, kind: &str) -> usize {
    let log = std::fs::read(d.data_dir().join(".upload/queue.log")).unwrap();
    let needle = format!("\"t\":\"{kind}\"");
    log.windows(needle.len())
        .filter(|w| *w == needle.as_bytes())
        .count()
}

#[test]
fn crash_upload_sigkill_mid_multipart_resumes_without_resending_stored_parts() {
    let s3 = S3Server::start();
    let mut d = daemon(s3.endpoint());
    record_big(&d, "killed", MIB);
    let at_kill = wait_parts(&d, 2);
    let total_parts = at_kill["current"]["parts_total"].as_u64().unwrap();
    d.kill9();
    let parts_journaled = journaled(&d, "part") as u64;
    assert!(parts_journaled >= 2, "{parts_journaled} parts journaled");
    assert_eq!(journaled(&d, "mpu"), 1, "one multipart upload journaled");
    let files = select(&d.data_dir(), &["killed".to_owned()])
        .unwrap()
        .episodes[0]
        .files
        .clone();
    let big = files.iter().find(|f| f.size >= PART).unwrap();
    let small: u64 = files.iter().filter(|f| f.size < PART).map(|f| f.size).sum();
    d.spawn();
    d.wait_ready();
    let up = wait_upload(&d, UPLOAD_TIMEOUT, "published after the restart", |u| {
        queued(u, "published") == 1
    });
    // The restarted daemon sent the parts without an ETag only, and still one upload.
    let parts_after = up["parts_sent_total"].as_u64().unwrap();
    assert_eq!(parts_after, total_parts - parts_journaled, "{up}");
    let remaining = big.size - parts_journaled * PART;
    let sent_after = up["sent_bytes_total"].as_u64().unwrap();
    assert!(
        sent_after <= remaining + small,
        "sent {sent_after} > {remaining} + {small}: {up}"
    );
    assert_eq!(
        journaled(&d, "mpu"),
        1,
        "the upload was resumed, not restarted"
    );
    assert_remote_copy(&s3, "", &d.data_dir(), "killed");
}

#[test]
fn crash_upload_store_killed_and_restarted_mid_multipart_resumes() {
    let mut s3 = S3Server::start();
    let d = daemon(s3.endpoint());
    record_big(&d, "store-restart", MIB);
    let before = wait_parts(&d, 1);
    let total_parts = before["current"]["parts_total"].as_u64().unwrap();
    s3.restart_same_port();
    let up = wait_upload(
        &d,
        UPLOAD_TIMEOUT,
        "published after the store restart",
        |u| queued(u, "published") == 1,
    );
    // At most the part in flight when the store went down was sent twice.
    let parts = up["parts_sent_total"].as_u64().unwrap();
    assert!(
        parts <= total_parts + 1,
        "{parts} parts sent for {total_parts}: {up}"
    );
    assert_remote_copy(&s3, "", &d.data_dir(), "store-restart");
}
