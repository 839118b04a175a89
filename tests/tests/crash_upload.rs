//! `crash_upload_*`: the upload queue survives crashes.
//!
//! - A power cut at every file-system operation of the queue's log during an upload run
//!   (the daemon's uploader on the simulated filesystem, a real s3s-fs): after the reboot
//!   the queue replays consistently, the upload completes, the remote copy verifies, and
//!   nothing the queue had recorded as stored (a verified blob, a part with its ETag) is
//!   sent again.
//! - SIGKILL of wshardd mid-multipart: the restarted daemon resumes the same upload and
//!   sends only the parts without a journaled ETag (at most the one in flight is re-sent).
//! - s3s-fs killed and restarted mid-multipart: the upload resumes.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use wshard_e2e::s3::{S3Server, BUCKET};
use wshard_e2e::upload::{
    assert_remote_copy, record_big, remote_episode_keys, set_credentials, DATASET, PART, ROBOT,
};
use wshard_e2e::{Daemon, DaemonOptions};
use wshard_publish::episodes::select;
use wshard_publish::{StoreConfig, TransferOptions};
use wshard_recorder::upload::{CycleError, EvictPolicy, UploadShared, Uploader, UploaderSettings};
use wshard_storage::fsio::sim::{PowerLoss, SimFs};
use wshard_storage::fsio::Fs;

/// The queue's directory on the simulated filesystem.
const QUEUE_DIR: &str = "/q/.upload";

/// A finished episode `id` of `mib` MiB recorded by a real daemon (stopped again).
fn recorded(id: &str, mib: u64) -> Daemon {
    let mut d = Daemon::start(DaemonOptions::default());
    record_big(&d, id, mib);
    d.terminate();
    d.wait_exit(Duration::from_secs(10));
    d
}

fn settings(data_dir: &Path, endpoint: &str, prefix: &str) -> UploaderSettings {
    UploaderSettings {
        data_dir: data_dir.to_path_buf(),
        queue_dir: PathBuf::from(QUEUE_DIR),
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
        scan_interval: Duration::from_millis(100),
        retry_min: Duration::from_millis(100),
        retry_max: Duration::from_millis(400),
        evict: EvictPolicy::default(),
        idle_priority: false,
        multipart_restart_after: 5,
    }
}

/// One uploader run on the simulated filesystem.
struct Run {
    result: Result<(), CycleError>,
    shared: Arc<UploadShared>,
    up: Option<Uploader>,
    /// Bytes the replayed queue held as not yet stored when it opened.
    pending_at_open: u64,
}

/// Open the uploader on `fs` and run one pass.
fn run(fs: &SimFs, s: &UploaderSettings) -> Run {
    let shared = Arc::new(UploadShared::new(true));
    let stop = Arc::new(AtomicBool::new(false));
    let fs: Arc<dyn Fs> = Arc::new(fs.clone());
    let mut up = match Uploader::open(fs, s.clone(), shared.clone(), stop) {
        Ok(u) => u,
        Err(e) => {
            return Run {
                result: Err(CycleError::Queue(e)),
                shared,
                up: None,
                pending_at_open: 0,
            }
        }
    };
    let pending_at_open = up.state().total_pending_bytes();
    let queued_at_open = up.state().episodes.contains_key("cut");
    let result = up.cycle();
    Run {
        result,
        shared,
        up: Some(up),
        // An episode not in the replayed queue is all pending.
        pending_at_open: if queued_at_open {
            pending_at_open
        } else {
            u64::MAX
        },
    }
}

#[test]
fn crash_upload_power_cut_at_every_queue_operation() {
    set_credentials();
    let s3 = S3Server::start();
    let d = recorded("cut", 6);
    let data_dir = d.data_dir();
    let files = &select(&data_dir, &["cut".to_owned()]).unwrap().episodes[0].files;
    let total: u64 = files.iter().map(|f| f.size).sum();
    // The reference run: how many operations the queue makes.
    let reference = SimFs::new();
    reference.mkdir_durable(Path::new("/q")).unwrap();
    run(&reference, &settings(&data_dir, s3.endpoint(), "ref"))
        .result
        .unwrap();
    let n = reference.ops();
    assert!(n > 20, "only {n} operations");
    eprintln!("{n} operations of the queue in one upload run");
    for k in 0..n {
        let prefix = format!("cut{k}");
        let s = settings(&data_dir, s3.endpoint(), &prefix);
        let sim = SimFs::new();
        sim.mkdir_durable(Path::new("/q")).unwrap();
        sim.crash_after(k);
        let first = run(&sim, &s);
        assert!(
            first.result.is_err() && sim.is_crashed(),
            "k={k}: the run did not crash"
        );
        let mode = if k % 2 == 0 {
            PowerLoss::DropUnsynced
        } else {
            PowerLoss::KeepTailGarbage { seed: k }
        };
        let rebooted = sim.power_cut_image(mode);
        let second = run(&rebooted, &s);
        let Run {
            result,
            shared,
            up,
            pending_at_open,
        } = second;
        let up = up.unwrap_or_else(|| panic!("k={k}: the queue does not reopen: {result:?}"));
        result.unwrap_or_else(|e| {
            panic!("k={k}: the upload does not complete after the reboot: {e}")
        });
        // What the durable queue held as stored (verified blobs, parts with an ETag) was
        // not sent again: the second run sent at most what it found pending.
        let sent = shared.snapshot().counters.sent_bytes;
        assert!(
            sent <= pending_at_open.min(total),
            "k={k}: sent {sent}, pending at open {pending_at_open}, episode {total}"
        );
        assert_eq!(
            up.state().state_of("cut").map(|s| s.name()),
            Some("published"),
            "k={k}"
        );
        assert_remote_copy(&s3, &prefix, &data_dir, "cut");
        let keys = remote_episode_keys(&s3, &prefix);
        assert_eq!(keys, vec![format!("{ROBOT}/cut")], "k={k}");
    }
}
