//! Every error of `wshard_export::mcap`, typed and naming what is wrong; an episode that
//! fails leaves no file (not even its `.partial`) and does not stop the others.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod mcap_support;

use std::fs;
use std::path::{Path, PathBuf};

use mcap_support::{small_episode, write_episode, Stream};
use wshard::episode::{Channel, DType, Lane, Timebase};
use wshard::episode_dir::events::{EventData, EventRecord};
use wshard::episode_dir::index::EpisodeStatus;
use wshard::IoError;
use wshard_export::mcap::{
    export_episode, export_mcap, ImageMode, InputsError, McapError, McapOptions, PARTIAL_SUFFIX,
};
use wshard_export::output_marker::MARKER_FILE;

fn export(
    inputs: &[PathBuf],
    out: &Path,
    opts: &McapOptions,
) -> Result<wshard_export::mcap::McapExport, McapError> {
    export_mcap(inputs, out, opts, &|_, _| {})
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn export_mcap_bad_inputs_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let opts = McapOptions::default();

    let file = tmp.path().join("file.txt");
    fs::write(&file, "x").unwrap();
    let e = export(std::slice::from_ref(&file), &out, &opts).unwrap_err();
    assert!(
        matches!(&e, McapError::Inputs(InputsError::NotAnInput { path }) if *path == file),
        "{e}"
    );
    assert!(!e.is_bad_input());

    let missing = tmp.path().join("missing");
    let e = export(&[missing], &out, &opts).unwrap_err();
    assert!(
        matches!(
            &e,
            McapError::Inputs(InputsError::Io(IoError { op: "open", .. }))
        ),
        "{e}"
    );
    assert!(e.to_string().contains("missing"), "{e}");

    let empty = tmp.path().join("empty");
    fs::create_dir_all(&empty).unwrap();
    small_episode(&empty, "still-open", EpisodeStatus::Recording, 0);
    let e = export(&[empty], &out, &opts).unwrap_err();
    assert!(
        matches!(e, McapError::Inputs(InputsError::NoEpisodes { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("empty"), "{e}");

    let a = small_episode(&tmp.path().join("a"), "EP", EpisodeStatus::Complete, 0);
    let b = small_episode(&tmp.path().join("b"), "EP", EpisodeStatus::Complete, 0);
    let e = export(&[a.clone(), b], &out, &opts).unwrap_err();
    assert!(
        matches!(&e, McapError::Inputs(InputsError::DuplicateEpisode { episode, .. }) if episode == "EP"),
        "{e}"
    );
    // The same directory twice (also through its data directory) is one episode.
    let r = export(&[a.clone(), a.clone(), tmp.path().join("a")], &out, &opts).unwrap();
    assert_eq!(r.episodes.len(), 1);
    assert!(!out.exists() || files(&out) == [MARKER_FILE, "EP.mcap"]);
}

#[test]
fn export_mcap_refuses_a_non_empty_output_unless_overwrite() {
    let tmp = tempfile::tempdir().unwrap();
    let ep = small_episode(&tmp.path().join("data"), "EP", EpisodeStatus::Complete, 0);
    let out = tmp.path().join("out");
    fs::create_dir_all(&out).unwrap();
    fs::write(out.join("EP.mcap"), "old").unwrap();
    let e = export(std::slice::from_ref(&ep), &out, &McapOptions::default()).unwrap_err();
    assert!(
        matches!(&e, McapError::OutputNotEmpty { dir } if *dir == out),
        "{e}"
    );
    assert_eq!(fs::read(out.join("EP.mcap")).unwrap(), b"old");

    // --overwrite replaces what an export wrote, never a file no export wrote
    // (export_output_dir.rs has the whole rule).
    let opts = McapOptions {
        overwrite: true,
        ..McapOptions::default()
    };
    let e = export(std::slice::from_ref(&ep), &out, &opts).unwrap_err();
    assert!(matches!(&e, McapError::Output(_)), "{e}");
    assert!(!e.is_bad_input());
    assert_eq!(fs::read(out.join("EP.mcap")).unwrap(), b"old");
    fs::remove_file(out.join("EP.mcap")).unwrap();
    export(std::slice::from_ref(&ep), &out, &McapOptions::default()).unwrap();
    export(std::slice::from_ref(&ep), &out, &opts).unwrap();
    assert_ne!(fs::read(out.join("EP.mcap")).unwrap(), b"old");

    // An output that is a file.
    let file = tmp.path().join("file");
    fs::write(&file, "x").unwrap();
    let e = export(&[ep], &file, &opts).unwrap_err();
    assert!(
        matches!(&e, McapError::Io(IoError { op: "list", .. })),
        "{e}"
    );
}

#[test]
fn export_mcap_unreadable_episode_fails_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    small_episode(&data, "good", EpisodeStatus::Complete, 0);
    let bad = small_episode(&data, "bad", EpisodeStatus::Complete, 0);
    // Damage the only chunk of its stream: its CRCs no longer match.
    let chunk = bad.join("streams/s/s_chunk_0000.wshard");
    let mut bytes = fs::read(&chunk).unwrap();
    let n = bytes.len();
    bytes.truncate(n - 40);
    fs::write(&chunk, bytes).unwrap();

    let out = tmp.path().join("out");
    let r = export(&[data], &out, &McapOptions::default()).unwrap();
    let failures: Vec<_> = r.failures().collect();
    let [(dir, e)] = failures[..] else {
        panic!("{r:?}")
    };
    assert_eq!(*dir, bad);
    assert!(matches!(e, McapError::Episode { .. }), "{e}");
    assert!(e.is_bad_input());
    assert!(e.to_string().contains("bad"), "{e}");
    assert_eq!(files(&out), [MARKER_FILE, "good.mcap"]);
}

#[test]
fn export_mcap_times_before_the_epoch_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    fs::create_dir_all(&out).unwrap();
    let early = small_episode(
        &tmp.path().join("d1"),
        "early",
        EpisodeStatus::Complete,
        -10,
    );
    let e = export_episode(&early, &out, &McapOptions::default()).unwrap_err();
    assert!(
        matches!(&e, McapError::NegativeTime { stream, step: 0, t_ns: -10, .. } if stream == "s"),
        "{e}"
    );
    assert!(e.is_bad_input());

    let v: Vec<f32> = vec![1.0, 2.0];
    let s = Stream {
        name: "s",
        timebase: Timebase::TimestampsNs { dt_ns: 1 },
        timestamps: Some(vec![5]),
        channels: vec![Channel::from_f32("x", Lane::Signal, vec![2], &v).unwrap()],
        steps: 1,
        chunk: 10,
    };
    let event = EventRecord {
        seq: 4,
        t_ns: -1,
        label: "go".into(),
        source: "s".into(),
        data: EventData::Text("now".into()),
    };
    let ev = write_episode(
        &tmp.path().join("d2"),
        "ev",
        EpisodeStatus::Complete,
        &[s],
        &[event],
        &[],
    );
    let e = export_episode(&ev, &out, &McapOptions::default()).unwrap_err();
    assert!(
        matches!(&e, McapError::NegativeEventTime { what: "event", seq: 4, t_ns: -1, label, .. } if label == "go"),
        "{e}"
    );
    assert!(files(&out).is_empty());
}

#[test]
fn export_mcap_same_name_in_both_lanes_is_a_topic_clash() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    fs::create_dir_all(&out).unwrap();
    let v: Vec<f32> = vec![1.0, 2.0];
    let s = Stream {
        name: "arm",
        timebase: Timebase::TimestampsNs { dt_ns: 1 },
        timestamps: Some(vec![5]),
        channels: vec![
            Channel::from_f32("q", Lane::Signal, vec![2], &v).unwrap(),
            Channel::from_f32("q", Lane::Action, vec![2], &v).unwrap(),
        ],
        steps: 1,
        chunk: 10,
    };
    let dir = write_episode(
        &tmp.path().join("d"),
        "EP",
        EpisodeStatus::Complete,
        &[s],
        &[],
        &[],
    );
    let e = export_episode(&dir, &out, &McapOptions::default()).unwrap_err();
    assert!(
        matches!(&e, McapError::DuplicateTopic { topic, stream, .. } if topic == "/arm/q" && stream == "arm"),
        "{e}"
    );
}

