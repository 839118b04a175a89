//! Unit tests of the multipart restart records (`mpu_failed`, `mpu_restart`) and of an
//! operator's `dropped`: their effect
//! on the replayed queue, their place in a compacted log, and a power cut at every
//! operation of a log that holds them.

use std::path::Path;
use std::sync::Arc;

use super::queue_log::QueueLog;
use super::record::{QueuedFile, Record};
use super::state::QueueState;
use wshard_storage::fsio::sim::{PowerLoss, SimFs};
use wshard_storage::fsio::Fs;

const DIR: &str = "/d/.upload";
const SHA: &str = "a-big";

fn enqueue() -> Record {
    Record::Enqueue {
        episode: "a".into(),
        status: "complete".into(),
        files: vec![QueuedFile {
            rel: "big".into(),
            sha256: SHA.into(),
            size: 250,
        }],
    }
}

fn mpu(id: &str) -> Record {
    Record::Mpu {
        sha256: SHA.into(),
        key: "k".into(),
        upload_id: id.into(),
        part_size: 100,
    }
}

fn failed(id: &str, failures: u32) -> Record {
    Record::MpuFailed {
        sha256: SHA.into(),
        upload_id: id.into(),
        failures,
    }
}

fn restart(id: &str) -> Record {
    Record::MpuRestart {
        sha256: SHA.into(),
        upload_id: id.into(),
    }
}

fn part(idx: usize) -> Record {
    Record::Part {
        sha256: SHA.into(),
        idx,
        e_tag: format!("e{idx}"),
    }
}

/// A run in which upload `u1` fails on and off, then three times in a row and is given up;
/// `u2` completes.
fn history() -> Vec<Record> {
    vec![
        enqueue(),
        Record::Enqueue {
            episode: "b".into(),
            status: "complete".into(),
            files: Vec::new(),
        },
        Record::Dropped {
            episode: "b".into(),
        },
        mpu("u1"),
        part(0),
        failed("u1", 1),
        part(1),
        failed("u1", 1),
        failed("u1", 2),
        failed("u1", 3),
        restart("u1"),
        mpu("u2"),
        part(0),
        part(1),
        part(2),
        Record::Blob { sha256: SHA.into() },
    ]
}

#[test]
fn upload_restart_failures_count_in_a_row_and_a_restart_forgets_the_upload() {
    let mut s = QueueState::default();
    let h = history();
    // `b`, enqueued then dropped: shown `dropped`, nothing pending, counted apart.
    for r in &h[..3] {
        s.apply(r);
    }
    assert!(s.is_dropped("b"));
    assert_eq!(s.state_name("b"), Some(super::state::DROPPED));
    assert_eq!(s.counts()[super::state::DROPPED], 1);
    assert_eq!(s.pending_bytes("b"), 0);
    for r in &h[3..6] {
        s.apply(r);
    }
    assert_eq!(s.failures_of(SHA), 1);
    s.apply(&h[6]);
    assert_eq!(s.failures_of(SHA), 0, "a stored part resets the count");
    for r in &h[7..10] {
        s.apply(r);
    }
    assert_eq!(s.failures_of(SHA), 3);
    // A record about another upload id (an older one) changes nothing.
    s.apply(&failed("u0", 9));
    s.apply(&restart("u0"));
    assert_eq!(s.failures_of(SHA), 3);
    assert_eq!(s.multipart[SHA].upload_id, "u1");
    s.apply(&h[10]);
    assert!(
        s.multipart.is_empty(),
        "the next attempt starts a new upload"
    );
    assert_eq!(s.failures_of(SHA), 0);
    assert_eq!(
        s.pending_bytes("a"),
        250,
        "the given-up upload's parts count no more"
    );
    for r in &h[11..] {
        s.apply(r);
    }
    assert!(s.blobs.contains(SHA));
    assert!(s.is_dropped("b"), "a drop is for good");
    assert!(s.mpu_failures.is_empty());
}

#[test]
fn upload_restart_failure_count_survives_compaction() {
    let h = history();
    let mid = QueueState::replay(&h[..10]);
    assert_eq!(mid.failures_of(SHA), 3);
    let again = QueueState::replay(&mid.snapshot());
    assert_eq!(again, mid);
    assert!(mid.is_dropped("b"));
    assert!(mid
        .snapshot()
        .iter()
        .any(|r| matches!(r, Record::MpuFailed { failures: 3, .. })));
}

/// A power cut after every file-system operation of a log holding the restart records:
/// after the reboot the log opens and replays to the state of a prefix of what was
/// appended, at least everything whose append returned.
#[test]
fn upload_restart_records_power_cut_at_every_operation() {
    let h = history();
    let reference = SimFs::new();
    reference.mkdir_durable(Path::new("/d")).unwrap();
    let fs: Arc<dyn Fs> = Arc::new(reference.clone());
    let (mut log, _, _) = QueueLog::open(fs, Path::new(DIR)).unwrap();
    for r in &h {
        log.append(r).unwrap();
    }
    drop(log);
    let n = reference.ops();
    let prefixes: Vec<QueueState> = (0..=h.len()).map(|i| QueueState::replay(&h[..i])).collect();
    for k in 0..n {
        let sim = SimFs::new();
        sim.mkdir_durable(Path::new("/d")).unwrap();
        sim.crash_after(k);
        let fs: Arc<dyn Fs> = Arc::new(sim.clone());
        let mut returned = 0;
        if let Ok((mut log, _, _)) = QueueLog::open(fs, Path::new(DIR)) {
            for r in &h {
                if log.append(r).is_err() {
                    break;
                }
                returned += 1;
            }
        }
        assert!(sim.is_crashed(), "k={k}: no crash");
        let mode = if k % 2 == 0 {
            PowerLoss::DropUnsynced
        } else {
            PowerLoss::KeepTailGarbage { seed: k }
        };
        let image: Arc<dyn Fs> = Arc::new(sim.power_cut_image(mode));
        let (_, got, _) = QueueLog::open(image, Path::new(DIR))
            .unwrap_or_else(|e| panic!("k={k}: the log does not reopen: {e}"));
        // Some prefixes replay alike (a restart forgets the upload): any at or past the
        // appends that returned will do.
        assert!(
            prefixes[returned..].contains(&got),
            "k={k}: {returned} appends returned; the replayed state is no later prefix: {got:?}"
        );
    }
}
