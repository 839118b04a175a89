//! Small multi-stream episodes for the LeRobot export's tests, written with the format
//! library's own writer: `joints` (100 Hz timestamps, `q` f32[3] signal, `act` f32[2]
//! action), `cam` (10 Hz from 2 ms, `rgb` u8[16, 16, 3], optionally `depth` u16[16, 16]),
//! an `instruction` text event. Every value is a function of (seed, step).

#![allow(clippy::unwrap_used, dead_code)] // tests: a failed unwrap is a failed test

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Map;
use wshard::episode::{Channel, DType, Episode, EpisodeWriteOptions, Lane, Timebase};
use wshard::episode_dir::events::{EventData, EventRecord};
use wshard::episode_dir::index::{
    ChannelEntry, EpisodeIndex, EpisodeStatus, StreamEntry, TIMEBASE_TIMESTAMPS,
};
use wshard::episode_dir::names::{events_file_name, index_file_name, stream_dir};
use wshard::manifest::write_episode_chunked;

pub const JOINT_DT_NS: i64 = 10_000_000;
pub const CAM_DT_NS: i64 = 100_000_000;
pub const CAM_OFFSET_NS: i64 = 2_000_000;
pub const SIDE: u64 = 16;

/// What one episode holds.
#[derive(Clone, Debug)]
pub struct Spec {
    pub id: &'static str,
    pub seed: u8,
    pub joint_steps: usize,
    pub cam_steps: usize,
    pub q_dim: u64,
    pub depth: bool,
    pub rgb: bool,
    pub joints: bool,
    /// A mono picture channel `gray` u8[h, w] on the camera stream.
    pub mono: Option<(u64, u64)>,
    pub cam_offset_ns: i64,
    pub instruction: Option<&'static str>,
    pub status: EpisodeStatus,
}

impl Spec {
    pub fn new(id: &'static str, seed: u8) -> Self {
        Self {
            id,
            seed,
            joint_steps: 100,
            cam_steps: 10,
            q_dim: 3,
            depth: true,
            rgb: true,
            joints: true,
            mono: None,
            cam_offset_ns: CAM_OFFSET_NS,
            instruction: Some("stack the blocks"),
            status: EpisodeStatus::Complete,
        }
    }
}

pub fn q(seed: u8, step: usize, j: usize) -> f32 {
    f32::from(seed) * 10.0 + step as f32 * 0.01 + j as f32 * 0.5
}

pub fn act(seed: u8, step: usize, j: usize) -> f32 {
    -f32::from(seed) + step as f32 * 0.1 + j as f32
}

pub fn rgb(seed: u8, step: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for y in 0..SIDE as usize {
        for x in 0..SIDE as usize {
            out.push(((x * 16 + step * 5) % 256) as u8);
            out.push(((y * 16 + usize::from(seed) * 40) % 256) as u8);
            out.push(((x + y + step) * 4 % 256) as u8);
        }
    }
    out
}

pub fn joint_t(step: usize) -> i64 {
    step as i64 * JOINT_DT_NS
}

pub fn cam_t(step: usize) -> i64 {
    CAM_OFFSET_NS + step as i64 * CAM_DT_NS
}

fn entry(name: &str, dt_ns: i64, channels: Vec<ChannelEntry>) -> StreamEntry {
    StreamEntry {
        name: name.into(),
        manifest: format!("streams/{name}/{name}_manifest.wshard"),
        timebase: TIMEBASE_TIMESTAMPS.into(),
        tick_hz: 1e9 / dt_ns as f64,
        channels,
        producer: "test/1".into(),
        status: EpisodeStatus::Complete,
        steps: 0,
        chunks: 1,
        first_t_ns: None,
        last_t_ns: None,
    }
}

fn channel_entry(c: &Channel) -> ChannelEntry {
    ChannelEntry {
        name: c.id.clone(),
        lane: match c.lane {
            Lane::Signal => "signal".into(),
            Lane::Action => "action".into(),
        },
        dtype: c.dtype.to_string(),
        shape: c.shape.clone(),
    }
}