#[test]
fn export_mcap_picture_too_wide_for_jpeg_is_an_encode_error() {
    let tmp = tempfile::tempdir().unwrap();
    let width = u64::from(u16::MAX) + 1;
    let s = Stream {
        name: "cam",
        timebase: Timebase::TimestampsNs { dt_ns: 1 },
        timestamps: Some(vec![5]),
        channels: vec![Channel::new(
            "wide",
            Lane::Signal,
            DType::U8,
            vec![8, width, 1],
            vec![0; 8 * width as usize],
        )],
        steps: 1,
        chunk: 10,
    };
    let dir = write_episode(
        &tmp.path().join("d"),
        "EP",
        EpisodeStatus::Complete,
        &[s],
        &[],
        &[],
    );
    let out = tmp.path().join("out");
    fs::create_dir_all(&out).unwrap();
    let opts = McapOptions {
        images: ImageMode::Jpeg,
        ..McapOptions::default()
    };
    let e = export_episode(&dir, &out, &opts).unwrap_err();
    assert!(
        matches!(&e, McapError::Encode { channel, step: 0, format: "JPEG", .. } if channel == "wide"),
        "{e}"
    );
    assert!(e.to_string().contains("width 65536"), "{e}");
    assert!(files(&out).is_empty(), "the .partial is removed");
    // Raw and PNG take it.
    export_episode(&dir, &out, &McapOptions::default()).unwrap();
}

#[test]
fn export_mcap_output_file_errors_are_io_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let ep = small_episode(&tmp.path().join("data"), "EP", EpisodeStatus::Complete, 0);
    let out = tmp.path().join("out");
    // `.partial` cannot be created: a directory is there.
    fs::create_dir_all(out.join(format!("EP.mcap{PARTIAL_SUFFIX}"))).unwrap();
    let e = export_episode(&ep, &out, &McapOptions::default()).unwrap_err();
    assert!(
        matches!(&e, McapError::Io(IoError { op: "create", .. })),
        "{e}"
    );
    assert!(!e.is_bad_input());
    fs::remove_dir(out.join(format!("EP.mcap{PARTIAL_SUFFIX}"))).unwrap();
    // The finished name is a non-empty directory: the rename fails and the `.partial` is
    // removed.
    fs::create_dir_all(out.join("EP.mcap/inside")).unwrap();
    let e = export_episode(&ep, &out, &McapOptions::default()).unwrap_err();
    assert!(
        matches!(
            &e,
            McapError::Io(IoError {
                op: "rename into",
                ..
            })
        ),
        "{e}"
    );
    assert!(e.to_string().contains("EP.mcap"), "{e}");
    assert_eq!(files(&out), ["EP.mcap"]);
}
