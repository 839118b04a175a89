//! A data directory written by wshardd 0.1 (`golden/datadir-v0.1`: protocol 1 only,
//! single-stream episodes, one of them cut by SIGKILL) recovers and reads unchanged with
//! the current daemon and reader.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::path::Path;

use wshard::episode_dir::{names::SINGLE_STREAM_NAME, EpisodeDir, Layout};
use wshard::manifest::Manifest;
use wshard_e2e::fixtures::{copy_tree, datadir_v01};
use wshard_e2e::{check, Daemon, DaemonOptions};

const T0_NS: i64 = 1_700_000_000_000_000_000;
const STEP_NS: i64 = 20_000_000;

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// Every value of the `main` stream is the generator's formula (golden/datadir-v0.1/README.md).
fn check_values(dir: &Path, steps: u64) {
    let ep = EpisodeDir::open(dir).unwrap();
    assert_eq!(ep.layout(), Layout::SingleStream, "{}", dir.display());
    let names: Vec<&str> = ep.streams().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, [SINGLE_STREAM_NAME]);
    let s = ep.read_stream(SINGLE_STREAM_NAME).unwrap();
    assert_eq!(s.steps(), steps, "{}", dir.display());
    let want_t: Vec<i64> = (0..steps as i64).map(|i| T0_NS + i * STEP_NS).collect();
    assert_eq!(s.timestamps_ns(), &want_t[..]);
    let q = f32s(&s.channel("q").unwrap().to_contiguous());
    let cmd = f32s(&s.channel("cmd").unwrap().to_contiguous());
    let ok = s.channel("ok").unwrap().to_contiguous().into_owned();
    for i in 0..steps as usize {
        let x = i as f32;
        assert_eq!(&q[3 * i..3 * i + 3], &[x, x + 0.5, -x], "q of step {i}");
        assert_eq!(
            &cmd[2 * i..2 * i + 2],
            &[x * 0.25, -x * 0.25],
            "cmd of step {i}"
        );
        assert_eq!(ok[i], u8::from(i % 3 == 0), "ok of step {i}");
    }
}

fn status(dir: &Path, id: &str) -> Option<String> {
    Manifest::read_file(dir.join(format!("{id}_manifest.wshard")))
        .unwrap()
        .status
}

#[test]
fn multirate_legacy_datadir_recovers_and_reads_unchanged() {
    let d = Daemon::new(DaemonOptions::default());
    let data = d.data_dir();
    if data.exists() {
        std::fs::remove_dir_all(&data).unwrap();
    }
    copy_tree(&datadir_v01(), &data);
    let before_complete = files(&data.join("legacy-complete"));
    let before_aborted = files(&data.join("legacy-aborted"));
    let mut d = d;
    d.spawn();
    d.wait_ready();

    // Finalized episodes: not a byte changed, no file added.
    assert_eq!(files(&data.join("legacy-complete")), before_complete);
    assert_eq!(files(&data.join("legacy-aborted")), before_aborted);
    assert_eq!(
        status(&data.join("legacy-complete"), "legacy-complete").as_deref(),
        Some("complete")
    );
    assert_eq!(
        status(&data.join("legacy-aborted"), "legacy-aborted").as_deref(),
        Some("aborted")
    );
    check_values(&data.join("legacy-complete"), 25);
    check_values(&data.join("legacy-aborted"), 5);

    // The episode cut by SIGKILL: every DURABLE step (13) recovered from its journals.
    let rec = data.join("legacy-recording");
    assert_eq!(
        status(&rec, "legacy-recording").as_deref(),
        Some("recovered")
    );
    check_values(&rec, 13);
    let left: Vec<String> = files(&rec).into_iter().map(|(n, _)| n).collect();
    assert!(
        left.iter()
            .all(|n| !n.ends_with(".wal") && !n.ends_with(".partial")),
        "journals and partial chunks left after recovery: {left:?}"
    );
    // The layout stayed single-stream: no index, no streams folder.
    for dir in ["legacy-complete", "legacy-aborted", "legacy-recording"] {
        assert!(
            !data.join(dir).join("streams").exists(),
            "{dir}: streams/ created"
        );
        assert!(
            !data.join(dir).join(format!("{dir}_index.json")).exists(),
            "{dir}: an index created"
        );
    }
    check::assert_verify_ok(&data);
}
