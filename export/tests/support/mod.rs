//! Small multi-stream episodes written with the format library's own writer, for the
//! export tests: every value a pure function of (stream, channel, step).

#![allow(dead_code, clippy::unwrap_used)] // shared by several test files

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Map;
use wshard::episode::{Channel, DType, Episode, EpisodeWriteOptions, Lane, Timebase};
use wshard::episode_dir::events::{EventData, EventRecord};
use wshard::episode_dir::index::{EpisodeIndex, EpisodeStatus, StreamEntry, TIMEBASE_TIMESTAMPS};
use wshard::episode_dir::names::{events_file_name, index_file_name, stream_dir};
use wshard::manifest::write_episode_chunked;

pub const T0: i64 = 1_000_000_000;
pub const ARM_PERIOD_NS: i64 = 10_000_000;
pub const CAM_PERIOD_NS: i64 = 100_000_000;
pub const CAM_OFFSET_NS: i64 = 5_000_000;
pub const H: usize = 12;
pub const W: usize = 16;

/// What an episode holds.
#[derive(Clone, Debug)]
pub struct Spec {
    pub arm_steps: usize,
    pub cam_steps: usize,
    /// The camera stream has pictures (else it holds only a vector).
    pub pictures: bool,
    /// A second camera (`wrist/mono`, u8 [12, 16]) with its own times.
    pub wrist: bool,
    /// `arm/q` is NaN at this step.
    pub nan_at: Option<usize>,
    /// `arm/cmd` (action lane) is constant for the first this many steps.
    pub still_steps: usize,
    pub status: EpisodeStatus,
    /// Elements per step of `arm/q`.
    pub q_width: usize,
    /// No `arm` stream (every channel is a picture).
    pub no_arm: bool,
    /// A listed stream `cam2` (u8 [12, 16, 3] pictures) that never started.
    pub empty_camera: bool,
    /// Two more colour channels, `rgb.x` and `rgb_x`: the same sample file stem.
    pub clash: bool,
}

impl Default for Spec {
    fn default() -> Self {
        Self {
            arm_steps: 200,
            cam_steps: 18,
            pictures: true,
            wrist: false,
            nan_at: None,
            still_steps: 0,
            status: EpisodeStatus::Complete,
            q_width: 2,
            no_arm: false,
            empty_camera: false,
            clash: false,
        }
    }
}

pub fn arm_t(step: usize) -> i64 {
    T0 + step as i64 * ARM_PERIOD_NS
}

pub fn cam_t(step: usize) -> i64 {
    T0 + CAM_OFFSET_NS + step as i64 * CAM_PERIOD_NS
}

pub fn wrist_t(step: usize) -> i64 {
    T0 + 40_000_000 + step as i64 * 70_000_000
}

pub fn q(step: usize, j: usize) -> f32 {
    step as f32 * 0.01 + j as f32
}

pub fn cmd(step: usize, still: usize, j: usize) -> f32 {
    step.max(still) as f32 * 0.1 - j as f32
}

pub fn rgb(step: usize) -> Vec<u8> {
    (0..H * W * 3)
        .map(|i| ((i * 7 + step * 13) % 256) as u8)
        .collect()
}

pub fn depth_m(step: usize, y: usize, x: usize) -> f32 {
    0.5 + step as f32 * 0.001 + x as f32 * 0.01 + y as f32 * 0.0005
}

fn write_stream(dir: &Path, name: &str, ts: Vec<i64>, channels: Vec<Channel>) {
    let n = ts.len();
    let mut ep = Episode::new(name, "Env-v0", Timebase::TimestampsNs { dt_ns: 1 });
    for c in channels {
        ep.push_channel(c);
    }
    ep.set_reward(vec![0.0; n]);
    ep.set_done(vec![false; n]);
    ep.timestamps_ns = Some(ts);
    fs::create_dir_all(stream_dir(dir, name)).unwrap();
    write_episode_chunked(
        &ep,
        &stream_dir(dir, name),
        64,
        &EpisodeWriteOptions::default(),
    )
    .unwrap();
}

fn entry(name: &str) -> StreamEntry {
    StreamEntry {
        name: name.into(),
        manifest: format!("streams/{name}/{name}_manifest.wshard"),
        timebase: TIMEBASE_TIMESTAMPS.into(),
        tick_hz: 0.0,
        channels: Vec::new(),
        producer: "test/1".into(),
        status: EpisodeStatus::Complete,
        steps: 0,
        chunks: 1,
        first_t_ns: None,
        last_t_ns: None,
    }
}

