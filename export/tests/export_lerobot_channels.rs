//! `export_lerobot_channels_*`: which channels become `observation.state` / `action`, as
//! recordings of the ROS bridge have them: streams joined in whatever order their first
//! messages came (the features are in canonical order: streams by name), the same channel
//! name in several streams (names carry the stream), `receive_t_ns` int64 times in every
//! stream (never converted to float32 silently), `--exclude`.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use arrow_array::{Array, FixedSizeListArray, Float32Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{Map, Value};
use wshard::episode::{Channel, DType, Episode, EpisodeWriteOptions, Lane, Timebase};
use wshard::episode_dir::index::{
    ChannelEntry, EpisodeIndex, EpisodeStatus, StreamEntry, TIMEBASE_TIMESTAMPS,
};
use wshard::episode_dir::names::{index_file_name, stream_dir};
use wshard::manifest::write_episode_chunked;
use wshard_export::lerobot::{export, LerobotError, LerobotOptions, Summary};

/// Steps of every stream (10 ms apart).
const STEPS: usize = 50;
const DT_NS: i64 = 10_000_000;
/// The bridge's receive clock: nanoseconds since 1970 (float32 cannot tell them apart).
const RECEIVE_T0_NS: i64 = 1_800_000_000_000_000_000;

/// One stream as the bridge records it: its channels, then `receive_t_ns` (i64).
struct BridgeStream {
    name: &'static str,
    /// `(channel, lane, elements)`, f64 values.
    channels: Vec<(&'static str, Lane, u64)>,
}

fn value(stream: &str, channel: &str, step: usize, j: usize) -> f64 {
    let base = (stream.len() * 10 + channel.len()) as f64;
    base + step as f64 * 0.01 + j as f64 * 0.5
}

fn streams() -> Vec<BridgeStream> {
    vec![
        BridgeStream {
            name: "arm",
            channels: vec![("position", Lane::Signal, 2), ("command", Lane::Action, 2)],
        },
        BridgeStream {
            name: "gripper",
            channels: vec![("position", Lane::Signal, 1)],
        },
    ]
}

fn lane(l: Lane) -> String {
    match l {
        Lane::Signal => "signal".into(),
        Lane::Action => "action".into(),
    }
}

/// Episode `id` in `data`, its streams listed in the index in the order of `order`.
fn write_bridge_episode(data: &Path, id: &str, order: &[&str]) -> PathBuf {
    let dir = data.join(id);
    let mut index = EpisodeIndex::new(id, "bridge", Map::new(), 1);
    index.status = EpisodeStatus::Complete;
    let all = streams();
    for name in order {
        let s = all.iter().find(|s| s.name == *name).unwrap();
        let mut ep = Episode::new(
            s.name,
            "bridge",
            Timebase::TimestampsNs { dt_ns: 10_000_000 },
        );
        let mut entries = Vec::new();
        for (c, l, n) in &s.channels {
            let v: Vec<f64> = (0..STEPS)
                .flat_map(|k| (0..*n as usize).map(move |j| value(s.name, c, k, j)))
                .collect();
            let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            ep.push_channel(Channel::new(*c, *l, DType::F64, vec![*n], bytes));
            entries.push(ChannelEntry {
                name: (*c).into(),
                lane: lane(*l),
                dtype: "f64".into(),
                shape: vec![*n],
            });
        }
        let receive: Vec<u8> = (0..STEPS)
            .flat_map(|k| (RECEIVE_T0_NS + k as i64 * DT_NS + 12_345).to_le_bytes())
            .collect();
        ep.push_channel(Channel::new(
            "receive_t_ns",
            Lane::Signal,
            DType::I64,
            vec![],
            receive,
        ));
        entries.push(ChannelEntry {
            name: "receive_t_ns".into(),
            lane: "signal".into(),
            dtype: "i64".into(),
            shape: vec![],
        });
        ep.set_reward(vec![0.0; STEPS]);
        ep.set_done(vec![false; STEPS]);
        ep.timestamps_ns = Some((0..STEPS).map(|k| k as i64 * DT_NS).collect());
        fs::create_dir_all(stream_dir(&dir, s.name)).unwrap();
        write_episode_chunked(
            &ep,
            &stream_dir(&dir, s.name),
            32,
            &EpisodeWriteOptions::default(),
        )
        .unwrap();
        index.streams.push(StreamEntry {
            name: s.name.into(),
            manifest: format!("streams/{0}/{0}_manifest.wshard", s.name),
            timebase: TIMEBASE_TIMESTAMPS.into(),
            tick_hz: 100.0,
            channels: entries,
            producer: "bridge/1".into(),
            status: EpisodeStatus::Complete,
            steps: 0,
            chunks: 1,
            first_t_ns: None,
            last_t_ns: None,
        });
    }
    fs::write(dir.join(index_file_name(id)), index.to_json_bytes()).unwrap();
    dir
}

fn run(inputs: &[PathBuf], out: &Path, opts: &LerobotOptions) -> Result<Summary, LerobotError> {
    export(inputs, out, opts, &mut |_, _, _, _| {})
}

fn info(out: &Path) -> Value {
    serde_json::from_slice(&fs::read(out.join("meta/info.json")).unwrap()).unwrap()
}

fn names(out: &Path, feature: &str) -> Vec<String> {
    info(out)["features"][feature]["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

/// `observation.state` of every frame of the data file.
fn states(out: &Path) -> Vec<Vec<f32>> {
    let file = File::open(out.join("data/chunk-000/file-000.parquet")).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let mut out = Vec::new();
    for batch in reader {
        let batch: RecordBatch = batch.unwrap();
        let col = batch
            .column_by_name("observation.state")
            .unwrap()
            .as_any()
            .downcast_ref::<FixedSizeListArray>()
            .unwrap()
            .clone();
        for i in 0..col.len() {
            let v = col.value(i);
            let f = v.as_any().downcast_ref::<Float32Array>().unwrap();
            out.push(f.values().to_vec());
        }
    }
    out
}

const STATE_NAMES: [&str; 3] = ["arm/position_0", "arm/position_1", "gripper/position"];

#[test]
fn export_lerobot_channels_stream_order_does_not_matter() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    write_bridge_episode(&data, "ep-a", &["arm", "gripper"]);
    write_bridge_episode(&data, "ep-b", &["gripper", "arm"]);
    let out = tmp.path().join("out");
    let s = run(&[data], &out, &LerobotOptions::default()).unwrap();
    assert_eq!(s.episodes, 2);
    assert_eq!(names(&out, "observation.state"), STATE_NAMES);
    assert_eq!(names(&out, "action"), ["arm/command_0", "arm/command_1"]);
    // Both episodes' rows hold arm then gripper, whatever order their streams joined in.
    let rows = states(&out);
    assert_eq!(rows.len() as u64, s.frames);
    let half = rows.len() / 2;
    for row in [&rows[0], &rows[half]] {
        let want: Vec<f32> = vec![
            value("arm", "position", 0, 0) as f32,
            value("arm", "position", 0, 1) as f32,
            value("gripper", "position", 0, 0) as f32,
        ];
        assert_eq!(*row, want);
    }
}

#[test]
fn export_lerobot_channels_a_mismatch_names_its_cause() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    write_bridge_episode(&data, "ep-a", &["arm", "gripper"]);
    write_bridge_episode(&data, "ep-b", &["arm"]);
    let e = run(&[data], &tmp.path().join("out"), &LerobotOptions::default()).unwrap_err();
    assert!(e.is_bad_input());
    let LerobotError::FeatureMismatch(m) = &e else {
        panic!("{e}");
    };
    assert_eq!(
        (m.episode.as_str(), m.first.as_str(), m.feature.as_str()),
        ("ep-b", "ep-a", "observation.state")
    );
    let text = e.to_string();
    assert!(
        text.contains("gripper/position") && text.contains("not in ep-b"),
        "{text}"
    );
    assert!(!text.contains("arm/position_0"), "lists every name: {text}");
    assert!(!tmp.path().join("out").exists());
}

#[test]
fn export_lerobot_channels_int64_times_are_never_float32_silently() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    write_bridge_episode(&data, "ep-a", &["gripper", "arm"]);
    let out = tmp.path().join("out");
    // By default the receive times are left out, and said.
    let s = run(
        std::slice::from_ref(&data),
        &out,
        &LerobotOptions::default(),
    )
    .unwrap();
    assert_eq!(names(&out, "observation.state"), STATE_NAMES);
    let left: Vec<&str> = s.left_out.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(left, ["arm/receive_t_ns", "gripper/receive_t_ns"]);
    assert!(s.left_out.iter().all(|(_, why)| why.contains("float32")));
    // Chosen by name, a value float32 cannot hold is an error naming it.
    let opts = LerobotOptions {
        state: Some(vec!["arm/position".into(), "arm/receive_t_ns".into()]),
        ..LerobotOptions::default()
    };
    let e = run(std::slice::from_ref(&data), &tmp.path().join("o2"), &opts).unwrap_err();
    assert!(
        matches!(&e, LerobotError::NotFloat32 { channel, .. } if channel == "arm/receive_t_ns"),
        "{e}"
    );
    assert!(e.is_bad_input());
    assert!(!tmp.path().join("o2").exists());
}

#[test]
fn export_lerobot_channels_exclude_leaves_channels_out() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    write_bridge_episode(&data, "ep-a", &["arm", "gripper"]);
    let out = tmp.path().join("out");
    let opts = LerobotOptions {
        exclude: vec!["gripper/*".into(), "*/command".into()],
        ..LerobotOptions::default()
    };
    run(std::slice::from_ref(&data), &out, &opts).unwrap();
    assert_eq!(
        names(&out, "observation.state"),
        ["arm/position_0", "arm/position_1"]
    );
    assert!(info(&out)["features"].get("action").is_none());
    // A pattern that matches no channel is a typo: refused, naming it.
    let opts = LerobotOptions {
        exclude: vec!["*/recieve_t_ns".into()],
        ..LerobotOptions::default()
    };
    let e = run(&[data], &tmp.path().join("o2"), &opts).unwrap_err();
    assert!(!e.is_bad_input());
    let text = e.to_string();
    assert!(
        text.contains("*/recieve_t_ns") && text.contains("arm/receive_t_ns"),
        "{text}"
    );
}
