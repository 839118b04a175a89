//! Episodes for the MCAP export tests, written with the format library's own writer
//! (chunks + manifest per stream, the index, events, annotations), and the MCAP file read
//! back with the `mcap` crate's reader.

#![allow(dead_code, clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use wshard::codec::{Codec, CompressionPolicy};
use wshard::episode::{Channel, Episode, EpisodeWriteOptions, Timebase};
use wshard::episode_dir::annotations::{Annotation, Annotations};
use wshard::episode_dir::events::EventRecord;
use wshard::episode_dir::index::{
    EpisodeIndex, EpisodeStatus, StreamEntry, TIMEBASE_TICKS, TIMEBASE_TIMESTAMPS,
};
use wshard::episode_dir::names::{
    annotations_file_name, events_file_name, index_file_name, stream_dir,
};
use wshard::manifest::write_episode_chunked;

/// A stream: its name, timebase, timestamps (for `timestamps_ns`), channels, steps.
pub struct Stream {
    pub name: &'static str,
    pub timebase: Timebase,
    pub timestamps: Option<Vec<i64>>,
    pub channels: Vec<Channel>,
    pub steps: usize,
    /// Steps per chunk file.
    pub chunk: u64,
}

impl Stream {
    pub fn episode(&self) -> Episode {
        let mut ep = Episode::new(self.name, "Env-v0", self.timebase);
        for c in &self.channels {
            ep.push_channel(c.clone());
        }
        ep.set_reward(vec![0.0; self.steps]);
        ep.set_done(vec![false; self.steps]);
        ep.timestamps_ns = self.timestamps.clone();
        ep
    }
}

fn zstd() -> EpisodeWriteOptions {
    EpisodeWriteOptions {
        default_codec: Codec::zstd(),
        policy: CompressionPolicy::any_smaller(),
        ..EpisodeWriteOptions::default()
    }
}

/// Write multi-stream episode `id` under `data_dir`; its directory.
pub fn write_episode(
    data_dir: &Path,
    id: &str,
    status: EpisodeStatus,
    streams: &[Stream],
    events: &[EventRecord],
    annotations: &[Annotation],
) -> PathBuf {
    let dir = data_dir.join(id);
    let mut index = EpisodeIndex::new(id, "Env-v0", meta(), 1_234);
    index.status = status;
    for s in streams {
        fs::create_dir_all(stream_dir(&dir, s.name)).unwrap();
        let m = write_episode_chunked(&s.episode(), &stream_dir(&dir, s.name), s.chunk, &zstd())
            .unwrap();
        let (timebase, tick_hz) = match s.timebase {
            Timebase::Ticks { tick_hz } => (TIMEBASE_TICKS, tick_hz),
            Timebase::TimestampsNs { .. } => (TIMEBASE_TIMESTAMPS, 0.0),
        };
        index.streams.push(StreamEntry {
            name: s.name.into(),
            manifest: format!("streams/{0}/{0}_manifest.wshard", s.name),
            timebase: timebase.into(),
            tick_hz,
            channels: Vec::new(),
            producer: "test/1".into(),
            status: EpisodeStatus::Complete,
            steps: s.steps as u64,
            chunks: m.chunks.len() as u64,
            first_t_ns: None,
            last_t_ns: None,
        });
    }
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join(index_file_name(id)), index.to_json_bytes()).unwrap();
    if !events.is_empty() {
        let lines: Vec<u8> = events.iter().flat_map(EventRecord::to_line).collect();
        fs::write(dir.join(events_file_name(id)), lines).unwrap();
    }
    if !annotations.is_empty() {
        let mut a = Annotations::new(id);
        a.annotations = annotations.to_vec();
        fs::write(dir.join(annotations_file_name(id)), a.to_json_bytes()).unwrap();
    }
    dir
}

/// The index metadata of every test episode.
pub fn meta() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("operator".into(), Value::from("tests"));
    m.insert("take".into(), Value::from(3));
    m
}

/// A one-stream episode `id` (`s`: f32 [2], 3 steps at `t0`, `t0`+10, `t0`+20 ns).
pub fn small_episode(data_dir: &Path, id: &str, status: EpisodeStatus, t0: i64) -> PathBuf {
    let v: Vec<f32> = (0..6).map(|i| i as f32).collect();
    let s = Stream {
        name: "s",
        timebase: Timebase::TimestampsNs { dt_ns: 10 },
        timestamps: Some(vec![t0, t0 + 10, t0 + 20]),
        channels: vec![Channel::from_f32("x", wshard::episode::Lane::Signal, vec![2], &v).unwrap()],
        steps: 3,
        chunk: 100,
    };
    write_episode(data_dir, id, status, &[s], &[], &[])
}

/// One message read back.
#[derive(Debug, Clone)]
pub struct Msg {
    pub topic: String,
    pub schema: String,
    pub sequence: u32,
    pub log_time: u64,
    pub publish_time: u64,
    pub json: Value,
}

/// An MCAP file read back with the `mcap` crate: every message in file order, the
/// summary, the metadata records by name.
pub struct Read {
    pub messages: Vec<Msg>,
    pub summary: mcap::Summary,
    pub metadata: BTreeMap<String, BTreeMap<String, String>>,
}

pub fn read_mcap(path: &Path) -> Read {
    let bytes = fs::read(path).unwrap();
    let mut messages = Vec::new();
    for m in mcap::MessageStream::new(&bytes).unwrap() {
        let m = m.unwrap();
        assert_eq!(m.channel.message_encoding, "json");
        let schema = m.channel.schema.as_ref().unwrap();
        assert_eq!(schema.encoding, "jsonschema");
        let _: Value = serde_json::from_slice(&schema.data).unwrap();
        messages.push(Msg {
            topic: m.channel.topic.clone(),
            schema: schema.name.clone(),
            sequence: m.sequence,
            log_time: m.log_time,
            publish_time: m.publish_time,
            json: serde_json::from_slice(&m.data).unwrap(),
        });
    }
    let summary = mcap::Summary::read(&bytes).unwrap().unwrap();
    let mut metadata = BTreeMap::new();
    for idx in &summary.metadata_indexes {
        let m = mcap::read::metadata(&bytes, idx).unwrap();
        metadata.insert(m.name.clone(), m.metadata.clone());
    }
    Read {
        messages,
        summary,
        metadata,
    }
}

impl Read {
    pub fn topic(&self, topic: &str) -> Vec<&Msg> {
        self.messages.iter().filter(|m| m.topic == topic).collect()
    }

    pub fn topics(&self) -> Vec<String> {
        let mut t: Vec<String> = self
            .summary
            .channels
            .values()
            .map(|c| c.topic.clone())
            .collect();
        t.sort();
        t
    }

    pub fn compressions(&self) -> Vec<String> {
        let mut c: Vec<String> = self
            .summary
            .chunk_indexes
            .iter()
            .map(|c| c.compression.clone())
            .collect();
        c.sort();
        c.dedup();
        c
    }
}
