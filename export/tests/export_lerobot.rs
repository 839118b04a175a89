//! `wshard export lerobot` (the library): the LeRobotDataset v3 layout of small multi-rate
//! episodes (tables read back with the Parquet crate's Arrow reader, info.json, stats.json),
//! the channel mapping, and every refused input as a typed error with nothing left at the
//! output. The Python tests (tests/interop/test_export_lerobot_*.py) read the same layout
//! with pyarrow, PyAV and the real `lerobot` package.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod lerobot_support;

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use lerobot_support::{act, q, write, Spec};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;
use wshard::episode_dir::index::EpisodeStatus;
use wshard_export::lerobot::{export, parse_fps, LerobotError, LerobotOptions, Summary};

fn need_ffmpeg() {
    let ok = std::process::Command::new("ffmpeg")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "these tests encode videos with ffmpeg: apt-get install ffmpeg"
    );
}

fn run(inputs: &[PathBuf], out: &Path, opts: &LerobotOptions) -> Result<Summary, LerobotError> {
    export(inputs, out, opts, &mut |_, _, _, _| {})
}

/// A small table (one batch: the reader's default batch size is 1024 rows).
fn read_table(path: &Path) -> RecordBatch {
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    let batches: Vec<RecordBatch> = builder.build().unwrap().map(|b| b.unwrap()).collect();
    assert_eq!(batches.len(), 1, "{}", path.display());
    batches[0].clone()
}

/// The keys of a Parquet file's Arrow schema metadata.
fn metadata_keys(path: &Path) -> Vec<String> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    builder.schema().metadata().keys().cloned().collect()
}

fn ints(b: &RecordBatch, name: &str) -> Vec<i64> {
    b.column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .as_primitive::<Int64Type>()
        .values()
        .to_vec()
}

fn floats(b: &RecordBatch, name: &str) -> Vec<f64> {
    b.column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .as_primitive::<Float64Type>()
        .values()
        .to_vec()
}

