//! Driving a multi-stream episode (`MultiEpisode` with two stream `Session`s, events, the
//! owner's close) over a [`SimFs`], and the checks after a power cut and recovery: the
//! index agrees with the streams' manifests, every acknowledged timestep of every stream
//! and every acknowledged event is there.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Map;
use wshard::episode_dir::events::{parse_events, EventData};
use wshard::episode_dir::index::{EpisodeIndex, EpisodeStatus};
use wshard::episode_dir::names::{events_file_name, index_file_name};
use wshard::manifest::{read_episode_chunked, Manifest};
use wshard::read::ShardReader;
use wshard_ingest_proto::{OpenEpisode, TimebaseSpec};
use wshard_recorder::episode::{Durability, EpisodeSchema};
use wshard_recorder::episode_files::NewEvent;
use wshard_recorder::multi::schema::stream_entry;
use wshard_recorder::multi::{MultiEpisode, NewMulti, StreamEnd};
use wshard_recorder::session::{FinalStatus, FsyncPolicy, Session, SessionSettings};
use wshard_storage::fsio::sim::SimFs;
use wshard_storage::fsio::Fs;
use wshard_storage::layout::EpisodeLayout;

use crate::sim_harness::{check_values, data_dir, records, schema, Client, Scenario};

/// The multi-stream episode every scenario records.
pub const MEP: &str = "mep";

/// The episode's directory in the sim.
pub fn mep_dir() -> PathBuf {
    data_dir().join(MEP)
}

/// Stream `name`'s schema (the sim harness's channels), in episode [`MEP`].
pub fn stream_schema(name: &str, durability: Durability) -> EpisodeSchema {
    let mut s = schema(durability);
    s.episode_id = name.to_owned();
    s.in_episode(MEP)
}

/// What the producers and the owner were told before the cut.
#[derive(Debug, Default)]
pub struct Acked {
    /// The episode was created (`ACCEPTED{EPISODE_OPEN}`).
    pub created: bool,
    /// Streams acknowledged (`ACCEPTED{STREAM_OPEN}`), with their highest DURABLE.
    pub streams: Vec<(String, u64)>,
    /// `(seq, t_ns)` of every event acknowledged.
    pub events: Vec<(u64, i64)>,
    /// The episode finalized (its index committed final).
    pub finalized: bool,
}

/// The recording: streams `a` (class `ack`) and `b` (`chunk`) of 20 and 12 timesteps in
/// batches, chunks of 8, an event after each round, then each stream closed and the
/// episode closed.
pub fn settings() -> SessionSettings {
    Scenario::standard("multirate", Durability::Ack, FsyncPolicy::Always).settings()
}

fn event(t_ns: i64, i: u64) -> NewEvent {
    NewEvent {
        t_ns,
        label: "marker".into(),
        source: "a".into(),
        data: EventData::Text(format!("event {i}")).into(),
    }
}

