//! `fault_upload_*`: the upload queue's log cannot be written. The uploader stops with a
//! typed error in its status (`error`, kind `queue_io`), recording goes on, and nothing is
//! lost: after a restart the queue replays what was durable and the upload completes.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wshard_e2e::s3::{S3Server, BUCKET};
use wshard_e2e::upload::{
    assert_remote_copy, publish_toml, record_big, remote_episode_keys, set_credentials, status,
    wait_upload, DATASET, PART, ROBOT, UPLOAD_TIMEOUT,
};
use wshard_e2e::{Daemon, DaemonOptions};
use wshard_publish::{StoreConfig, TransferOptions};
use wshard_recorder::upload::{
    spawn, EvictPolicy, UploadShared, Uploader, UploaderSettings, UploaderState,
};
use wshard_storage::fsio::sim::{FaultKind, OpKind, PowerLoss, SimFs};
use wshard_storage::fsio::Fs;

fn settings(data_dir: &Path, endpoint: &str, prefix: &str) -> UploaderSettings {
    UploaderSettings {
        data_dir: data_dir.to_path_buf(),
        queue_dir: PathBuf::from("/q/.upload"),
        store: StoreConfig {
            provider: wshard_publish::Provider::S3,
            endpoint: endpoint.to_owned(),
            bucket: BUCKET.to_owned(),
            prefix: prefix.to_owned(),
            region: "us-east-1".into(),
            allow_http: true,
        },
        transfer: TransferOptions {
            multipart_threshold: PART,
            part_size: usize::try_from(PART).unwrap(),
            max_retries: 1,
            connect_timeout: Duration::from_secs(2),
            retry_timeout: Duration::from_secs(5),
        },
        dataset: DATASET.to_owned(),
        robot: ROBOT.to_owned(),
        bandwidth_limit_bytes_per_s: 0,
        scan_interval: Duration::from_millis(50),
        retry_min: Duration::from_millis(50),
        retry_max: Duration::from_millis(200),
        evict: EvictPolicy::default(),
        idle_priority: false,
        multipart_restart_after: 5,
    }
}

/// Run the upload thread on `fs` until its state is `error`; returns the view.
fn until_error(fs: &SimFs, s: UploaderSettings) -> wshard_recorder::upload::view::UploadView {
    let shared = Arc::new(UploadShared::new(true));
    let stop = Arc::new(AtomicBool::new(false));
    let dyn_fs: Arc<dyn Fs> = Arc::new(fs.clone());
    let h = spawn(dyn_fs, s, shared.clone(), stop.clone()).unwrap();
    let deadline = Instant::now() + UPLOAD_TIMEOUT;
    let view = loop {
        let v = shared.snapshot();
        if v.state == UploaderState::Error {
            break v;
        }
        assert!(Instant::now() < deadline, "no error: {v:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    // The thread stops by itself (shutdown was never asked).
    while !h.is_finished() {
        assert!(
            Instant::now() < deadline,
            "the uploader goes on after the queue failed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!stop.load(Ordering::Acquire));
    h.finish(Duration::from_secs(1));
    view
}

fn fault_then_restart(fault: FaultKind, op: OpKind, nth: u64, prefix: &str) {
    set_credentials();
    let s3 = S3Server::start();
    let mut d = Daemon::start(DaemonOptions::default());
    record_big(&d, "faulted", 6);
    d.terminate();
    d.wait_exit(Duration::from_secs(10));
    let s = settings(&d.data_dir(), s3.endpoint(), prefix);
    let sim = SimFs::new();
    sim.mkdir_durable(Path::new("/q")).unwrap();
    sim.inject_on(op, "queue.log", nth, fault);
    let view = until_error(&sim, s.clone());
    assert_eq!(sim.faults_fired(), 1);
    let err = view.last_error.unwrap();
    assert_eq!(err.kind, "queue_io", "{err:?}");
    assert!(err.message.contains("queue.log"), "{err:?}");
    // A restart (the durable image): the queue replays and the upload completes.
    let rebooted = sim.power_cut_image(PowerLoss::DropUnsynced);
    let shared = Arc::new(UploadShared::new(true));
    let dyn_fs: Arc<dyn Fs> = Arc::new(rebooted);
    let mut up = Uploader::open(dyn_fs, s, shared, Arc::new(AtomicBool::new(false))).unwrap();
    up.cycle().unwrap();
    assert_eq!(
        up.state().state_of("faulted").map(|s| s.name()),
        Some("published")
    );
    assert_remote_copy(&s3, prefix, &d.data_dir(), "faulted");
    assert_eq!(
        remote_episode_keys(&s3, prefix),
        vec![format!("{ROBOT}/faulted")]
    );
}

#[test]
fn fault_upload_queue_write_error_stops_the_uploader_with_a_typed_error() {
    // The 3rd write of the log: in the records after the startup snapshot.
    fault_then_restart(FaultKind::Eio, OpKind::Write, 3, "w");
}

#[test]
fn fault_upload_queue_fsync_error_stops_the_uploader_with_a_typed_error() {
    fault_then_restart(FaultKind::FsyncFails, OpKind::Sync, 3, "s");
}

#[test]
fn fault_upload_unwritable_queue_leaves_recording_going() {
    set_credentials();
    let s3 = S3Server::start();
    let d = Daemon::new(DaemonOptions {
        extra_toml: publish_toml(s3.endpoint(), ""),
        ..DaemonOptions::default()
    });
    // `.upload` is a file: the queue cannot be created.
    std::fs::create_dir_all(d.data_dir()).unwrap();
    std::fs::write(d.data_dir().join(".upload"), b"not a directory").unwrap();
    let mut d = d;
    d.spawn();
    d.wait_ready();
    let up = wait_upload(&d, UPLOAD_TIMEOUT, "the uploader in error", |u| {
        u["state"] == "error"
    });
    assert_eq!(up["last_error"]["kind"], "queue_io", "{up}");
    // Recording goes on.
    d.record_ok("still-recording", 100);
    let s = status(&d);
    assert_eq!(s["upload"]["state"], "error", "{s}");
    assert!(remote_episode_keys(&s3, "").is_empty());
}