fn vectors(b: &RecordBatch, name: &str) -> Vec<Vec<f32>> {
    let list = b.column_by_name(name).unwrap().as_fixed_size_list();
    (0..list.len())
        .map(|i| {
            list.value(i)
                .as_primitive::<Float32Type>()
                .values()
                .to_vec()
        })
        .collect()
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

/// Two episodes in a data dir (the second with another task) and the output path.
fn two_episodes(tmp: &Path) -> (PathBuf, PathBuf) {
    let data = tmp.join("data");
    write(&data, &Spec::new("ep-a", 1));
    let mut b = Spec::new("ep-b", 2);
    b.instruction = Some("open the door");
    write(&data, &b);
    (data, tmp.join("out"))
}

#[test]
fn export_lerobot_layout_tables_and_meta() {
    need_ffmpeg();
    let tmp = tempfile::tempdir().unwrap();
    let (data, out) = two_episodes(tmp.path());
    let s = run(&[data], &out, &LerobotOptions::default()).unwrap();
    assert_eq!((s.episodes, s.frames, s.tasks, s.fps), (2, 20, 2, 10));
    assert_eq!(s.videos, ["observation.images.cam_rgb"]);
    assert_eq!(s.left_out.len(), 1);
    assert_eq!(s.left_out[0].0, "cam/depth");
    for f in [
        "meta/info.json",
        "meta/stats.json",
        "meta/tasks.parquet",
        "meta/episodes/chunk-000/file-000.parquet",
        "data/chunk-000/file-000.parquet",
        "videos/observation.images.cam_rgb/chunk-000/file-000.mp4",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    let leftovers: Vec<_> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    let info = json(&out.join("meta/info.json"));
    assert_eq!(info["codebase_version"], "v3.0");
    assert_eq!(info["fps"], 10);
    assert_eq!(
        (
            &info["total_episodes"],
            &info["total_frames"],
            &info["total_tasks"]
        ),
        (&Value::from(2), &Value::from(20), &Value::from(2))
    );
    assert_eq!(info["splits"]["train"], "0:2");
    let f = &info["features"];
    assert_eq!(f["observation.state"]["shape"], serde_json::json!([3]));
    assert_eq!(
        f["observation.state"]["names"],
        serde_json::json!(["joints/q_0", "joints/q_1", "joints/q_2"])
    );
    assert_eq!(f["action"]["shape"], serde_json::json!([2]));
    let v = &f["observation.images.cam_rgb"];
    assert_eq!(v["dtype"], "video");
    assert_eq!(v["shape"], serde_json::json!([16, 16, 3]));
    assert_eq!(v["info"]["video.codec"], "h264");
    assert_eq!(v["info"]["video.fps"], 10);
    assert!(f.get("observation.images.cam_depth").is_none());
    for k in [
        "timestamp",
        "frame_index",
        "episode_index",
        "index",
        "task_index",
    ] {
        assert_eq!(f[k]["shape"], serde_json::json!([1]), "{k}");
    }

    // Frames at 2 ms + k * 100 ms: state held from joint step 10k, the camera's frame k.
    let d = read_table(&out.join("data/chunk-000/file-000.parquet"));
    let names: Vec<String> = d
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(
        names,
        [
            "observation.state",
            "action",
            "timestamp",
            "frame_index",
            "episode_index",
            "index",
            "task_index"
        ]
    );
    assert_eq!(d.num_rows(), 20);
    let state = vectors(&d, "observation.state");
    let action = vectors(&d, "action");
    for row in 0..20 {
        let (seed, k) = if row < 10 { (1, row) } else { (2, row - 10) };
        let want: Vec<f32> = (0..3).map(|j| q(seed, 10 * k, j)).collect();
        assert_eq!(state[row], want, "row {row}");
        let want: Vec<f32> = (0..2).map(|j| act(seed, 10 * k, j)).collect();
        assert_eq!(action[row], want, "row {row}");
    }
    let ts = d
        .column_by_name("timestamp")
        .unwrap()
        .as_primitive::<Float32Type>();
    assert_eq!(ts.value(3), 0.3f32);
    assert_eq!(ints(&d, "index"), (0..20).collect::<Vec<_>>());
    assert_eq!(ints(&d, "frame_index")[10..13], [0, 1, 2]);
    assert_eq!(ints(&d, "episode_index")[9..11], [0, 1]);
    assert_eq!(ints(&d, "task_index")[9..11], [0, 1]);
    assert!(metadata_keys(&out.join("data/chunk-000/file-000.parquet"))
        .contains(&"huggingface".to_owned()));

    let e = read_table(&out.join("meta/episodes/chunk-000/file-000.parquet"));
    assert_eq!(ints(&e, "episode_index"), [0, 1]);
    assert_eq!(ints(&e, "length"), [10, 10]);
    assert_eq!(ints(&e, "dataset_from_index"), [0, 10]);
    assert_eq!(ints(&e, "dataset_to_index"), [10, 20]);
    assert_eq!(ints(&e, "data/file_index"), [0, 0]);
    let key = "videos/observation.images.cam_rgb";
    assert_eq!(floats(&e, &format!("{key}/from_timestamp")), [0.0, 1.0]);
    assert_eq!(floats(&e, &format!("{key}/to_timestamp")), [1.0, 2.0]);
    let tasks = e.column_by_name("tasks").unwrap().as_list::<i32>();
    assert_eq!(tasks.value(1).as_string::<i32>().value(0), "open the door");
    assert!(e.column_by_name("stats/observation.state/mean").is_some());

    let t = read_table(&out.join("meta/tasks.parquet"));
    assert_eq!(ints(&t, "task_index"), [0, 1]);
    let text = t
        .column_by_name("__index_level_0__")
        .unwrap()
        .as_string::<i32>();
    assert_eq!(
        (text.value(0), text.value(1)),
        ("stack the blocks", "open the door")
    );
    assert!(metadata_keys(&out.join("meta/tasks.parquet")).contains(&"pandas".to_owned()));

    let stats = json(&out.join("meta/stats.json"));
    let all: Vec<f64> = (0..20)
        .map(|row| {
            let (seed, k) = if row < 10 { (1, row) } else { (2, row - 10) };
            f64::from(q(seed, 10 * k, 0))
        })
        .collect();
    let mean = all.iter().sum::<f64>() / 20.0;
    let got = stats["observation.state"]["mean"][0].as_f64().unwrap();
    assert!((got - mean).abs() < 1e-9, "{got} {mean}");
    assert_eq!(stats["observation.state"]["count"], serde_json::json!([20]));
    assert_eq!(
        stats["observation.images.cam_rgb"]["mean"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert_eq!(stats["index"]["max"], serde_json::json!([19.0]));
}

#[test]
fn export_lerobot_state_and_action_chosen() {
    need_ffmpeg();
    let tmp = tempfile::tempdir().unwrap();
    let (data, out) = two_episodes(tmp.path());
    let opts = LerobotOptions {
        state: Some(vec!["joints/act".into(), "q".into()]),
        action: Some(vec!["q".into()]),
        fps: Some(5),
        ..LerobotOptions::default()
    };
    let s = run(&[data.join("ep-b")], &out, &opts).unwrap();
    assert_eq!((s.episodes, s.fps), (1, 5));
    let info = json(&out.join("meta/info.json"));
    assert_eq!(
        info["features"]["observation.state"]["names"],
        serde_json::json!([
            "joints/act_0",
            "joints/act_1",
            "joints/q_0",
            "joints/q_1",
            "joints/q_2"
        ])
    );
    assert_eq!(info["features"]["action"]["shape"], serde_json::json!([3]));
    let d = read_table(&out.join("data/chunk-000/file-000.parquet"));
    // 5 fps from 2 ms to 902 ms: 5 frames, state held from joint step 20k.
    assert_eq!(d.num_rows(), 5);
    let state = vectors(&d, "observation.state");
    assert_eq!(state[2][0], act(2, 40, 0));
    assert_eq!(state[2][2], q(2, 40, 0));
}

#[test]
fn export_lerobot_no_matching_channels() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut spec = Spec::new("only-depth", 1);
    spec.joints = false;
    spec.rgb = false;
    write(&data, &spec);
    let out = tmp.path().join("out");
    let e = run(
        std::slice::from_ref(&data),
        &out,
        &LerobotOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e, LerobotError::NoChannels { .. }), "{e}");
    assert!(e.is_bad_input());
    assert!(e.to_string().contains("cam/depth"), "{e}");
    assert!(!out.exists());

    let tmp2 = tempfile::tempdir().unwrap();
    let (data, out) = two_episodes(tmp2.path());
    for (key, what) in [("nosuch", "no such channel"), ("rgb", "is a picture")] {
        let opts = LerobotOptions {
            state: Some(vec![key.into()]),
            ..LerobotOptions::default()
        };
        let e = run(std::slice::from_ref(&data), &out, &opts).unwrap_err();
        assert!(matches!(e, LerobotError::BadChannel { .. }), "{e}");
        assert!(e.to_string().contains(what), "{e}");
        assert!(!out.exists());
    }
}

#[test]
fn export_lerobot_bad_fps() {
    for bad in ["0", "-3", "12.5", "ten", "1001", ""] {
        let e = parse_fps(bad).unwrap_err();
        assert!(matches!(e, LerobotError::BadFps { .. }), "{bad}: {e}");
        assert!(e.to_string().contains("whole number"), "{e}");
    }
    assert_eq!(parse_fps("30").unwrap(), 30);
    let tmp = tempfile::tempdir().unwrap();
    let (data, out) = two_episodes(tmp.path());
    let opts = LerobotOptions {
        fps: Some(0),
        ..LerobotOptions::default()
    };
    let e = run(&[data], &out, &opts).unwrap_err();
    assert!(matches!(e, LerobotError::BadFps { .. }), "{e}");
    assert!(!e.is_bad_input());
    assert!(!out.exists());
}

#[test]
fn export_lerobot_refuses_a_non_empty_output() {
    need_ffmpeg();
    let tmp = tempfile::tempdir().unwrap();
    let (data, out) = two_episodes(tmp.path());
    fs::create_dir_all(&out).unwrap();
    fs::write(out.join("keep.txt"), b"mine").unwrap();
    let e = run(
        std::slice::from_ref(&data),
        &out,
        &LerobotOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e, LerobotError::OutputNotEmpty { .. }), "{e}");
    assert!(e.to_string().contains("--overwrite"), "{e}");
    assert_eq!(fs::read(out.join("keep.txt")).unwrap(), b"mine");
    let opts = LerobotOptions {
        overwrite: true,
        ..LerobotOptions::default()
    };
    // --overwrite replaces an export's output, never a directory holding what no export
    // wrote (export_output_dir.rs has the whole rule).
    let e = run(std::slice::from_ref(&data), &out, &opts).unwrap_err();
    assert!(matches!(e, LerobotError::Output(_)), "{e}");
    assert!(!e.is_bad_input());
    assert_eq!(fs::read(out.join("keep.txt")).unwrap(), b"mine");
    fs::remove_file(out.join("keep.txt")).unwrap();
    run(
        std::slice::from_ref(&data),
        &out,
        &LerobotOptions::default(),
    )
    .unwrap();
    run(&[data], &out, &opts).unwrap();
    assert!(out.join("meta/info.json").is_file());
}

#[test]
fn export_lerobot_episodes_must_share_features() {
    need_ffmpeg();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    write(&data, &Spec::new("ep-a", 1));
    let mut b = Spec::new("ep-b", 2);
    b.q_dim = 4;
    write(&data, &b);
    let out = tmp.path().join("out");
    let e = run(&[data], &out, &LerobotOptions::default()).unwrap_err();
    match &e {
        LerobotError::FeatureMismatch(m) => {
            assert_eq!(
                (m.episode.as_str(), m.feature.as_str()),
                ("ep-b", "observation.state")
            );
            assert_eq!(
                m.cause,
                "channel joints/q has 4 elements in ep-b, 3 in ep-a"
            );
        }
        other => panic!("{other}"),
    }
    assert!(e.is_bad_input());
    assert!(!out.exists());
    let partials = fs::read_dir(tmp.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains("partial")
        })
        .count();
    assert_eq!(partials, 0, "a failed export leaves no partial directory");
}