/// A stream of [`MEP`] recording: its name, its session, and what its producer was told.
pub type OpenStream = (&'static str, Session, Arc<Client>);

/// Create [`MEP`] on `sim` and join `streams` (name, class) to it, each with its session (a
/// stream whose session cannot be opened is ended `interrupted`); `None` when the episode
/// cannot be created. Never panics on storage errors.
pub fn open_multi(
    sim: &SimFs,
    streams: &[(&'static str, Durability)],
) -> Option<(Arc<MultiEpisode>, Vec<OpenStream>)> {
    let fs: Arc<dyn Fs> = Arc::new(sim.clone());
    let new = NewMulti {
        episode_id: MEP.into(),
        env_id: "SimEnv-v0".into(),
        metadata: Map::new(),
        created_unix_ns: 1,
    };
    let ep = MultiEpisode::create(fs.clone(), &data_dir(), new).ok()?;
    let mut sessions = Vec::new();
    for &(name, durability) in streams {
        let schema = stream_schema(name, durability);
        let entry = stream_entry(&schema, 100.0, "sim");
        let requested = OpenEpisode::new(name, "", TimebaseSpec::Ticks { tick_hz: 100.0 });
        let Ok(layout) = ep.join(entry, requested) else {
            continue;
        };
        let client = Arc::new(Client::new(sim));
        match Session::open_at(fs.clone(), layout, schema, settings(), client.clone()) {
            Ok(s) => sessions.push((name, s, client)),
            Err(_) => {
                let _ = ep.end_stream(name, ended(EpisodeStatus::Interrupted, 0, 0));
            }
        }
    }
    Some((ep, sessions))
}

/// Record the multi-stream scenario on `sim` (a crash may be armed). Never panics on
/// storage errors.
pub fn record_multi(sim: &SimFs) -> Acked {
    let mut acked = Acked::default();
    let Some((ep, sessions)) = open_multi(sim, &[("a", Durability::Ack), ("b", Durability::Chunk)])
    else {
        return acked;
    };
    acked.created = true;
    let mut sent = [0u64; 2];
    for round in 0..4u64 {
        for (i, (_, s, _)) in sessions.iter().enumerate() {
            let n = if i == 0 { 5 } else { 3 };
            if s.submit(records(sent[i], n), n) {
                sent[i] += n;
            }
            s.flush();
        }
        let t_ns = 1_700_000_000_000_000_000 + round as i64;
        if let Ok(seq) = ep.record_event(event(t_ns, round)) {
            acked.events.push((seq, t_ns));
        }
    }
    for (name, s, client) in sessions {
        let summary = s.close(FinalStatus::Complete);
        acked.streams.push((name.to_owned(), client.acked()));
        let status = if summary.failure.is_some() {
            EpisodeStatus::Interrupted
        } else {
            EpisodeStatus::Complete
        };
        let p = ep.end_stream(name, ended(status, summary.timesteps, summary.chunks));
        acked.finalized |= p.finalized && p.index_error.is_none();
    }
    let p = ep.close(EpisodeStatus::Complete);
    acked.finalized |= p.finalized && p.index_error.is_none();
    acked
}

/// How a stream ended, for its index entry (no `t_ns` range).
pub fn ended(status: EpisodeStatus, steps: u64, chunks: u64) -> StreamEnd {
    StreamEnd {
        status,
        steps,
        chunks,
        first_t_ns: None,
        last_t_ns: None,
    }
}

/// The index of [`MEP`] in `fs`.
pub fn read_index(fs: &SimFs) -> Option<EpisodeIndex> {
    read_index_of(fs, MEP)
}

/// The index of multi-stream episode (or part) `id` in `fs`.
pub fn read_index_of(fs: &SimFs, id: &str) -> Option<EpisodeIndex> {
    let path = data_dir().join(id).join(index_file_name(id));
    let bytes = fs.read(&path).ok()?;
    Some(
        EpisodeIndex::from_json_bytes(&bytes, &path)
            .unwrap_or_else(|e| panic!("{id}: index unreadable after recovery: {e}")),
    )
}

/// The manifest at `layout` in `fs`, if there is one.
pub fn manifest(fs: &SimFs, layout: &EpisodeLayout) -> Option<Manifest> {
    let bytes = fs.read(&layout.manifest()).ok()?;
    Some(Manifest::read(&ShardReader::from_bytes(bytes).ok()?).expect("manifest"))
}

/// Files under `dir` whose names end with one of the suffixes of half-done work.
fn half_done(fs: &SimFs, dir: &Path) -> Vec<String> {
    fs.files(dir)
        .map(|m| {
            m.keys()
                .map(|p| p.display().to_string())
                .filter(|n| [".partial", ".wal", ".tmp"].iter().any(|s| n.ends_with(s)))
                .collect()
        })
        .unwrap_or_default()
}

/// After recovery of `fs`: the checks of the module doc. `ctx` names the image.
pub fn check_multi(fs: &SimFs, acked: &Acked, ctx: &str) {
    let left = half_done(fs, &mep_dir());
    assert!(left.is_empty(), "{ctx}: left after recovery: {left:?}");
    let Some(index) = read_index(fs) else {
        assert!(
            !acked.created,
            "{ctx}: the episode was created but has no index"
        );
        return;
    };
    assert_ne!(index.status, EpisodeStatus::Recording, "{ctx}: not final");
    if acked.finalized {
        assert_eq!(index.status, EpisodeStatus::Complete, "{ctx}");
    }
    for s in &index.streams {
        let layout = EpisodeLayout::stream(&data_dir(), MEP, &s.name);
        let m =
            manifest(fs, &layout).unwrap_or_else(|| panic!("{ctx}: {} has no manifest", s.name));
        assert_eq!(
            (
                m.total_timesteps,
                m.chunks.len() as u64,
                m.status.as_deref()
            ),
            (s.steps, s.chunks, Some(s.status.as_str())),
            "{ctx}: stream {} in the index vs its manifest",
            s.name
        );
    }
    let exported = tempfile::tempdir().expect("tempdir");
    fs.export_to(&data_dir(), exported.path()).expect("export");
    for (name, durable) in &acked.streams {
        let entry = index
            .stream(name)
            .unwrap_or_else(|| panic!("{ctx}: acknowledged stream {name} not listed"));
        assert!(
            entry.steps >= *durable,
            "{ctx}: {name}: {} steps, {durable} DURABLE",
            entry.steps
        );
        if entry.steps > 0 {
            let path = EpisodeLayout::stream(exported.path(), MEP, name).manifest();
            let ep = read_episode_chunked(&path).unwrap_or_else(|e| panic!("{ctx}: {name}: {e}"));
            assert_eq!(ep.length, entry.steps, "{ctx}: {name}");
            check_values(&ep, &format!("{ctx}: {name}"));
        }
    }
    let events_path = mep_dir().join(events_file_name(MEP));
    let events = match fs.read(&events_path) {
        Ok(bytes) => {
            let parsed = parse_events(&bytes, &events_path)
                .unwrap_or_else(|e| panic!("{ctx}: events unreadable: {e}"));
            assert_eq!(
                parsed.torn_tail_bytes, 0,
                "{ctx}: a torn events tail is left"
            );
            parsed.events
        }
        Err(_) => Vec::new(),
    };
    for (seq, t_ns) in &acked.events {
        assert!(
            events.iter().any(|e| e.seq == *seq && e.t_ns == *t_ns),
            "{ctx}: acknowledged event {seq} lost ({} events found)",
            events.len()
        );
    }
}