/// Write `spec` as `data_dir/ID`; its path.
pub fn write(data_dir: &Path, spec: &Spec) -> PathBuf {
    let dir = data_dir.join(spec.id);
    let mut index = EpisodeIndex::new(spec.id, "bench-top", Map::new(), 1);
    index.status = spec.status;
    let t = spec.joint_steps;
    let d = spec.q_dim as usize;
    let mut joints = Episode::new(
        "joints",
        "bench-top",
        Timebase::TimestampsNs {
            dt_ns: JOINT_DT_NS as u64,
        },
    );
    let qv: Vec<f32> = (0..t)
        .flat_map(|s| (0..d).map(move |j| q(spec.seed, s, j)))
        .collect();
    joints.push_channel(Channel::from_f32("q", Lane::Signal, vec![spec.q_dim], &qv).unwrap());
    let av: Vec<f32> = (0..t)
        .flat_map(|s| (0..2).map(move |j| act(spec.seed, s, j)))
        .collect();
    joints.push_channel(Channel::from_f32("act", Lane::Action, vec![2], &av).unwrap());
    joints.set_reward(vec![0.0; t]);
    joints.set_done(vec![false; t]);
    joints.timestamps_ns = Some((0..t).map(joint_t).collect());
    if spec.joints {
        fs::create_dir_all(stream_dir(&dir, "joints")).unwrap();
        write_episode_chunked(
            &joints,
            &stream_dir(&dir, "joints"),
            40,
            &EpisodeWriteOptions::default(),
        )
        .unwrap();
        index.streams.push(entry(
            "joints",
            JOINT_DT_NS,
            joints.channels.iter().map(channel_entry).collect(),
        ));
    }

    let n = spec.cam_steps;
    let mut cam = Episode::new(
        "cam",
        "bench-top",
        Timebase::TimestampsNs {
            dt_ns: CAM_DT_NS as u64,
        },
    );
    if spec.rgb {
        let px: Vec<u8> = (0..n).flat_map(|s| rgb(spec.seed, s)).collect();
        cam.push_channel(Channel::new(
            "rgb",
            Lane::Signal,
            DType::U8,
            vec![SIDE, SIDE, 3],
            px,
        ));
    }
    if spec.depth {
        let depth: Vec<u8> = (0..n * (SIDE * SIDE) as usize)
            .flat_map(|i| (500 + i as u16 % 1000).to_le_bytes())
            .collect();
        cam.push_channel(Channel::new(
            "depth",
            Lane::Signal,
            DType::U16,
            vec![SIDE, SIDE],
            depth,
        ));
    }
    if let Some((h, w)) = spec.mono {
        let px: Vec<u8> = (0..n * (h * w) as usize)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        cam.push_channel(Channel::new(
            "gray",
            Lane::Signal,
            DType::U8,
            vec![h, w],
            px,
        ));
    }
    if !cam.channels.is_empty() {
        cam.set_reward(vec![0.0; n]);
        cam.set_done(vec![false; n]);
        cam.timestamps_ns = Some(
            (0..n)
                .map(|k| spec.cam_offset_ns + k as i64 * CAM_DT_NS)
                .collect(),
        );
        fs::create_dir_all(stream_dir(&dir, "cam")).unwrap();
        write_episode_chunked(
            &cam,
            &stream_dir(&dir, "cam"),
            100,
            &EpisodeWriteOptions::default(),
        )
        .unwrap();
        index.streams.push(entry(
            "cam",
            CAM_DT_NS,
            cam.channels.iter().map(channel_entry).collect(),
        ));
    }
    fs::write(dir.join(index_file_name(spec.id)), index.to_json_bytes()).unwrap();
    let mut events = Vec::new();
    if let Some(text) = spec.instruction {
        events.extend(
            EventRecord {
                seq: 0,
                t_ns: 0,
                label: "instruction".into(),
                source: "joints".into(),
                data: EventData::Text(text.into()),
            }
            .to_line(),
        );
    }
    fs::write(dir.join(events_file_name(spec.id)), events).unwrap();
    dir
}
