//! `crash_evict_*`: eviction of published episodes (retention) cut by a power loss at every
//! operation. Whatever the cut, after the reboot: an episode is whole in the data directory,
//! or whole under `.upload/evicting/`, or gone with the queue saying `evicted`; reopening
//! the queue finishes the eviction; an episode not published is never touched.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use wshard_publish::{StoreConfig, TransferOptions};
use wshard_recorder::upload::record::{QueuedFile, Record};
use wshard_recorder::upload::state::EpisodeUpload;
use wshard_recorder::upload::{EvictPolicy, QueueLog, UploadShared, Uploader, UploaderSettings};
use wshard_storage::fsio::sim::{PowerLoss, SimFs};
use wshard_storage::fsio::Fs;

const DATA: &str = "/d";
const QUEUE: &str = "/d/.upload";
/// Published: evicted by `delete_after_publish`.
const PUBLISHED: [&str; 2] = ["ev-1", "ev-2"];
/// Uploaded, not published: never evicted.
const UNPUBLISHED: &str = "ev-unpub";

/// The files of episode `id`: relative path and content.
fn files(id: &str) -> Vec<(String, Vec<u8>)> {
    vec![
        (
            format!("{id}_manifest.wshard"),
            format!("manifest of {id}").into_bytes(),
        ),
        (format!("{id}_chunk_0000.wshard"), vec![7_u8; 3000]),
        (
            format!("streams/s/{id}_s_manifest.wshard"),
            format!("stream of {id}").into_bytes(),
        ),
    ]
}

fn write_durable(fs: &SimFs, path: &Path, bytes: &[u8]) {
    let mut f = fs.create(path).unwrap();
    f.write_all(bytes).unwrap();
    f.sync_all().unwrap();
    fs.sync_dir(path.parent().unwrap()).unwrap();
}

/// Three episodes on the simulated disk and a queue saying two are published.
fn setup() -> SimFs {
    let fs = SimFs::new();
    fs.mkdir_durable(Path::new(DATA)).unwrap();
    let mut all: Vec<&str> = PUBLISHED.to_vec();
    all.push(UNPUBLISHED);
    for id in &all {
        fs.mkdir_durable(&Path::new(DATA).join(id).join("streams/s"))
            .unwrap();
        for (rel, bytes) in files(id) {
            write_durable(&fs, &Path::new(DATA).join(id).join(rel), &bytes);
        }
    }
    let dyn_fs: Arc<dyn Fs> = Arc::new(fs.clone());
    let (mut log, _, _) = QueueLog::open(dyn_fs, Path::new(QUEUE)).unwrap();
    for id in &all {
        let queued = files(id)
            .into_iter()
            .map(|(rel, b)| QueuedFile {
                rel,
                sha256: format!("{:064}", b.len()),
                size: b.len() as u64,
            })
            .collect();
        log.append(&Record::Enqueue {
            episode: (*id).to_owned(),
            status: "complete".into(),
            files: queued,
        })
        .unwrap();
        log.append(&Record::Uploaded {
            episode: (*id).to_owned(),
        })
        .unwrap();
    }
    for id in PUBLISHED {
        log.append(&Record::Published {
            episode: id.to_owned(),
            dataset: "lab/x".into(),
            version: "v".repeat(64),
        })
        .unwrap();
    }
    fs
}

