//! Unit tests of the queue log and its replayed state on the simulated filesystem.

use std::path::Path;
use std::sync::Arc;

use wshard_publish::blob::{part_count, part_len};

use super::queue_log::{QueueLog, QueueLogError, QUEUE_LOG, QUEUE_LOG_TMP};
use super::record::{QueuedFile, Record};
use super::state::{EpisodeUpload, QueueState};
use wshard_storage::fsio::sim::{FaultKind, OpKind, PowerLoss, SimFs};
use wshard_storage::fsio::Fs;

const DIR: &str = "/d/.upload";

fn sim() -> (SimFs, Arc<dyn Fs>) {
    let fs = SimFs::new();
    fs.mkdir_durable(Path::new("/d")).unwrap();
    let dyn_fs: Arc<dyn Fs> = Arc::new(fs.clone());
    (fs, dyn_fs)
}

fn enqueue(id: &str, size: u64) -> Record {
    Record::Enqueue {
        episode: id.into(),
        status: "complete".into(),
        files: vec![
            QueuedFile {
                rel: "big".into(),
                sha256: format!("{id}-big"),
                size,
            },
            QueuedFile {
                rel: "small".into(),
                sha256: format!("{id}-small"),
                size: 10,
            },
        ],
    }
}

fn mpu(id: &str) -> Record {
    Record::Mpu {
        sha256: format!("{id}-big"),
        key: "k".into(),
        upload_id: "u1".into(),
        part_size: 100,
    }
}

fn part(id: &str, idx: usize) -> Record {
    Record::Part {
        sha256: format!("{id}-big"),
        idx,
        e_tag: format!("e{idx}"),
    }
}

#[test]
fn upload_state_pending_bytes_count_stored_parts_as_sent() {
    let mut s = QueueState::default();
    s.apply(&enqueue("a", 250));
    assert_eq!(s.pending_bytes("a"), 260);
    assert_eq!(s.state_of("a"), Some(EpisodeUpload::Queued));
    s.apply(&mpu("a"));
    s.apply(&part("a", 0));
    s.apply(&part("a", 2));
    assert_eq!(s.pending_bytes("a"), 260 - 100 - 50);
    assert_eq!(s.state_of("a"), Some(EpisodeUpload::Uploading));
    // A new upload of the blob (the store lost the first): its parts start over.
    s.apply(&mpu("a"));
    assert_eq!(s.pending_bytes("a"), 260);
    s.apply(&Record::Blob {
        sha256: "a-big".into(),
    });
    assert!(s.multipart.is_empty());
    assert_eq!(s.pending_bytes("a"), 10);
    s.apply(&Record::Uploaded {
        episode: "a".into(),
    });
    assert_eq!(s.pending_bytes("a"), 0);
    assert_eq!(s.state_of("a"), Some(EpisodeUpload::Uploaded));
    assert_eq!((part_count(250, 100), part_len(250, 100, 2)), (3, 50));
    assert_eq!(part_count(0, 100), 1);
}

#[test]
fn upload_queue_log_replays_and_its_snapshot_rebuilds_the_same_state() {
    let (_, fs) = sim();
    let records = [
        enqueue("a", 250),
        enqueue("b", 30),
        mpu("a"),
        part("a", 0),
        Record::Blob {
            sha256: "b-big".into(),
        },
        Record::Blob {
            sha256: "b-small".into(),
        },
        Record::Uploaded {
            episode: "b".into(),
        },
        Record::Published {
            episode: "b".into(),
            dataset: "lab/x".into(),
            version: "v1".into(),
        },
        Record::Evicting {
            episode: "b".into(),
        },
    ];
    let (mut log, empty, _) = QueueLog::open(fs.clone(), Path::new(DIR)).unwrap();
    assert_eq!(empty, QueueState::default());
    for r in &records {
        log.append(r).unwrap();
    }
    let want = QueueState::replay(&records);
    drop(log);
    let (_, got, report) = QueueLog::open(fs.clone(), Path::new(DIR)).unwrap();
    assert_eq!(report.records, records.len());
    assert_eq!(got.state_of("b"), Some(EpisodeUpload::Evicting));
    assert_eq!(got.episodes["b"].version.as_deref(), Some("v1"));
    assert_eq!(got.blobs, want.blobs);
    assert_eq!(got.multipart, want.multipart);
    assert_eq!(
        QueueState::replay(&got.snapshot()).snapshot(),
        want.snapshot()
    );
    assert!(!fs.exists(&Path::new(DIR).join(QUEUE_LOG_TMP)));
}

#[test]
fn upload_queue_log_torn_tail_is_dropped_and_the_rest_kept() {
    let (sfs, fs) = sim();
    let (mut log, _, _) = QueueLog::open(fs, Path::new(DIR)).unwrap();
    log.append(&enqueue("a", 250)).unwrap();
    log.append(&mpu("a")).unwrap();
    // The last record's write reaches the page cache, its fsync never happens.
    sfs.crash_after(1);
    assert!(log.append(&part("a", 0)).is_err());
    let image = sfs.power_cut_image(PowerLoss::KeepTailGarbage { seed: 3 });
    let dyn_image: Arc<dyn Fs> = Arc::new(image.clone());
    let (mut log, s, _) = QueueLog::open(dyn_image, Path::new(DIR)).unwrap();
    assert_eq!(s.multipart["a-big"].upload_id, "u1");
    assert!(s.multipart["a-big"].parts.is_empty());
    // Compacted at open: appending goes on after the kept records.
    log.append(&part("a", 0)).unwrap();
    drop(log);
    let dyn_image: Arc<dyn Fs> = Arc::new(image);
    let (_, s, report) = QueueLog::open(dyn_image, Path::new(DIR)).unwrap();
    assert_eq!(report.discarded_bytes, 0);
    assert_eq!(s.multipart["a-big"].parts.len(), 1);
}

#[test]
fn upload_queue_log_is_dead_after_a_failed_fsync() {
    let (sfs, fs) = sim();
    let (mut log, _, _) = QueueLog::open(fs, Path::new(DIR)).unwrap();
    sfs.inject_on(OpKind::Sync, QUEUE_LOG, 1, FaultKind::FsyncFails);
    let e = log.append(&enqueue("a", 1)).unwrap_err();
    assert!(matches!(e, QueueLogError::Io { step: "fsync", .. }), "{e}");
    assert_eq!(e.kind(), "queue_io");
    let again = log.append(&enqueue("b", 1)).unwrap_err();
    assert!(matches!(again, QueueLogError::Failed { .. }), "{again}");
    // Never a second fsync of the same file.
    assert_eq!(
        sfs.attempts(OpKind::Sync, &Path::new(DIR).join(QUEUE_LOG)),
        1
    );
}

#[test]
fn upload_queue_log_record_that_is_not_json_is_a_typed_error() {
    let (sfs, fs) = sim();
    let (log, _, _) = QueueLog::open(fs.clone(), Path::new(DIR)).unwrap();
    drop(log);
    let mut f = sfs.open_append(&Path::new(DIR).join(QUEUE_LOG)).unwrap();
    crate::journal::format::JournalWriter::new(&mut f, 0)
        .append(&[b"not json"])
        .unwrap();
    f.sync_all().unwrap();
    drop(f);
    let e = QueueLog::open(fs, Path::new(DIR)).unwrap_err();
    assert!(
        matches!(e, QueueLogError::BadRecord { offset: 0, .. }),
        "{e}"
    );
}