/// Write episode `id` into `data_dir/id`; its path.
pub fn write_episode(data_dir: &Path, id: &str, spec: &Spec) -> PathBuf {
    let dir = data_dir.join(id);
    let n = spec.arm_steps;
    let mut qv = Vec::new();
    let mut cv = Vec::new();
    for s in 0..n {
        for j in 0..spec.q_width {
            qv.push(if spec.nan_at == Some(s) {
                f32::NAN
            } else {
                q(s, j)
            });
        }
        for j in 0..2 {
            cv.push(cmd(s, spec.still_steps, j));
        }
    }
    if !spec.no_arm {
        write_stream(
            &dir,
            "arm",
            (0..n).map(arm_t).collect(),
            vec![
                Channel::from_f32("q", Lane::Signal, vec![spec.q_width as u64], &qv).unwrap(),
                Channel::from_f32("cmd", Lane::Action, vec![2], &cv).unwrap(),
            ],
        );
    }
    let m = spec.cam_steps;
    let mut cam_channels = if spec.pictures {
        let rgb_data: Vec<u8> = (0..m).flat_map(rgb).collect();
        let depth: Vec<f32> = (0..m)
            .flat_map(|s| (0..H).flat_map(move |y| (0..W).map(move |x| depth_m(s, y, x))))
            .collect();
        vec![
            Channel::new(
                "rgb",
                Lane::Signal,
                DType::U8,
                vec![H as u64, W as u64, 3],
                rgb_data,
            ),
            Channel::from_f32("depth", Lane::Signal, vec![H as u64, W as u64], &depth).unwrap(),
        ]
    } else {
        let v: Vec<f32> = (0..m).map(|s| s as f32).collect();
        vec![Channel::from_f32("exposure", Lane::Signal, vec![1], &v).unwrap()]
    };
    if spec.clash {
        for name in ["rgb.x", "rgb_x"] {
            let data: Vec<u8> = (0..m).flat_map(rgb).collect();
            cam_channels.push(Channel::new(
                name,
                Lane::Signal,
                DType::U8,
                vec![H as u64, W as u64, 3],
                data,
            ));
        }
    }
    write_stream(&dir, "cam", (0..m).map(cam_t).collect(), cam_channels);
    let mut index = EpisodeIndex::new(id, "Env-v0", Map::new(), 1);
    index.status = spec.status;
    if !spec.no_arm {
        index.streams.push(entry("arm"));
    }
    index.streams.push(entry("cam"));
    if spec.empty_camera {
        let mut e = entry("cam2");
        e.chunks = 0;
        e.status = EpisodeStatus::Recording;
        e.channels = vec![wshard::episode_dir::index::ChannelEntry {
            name: "rgb".into(),
            lane: "signal".into(),
            dtype: "u8".into(),
            shape: vec![H as u64, W as u64, 3],
        }];
        index.streams.push(e);
    }
    if spec.wrist {
        let k = 25;
        let mono: Vec<u8> = (0..k).flat_map(|s| vec![s as u8; H * W]).collect();
        write_stream(
            &dir,
            "wrist",
            (0..k).map(wrist_t).collect(),
            vec![Channel::new(
                "mono",
                Lane::Signal,
                DType::U8,
                vec![H as u64, W as u64],
                mono,
            )],
        );
        index.streams.push(entry("wrist"));
    }
    fs::write(dir.join(index_file_name(id)), index.to_json_bytes()).unwrap();
    let ev = |seq, t_ns, label: &str, data| EventRecord {
        seq,
        t_ns,
        label: label.into(),
        source: "arm".into(),
        data,
    };
    let mut events = Vec::new();
    events.extend(
        ev(
            0,
            T0,
            "instruction",
            EventData::Text(format!("task of {id}")),
        )
        .to_line(),
    );
    events.extend(
        ev(
            1,
            T0 + 5,
            "note",
            EventData::Text("not an instruction".into()),
        )
        .to_line(),
    );
    events.extend(
        ev(
            2,
            T0 + 9,
            "phase",
            EventData::Json(serde_json::json!({"phase": 1})),
        )
        .to_line(),
    );
    fs::write(dir.join(events_file_name(id)), events).unwrap();
    dir
}

/// Every file of a directory (relative name, bytes), sorted.
pub fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                fs::read(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

/// The members `(name, bytes)` of a tar file.
pub fn tar_members(path: &Path) -> Vec<(String, Vec<u8>)> {
    use std::io::Read;
    let mut a = tar::Archive::new(fs::File::open(path).unwrap());
    a.entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().into_owned();
            let mut b = Vec::new();
            e.read_to_end(&mut b).unwrap();
            (name, b)
        })
        .collect()
}