#[test]
fn export_lerobot_skips_unfinished_episodes_and_is_deterministic() {
    need_ffmpeg();
    let tmp = tempfile::tempdir().unwrap();
    let (data, out) = two_episodes(tmp.path());
    let mut open = Spec::new("ep-c", 3);
    open.status = EpisodeStatus::Recording;
    write(&data, &open);
    let s = run(
        std::slice::from_ref(&data),
        &out,
        &LerobotOptions::default(),
    )
    .unwrap();
    assert_eq!(s.episodes, 2);
    assert_eq!(s.skipped.len(), 1);
    assert!(s.skipped[0].dir.ends_with("ep-c"));
    let out2 = tmp.path().join("out2");
    run(&[data], &out2, &LerobotOptions::default()).unwrap();
    for f in [
        "meta/info.json",
        "meta/stats.json",
        "meta/tasks.parquet",
        "meta/episodes/chunk-000/file-000.parquet",
        "data/chunk-000/file-000.parquet",
        "videos/observation.images.cam_rgb/chunk-000/file-000.mp4",
    ] {
        assert_eq!(
            fs::read(out.join(f)).unwrap(),
            fs::read(out2.join(f)).unwrap(),
            "{f}"
        );
    }
}

#[test]
fn export_lerobot_missing_ffmpeg_program() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, out) = two_episodes(tmp.path());
    let opts = LerobotOptions {
        ffmpeg: tmp.path().join("no-ffmpeg-here"),
        ..LerobotOptions::default()
    };
    let e = run(&[data], &out, &opts).unwrap_err();
    assert!(matches!(e, LerobotError::FfmpegMissing { .. }), "{e}");
    assert!(e.to_string().contains("apt-get install ffmpeg"), "{e}");
    assert!(!out.exists());
}