fn settings() -> UploaderSettings {
    UploaderSettings {
        data_dir: PathBuf::from(DATA),
        queue_dir: PathBuf::from(QUEUE),
        // Never reached: nothing is left to send but the unpublished episode's append,
        // which fails at once (nothing listens on the discard port).
        store: StoreConfig {
            provider: wshard_publish::Provider::S3,
            endpoint: "http://127.0.0.1:9".into(),
            bucket: "b".into(),
            prefix: String::new(),
            region: "us-east-1".into(),
            allow_http: true,
        },
        transfer: TransferOptions {
            max_retries: 0,
            connect_timeout: Duration::from_millis(200),
            retry_timeout: Duration::from_millis(200),
            ..TransferOptions::default()
        },
        dataset: "lab/x".into(),
        robot: "r".into(),
        bandwidth_limit_bytes_per_s: 0,
        scan_interval: Duration::from_millis(10),
        retry_min: Duration::from_millis(10),
        retry_max: Duration::from_millis(10),
        evict: EvictPolicy {
            delete_after_publish: true,
            quota_bytes: 0,
            low_watermark_free_bytes: 0,
        },
        idle_priority: false,
        multipart_restart_after: 5,
    }
}

/// Open the uploader on `fs` and run one pass (its store errors do not matter here).
fn run(fs: &SimFs) -> Option<Uploader> {
    std::env::set_var("AWS_ACCESS_KEY_ID", "k");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "s");
    let dyn_fs: Arc<dyn Fs> = Arc::new(fs.clone());
    let shared = Arc::new(UploadShared::new(true));
    let mut up =
        Uploader::open(dyn_fs, settings(), shared, Arc::new(AtomicBool::new(false))).ok()?;
    let _ = up.cycle();
    Some(up)
}

/// `dir` holds exactly the files of `id`, whole.
fn whole(fs: &SimFs, dir: &Path, id: &str) -> bool {
    let got = fs.files(dir).unwrap_or_default();
    let want: Vec<(PathBuf, Vec<u8>)> = files(id)
        .into_iter()
        .map(|(rel, b)| (dir.join(rel), b))
        .collect();
    got.len() == want.len() && want.iter().all(|(p, b)| got.get(p) == Some(b))
}

fn check_image(fs: &SimFs, k: u64) {
    for id in PUBLISHED {
        let here = Path::new(DATA).join(id);
        let moving = Path::new(QUEUE).join("evicting").join(id);
        if fs.exists(&here) {
            assert!(
                whole(fs, &here, id),
                "k={k}: {id} half-deleted in the data directory"
            );
            assert!(!fs.exists(&moving), "k={k}: {id} in both places");
        }
    }
    assert!(
        whole(fs, &Path::new(DATA).join(UNPUBLISHED), UNPUBLISHED),
        "k={k}: the unpublished episode was touched"
    );
}

#[test]
fn crash_evict_power_cut_at_every_operation_of_an_eviction() {
    let probe = setup();
    let before = probe.ops();
    let up = run(&probe).unwrap();
    let n = probe.ops() - before;
    for id in PUBLISHED {
        assert_eq!(up.state().state_of(id), Some(EpisodeUpload::Evicted));
        assert!(!probe.exists(&Path::new(DATA).join(id)));
    }
    assert!(n >= 10, "only {n} operations");
    for k in 0..n {
        let fs = setup();
        fs.crash_after(k);
        let _ = run(&fs);
        assert!(fs.is_crashed(), "k={k}: no crash");
        for mode in [
            PowerLoss::DropUnsynced,
            PowerLoss::KeepTailGarbage { seed: k },
        ] {
            let image = fs.power_cut_image(mode);
            check_image(&image, k);
            let up = run(&image).unwrap_or_else(|| panic!("k={k}: the queue does not reopen"));
            check_image(&image, k);
            for id in PUBLISHED {
                assert_eq!(
                    up.state().state_of(id),
                    Some(EpisodeUpload::Evicted),
                    "k={k} {mode:?}: {id}"
                );
                assert!(!image.exists(&Path::new(DATA).join(id)), "k={k}: {id} left");
            }
            let left = image
                .files(&Path::new(QUEUE).join("evicting"))
                .unwrap_or_default();
            assert!(left.is_empty(), "k={k}: left under evicting: {left:?}");
            assert_eq!(
                up.state().state_of(UNPUBLISHED),
                Some(EpisodeUpload::Uploaded),
                "k={k}"
            );
        }
    }
}
