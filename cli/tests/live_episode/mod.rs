//! Crash-like episode directories for the CLI tests: record with the in-process `Session`
//! (as the daemon does), then copy the episode directory while the session is still open,
//! which is what `kill -9` leaves behind.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wshard::codec::Codec;
use wshard::episode::{DType, Lane, Timebase};
use wshard::manifest::Manifest;
use wshard_ingest_proto::push_step_record;
use wshard_recorder::episode::{Durability, EpisodeSchema};
use wshard_recorder::session::{
    FinalStatus, FsyncPolicy, Responder, Rotation, Session, SessionSettings,
};
use wshard_storage::fsio::RealFs;
use wshard_storage::layout::EpisodeLayout;

/// The episode id every helper here records.
pub const EPISODE: &str = "ep";

#[derive(Default)]
struct Acks(Mutex<u64>);

impl Responder for Acks {
    fn durable(&self, up_to_seq: u64) {
        if let Ok(mut a) = self.0.lock() {
            *a = up_to_seq;
        }
    }
    fn storage_failed(&self, _: &str) {}
}

/// The payload of timestep `i`: eight f32 (`state`, shape [8]).
pub fn payload(i: u64) -> Vec<u8> {
    #[allow(clippy::cast_precision_loss)]
    (0..8)
        .flat_map(|j| ((i * 8 + j) as f32).to_le_bytes())
        .collect()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(t.elapsed() < Duration::from_secs(20), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Record `steps` timesteps in batches of `batch` into `live/ep`, rotating every
/// `max_ts`, wait until every one is durable and every full chunk is published (and its
/// journal deleted), then copy `live/ep` to `crashed/ep` and close the session.
pub fn record_and_crash(live: &Path, crashed: &Path, max_ts: u64, steps: u64, batch: u64) {
    let schema = EpisodeSchema::new(
        EPISODE.into(),
        "Env".into(),
        Timebase::ticks(100.0),
        Durability::Ack,
        vec![(
            "state".into(),
            Lane::Signal,
            DType::F32,
            vec![8],
            Codec::zstd(),
            None,
        )],
        serde_json::Map::new(),
    )
    .expect("schema");
    let settings = SessionSettings {
        fsync: FsyncPolicy::Always,
        rotation: Rotation {
            max_timesteps: max_ts,
            max_bytes: 1 << 30,
            max_age: Duration::from_secs(3600),
        },
        ..SessionSettings::default()
    };
    let acks = Arc::new(Acks::default());
    let s = Session::open(Arc::new(RealFs), live, schema, settings, acks.clone()).expect("open");
    let mut seq = 0;
    while seq < steps {
        let n = batch.min(steps - seq);
        let mut rec = Vec::new();
        for i in seq..seq + n {
            #[allow(clippy::cast_possible_wrap)]
            push_step_record(&mut rec, i, i as i64 * 1000, 0.5, false, &[&payload(i)]);
        }
        assert!(s.submit(rec, n));
        seq += n;
    }
    wait_for("durable", || acks.0.lock().is_ok_and(|a| *a >= steps));
    let layout = EpisodeLayout::new(live, EPISODE);
    let full = steps / max_ts;
    wait_for("published chunks", || {
        let listed = Manifest::read_file(layout.manifest()).map_or(0, |m| m.chunks.len() as u64);
        listed >= full && (0..full).all(|k| !layout.journal(k).exists())
    });
    let to = crashed.join(EPISODE);
    std::fs::create_dir_all(&to).expect("create snapshot dir");
    for e in std::fs::read_dir(live.join(EPISODE)).expect("list live dir") {
        let p = e.expect("dir entry").path();
        let name = p.file_name().expect("file name").to_owned();
        std::fs::copy(&p, to.join(name)).expect("copy");
    }
    let _ = s.close(FinalStatus::Complete);
}

/// Every file under `dir` with its bytes.
pub fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("list") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).expect("read");
                out.insert(p, bytes);
            }
        }
    }
    out
}