#[test]
fn export_lerobot_mono_odd_pictures_and_no_pictures() {
    need_ffmpeg();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut spec = Spec::new("ep-a", 1);
    spec.rgb = false;
    spec.mono = Some((15, 17));
    write(&data, &spec);
    let out = tmp.path().join("out");
    let s = run(
        std::slice::from_ref(&data),
        &out,
        &LerobotOptions::default(),
    )
    .unwrap();
    assert_eq!(s.videos, ["observation.images.cam_gray"]);
    let info = json(&out.join("meta/info.json"));
    let v = &info["features"]["observation.images.cam_gray"];
    assert_eq!(v["shape"], serde_json::json!([15, 17, 3]));
    assert_eq!(v["info"]["video.pix_fmt"], "yuv444p");
    assert!(out
        .join("videos/observation.images.cam_gray/chunk-000/file-000.mp4")
        .is_file());

    // No picture channel: no video, no ffmpeg needed, the first stream's rate (100 Hz).
    let data2 = tmp.path().join("data2");
    let mut spec = Spec::new("ep-b", 2);
    spec.rgb = false;
    spec.depth = false;
    spec.joints = true;
    write(&data2, &spec);
    let out2 = tmp.path().join("out2");
    let opts = LerobotOptions {
        ffmpeg: tmp.path().join("no-ffmpeg-here"),
        ..LerobotOptions::default()
    };
    let s = run(&[data2], &out2, &opts).unwrap();
    assert_eq!((s.fps, s.frames), (100, 100));
    let info = json(&out2.join("meta/info.json"));
    assert_eq!(info["video_path"], Value::Null);
    assert!(!out2.join("videos").exists());
}

#[test]
fn export_lerobot_streams_that_do_not_overlap() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut spec = Spec::new("ep-late", 1);
    spec.cam_offset_ns = 5_000_000_000; // the camera starts after the joints end (0.99 s)
    write(&data, &spec);
    let out = tmp.path().join("out");
    let e = run(&[data], &out, &LerobotOptions::default()).unwrap_err();
    assert!(matches!(e, LerobotError::NoOverlap { .. }), "{e}");
    assert!(e.is_bad_input());
    assert!(e.to_string().contains("ep-late"), "{e}");
    assert!(!out.exists());
}

#[test]
fn export_lerobot_av1_needs_64_pixel_pictures() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, out) = two_episodes(tmp.path());
    let opts = LerobotOptions {
        video_codec: wshard_export::lerobot::VideoCodec::Av1,
        ..LerobotOptions::default()
    };
    let e = run(&[data], &out, &opts).unwrap_err();
    assert!(matches!(e, LerobotError::BadPictureSize { .. }), "{e}");
    assert!(e.to_string().contains("--vcodec h264"), "{e}");
    assert!(!out.exists());
}

#[test]
fn export_lerobot_one_episode_per_file() {
    need_ffmpeg();
    let tmp = tempfile::tempdir().unwrap();
    let (data, out) = two_episodes(tmp.path());
    let opts = LerobotOptions {
        data_files_size_in_mb: 0,
        video_files_size_in_mb: 0,
        ..LerobotOptions::default()
    };
    run(&[data], &out, &opts).unwrap();
    for f in [
        "data/chunk-000/file-000.parquet",
        "data/chunk-000/file-001.parquet",
        "videos/observation.images.cam_rgb/chunk-000/file-000.mp4",
        "videos/observation.images.cam_rgb/chunk-000/file-001.mp4",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    assert!(!out.join("data/chunk-000/file-002.parquet").exists());
    let second = read_table(&out.join("data/chunk-000/file-001.parquet"));
    assert_eq!(ints(&second, "index"), (10..20).collect::<Vec<_>>());
    assert_eq!(ints(&second, "frame_index"), (0..10).collect::<Vec<_>>());
    let e = read_table(&out.join("meta/episodes/chunk-000/file-000.parquet"));
    assert_eq!(ints(&e, "data/file_index"), [0, 1]);
    assert_eq!(ints(&e, "dataset_from_index"), [0, 10]);
    let key = "videos/observation.images.cam_rgb";
    assert_eq!(ints(&e, &format!("{key}/file_index")), [0, 1]);
    assert_eq!(floats(&e, &format!("{key}/from_timestamp")), [0.0, 0.0]);
    assert_eq!(floats(&e, &format!("{key}/to_timestamp")), [1.0, 1.0]);
    let info = json(&out.join("meta/info.json"));
    assert_eq!(
        (
            &info["data_files_size_in_mb"],
            &info["video_files_size_in_mb"]
        ),
        (&Value::from(0), &Value::from(0))
    );
}

#[test]
fn export_lerobot_inputs_follow_the_shared_rule() {
    use wshard_export::inputs::InputsError;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let a = write(&tmp.path().join("a"), &Spec::new("ep-x", 2));
    let b = write(&tmp.path().join("b"), &Spec::new("ep-x", 2));
    let e = run(&[a, b], &out, &LerobotOptions::default()).unwrap_err();
    assert!(
        matches!(&e, LerobotError::Inputs(InputsError::DuplicateEpisode { episode, .. }) if episode == "ep-x"),
        "{e}"
    );
    assert!(!e.is_bad_input());
    // A data directory without an episode directory.
    let empty = tmp.path().join("empty");
    fs::create_dir_all(empty.join("notes")).unwrap();
    let e = run(&[empty], &out, &LerobotOptions::default()).unwrap_err();
    assert!(
        matches!(&e, LerobotError::Inputs(InputsError::NoEpisodes { .. })),
        "{e}"
    );
    assert!(!e.is_bad_input());
    assert!(!out.exists());
}
