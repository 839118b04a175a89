//! `EpisodeDir` over directories written with this crate's own writer (chunks + manifest):
//! today's single-stream layout and the multi-stream layout (index, `streams/*`, events,
//! annotations), read back bit-exact; and every bad input as a typed error.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{json, Map};
use wshard::align::{align_episode, AlignError, AlignOptions, Clock, Policy};
use wshard::codec::{Codec, CompressionPolicy};
use wshard::episode::{Channel, DType, Episode, EpisodeWriteOptions, Lane, Timebase};
use wshard::episode_dir::annotations::{Annotation, Annotations};
use wshard::episode_dir::events::{EventData, EventRecord, EventsError};
use wshard::episode_dir::index::{
    ChannelEntry, EpisodeIndex, EpisodeStatus, IndexError, StreamEntry, TIMEBASE_TICKS,
    TIMEBASE_TIMESTAMPS,
};
use wshard::episode_dir::names::{
    annotations_file_name, events_file_name, index_file_name, stream_dir,
};
use wshard::episode_dir::{EpisodeDir, EpisodeDirError, EventOrigin, Layout};
use wshard::manifest::write_episode_chunked;

/// An episode of `t` steps: `q` f32 [3] and `px` u8 [2] with values from `seed`.
fn episode(
    id: &str,
    timebase: Timebase,
    timestamps: Option<Vec<i64>>,
    t: usize,
    seed: u8,
) -> Episode {
    let mut ep = Episode::new(id, "Env-v0", timebase);
    let q: Vec<f32> = (0..t * 3)
        .map(|i| f32::from(seed) + i as f32 * 0.5)
        .collect();
    ep.push_channel(Channel::from_f32("q", Lane::Signal, vec![3], &q).unwrap());
    let px: Vec<u8> = (0..t * 2).map(|i| (i as u8).wrapping_mul(seed)).collect();
    ep.push_channel(Channel::new("px", Lane::Action, DType::U8, vec![2], px));
    ep.set_reward(vec![0.0; t]);
    ep.set_done(vec![false; t]);
    ep.timestamps_ns = timestamps;
    ep
}

fn zstd() -> EpisodeWriteOptions {
    EpisodeWriteOptions {
        default_codec: Codec::zstd(),
        policy: CompressionPolicy::any_smaller(),
        ..EpisodeWriteOptions::default()
    }
}

fn channel_bytes(ep: &Episode, name: &str) -> Vec<u8> {
    ep.channels
        .iter()
        .find(|c| c.id == name)
        .map(|c| c.data.clone())
        .unwrap()
}

fn entry(name: &str, timebase: &str, tick_hz: f64, chunks: u64) -> StreamEntry {
    StreamEntry {
        name: name.into(),
        manifest: format!("streams/{name}/{name}_manifest.wshard"),
        timebase: timebase.into(),
        tick_hz,
        channels: vec![ChannelEntry {
            name: "q".into(),
            lane: "signal".into(),
            dtype: "f32".into(),
            shape: vec![3],
        }],
        producer: "test/1".into(),
        status: EpisodeStatus::Complete,
        steps: 0,
        chunks,
        first_t_ns: None,
        last_t_ns: None,
    }
}

struct Multi {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    joints: Episode,
    cam: Episode,
}

/// `EP/`: `joints` (timestamps_ns, 7 steps in chunks of 3, zstd), `cam` (ticks 10 Hz, one
/// uncompressed chunk of 4 steps), `late` (listed, not started), events and annotations.
fn multi() -> Multi {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("EP");
    fs::create_dir_all(stream_dir(&dir, "joints")).unwrap();
    fs::create_dir_all(stream_dir(&dir, "cam")).unwrap();
    let joints = episode(
        "joints",
        Timebase::TimestampsNs { dt_ns: 1_000_000 },
        Some(vec![
            5, 1_000_005, 2_000_000, 2_000_000, 3_500_000, 4_000_000, 9_000_000,
        ]),
        7,
        3,
    );
    write_episode_chunked(&joints, &stream_dir(&dir, "joints"), 3, &zstd()).unwrap();
    let cam = episode("cam", Timebase::ticks(10.0), None, 4, 7);
    write_episode_chunked(
        &cam,
        &stream_dir(&dir, "cam"),
        100,
        &EpisodeWriteOptions::default(),
    )
    .unwrap();
    let mut index = EpisodeIndex::new("EP", "Env-v0", Map::new(), 1);
    index.status = EpisodeStatus::Complete;
    index
        .streams
        .push(entry("joints", TIMEBASE_TIMESTAMPS, 0.0, 3));
    index.streams.push(entry("cam", TIMEBASE_TICKS, 10.0, 1));
    let mut late = entry("late", TIMEBASE_TICKS, 5.0, 0);
    late.status = EpisodeStatus::Recording;
    index.streams.push(late);
    fs::write(dir.join(index_file_name("EP")), index.to_json_bytes()).unwrap();
    let ev = |seq, t_ns, data| EventRecord {
        seq,
        t_ns,
        label: "instruction".into(),
        source: "joints".into(),
        data,
    };
    let mut events = Vec::new();
    events.extend(ev(0, 300, EventData::Text("pick".into())).to_line());
    events.extend(ev(1, 100, EventData::Binary(vec![1, 2, 3])).to_line());
    events.extend(b"{\"data\":\"torn");
    fs::write(dir.join(events_file_name("EP")), events).unwrap();
    let mut ann = Annotations::new("EP");
    ann.annotations.push(Annotation {
        seq: 0,
        t_ns: 100,
        label: "success".into(),
        data: EventData::Json(json!({"score": 1})),
        author: "uid 1000".into(),
        created_unix_ns: 2,
    });
    fs::write(dir.join(annotations_file_name("EP")), ann.to_json_bytes()).unwrap();
    Multi {
        _tmp: tmp,
        dir,
        joints,
        cam,
    }
}

#[test]
fn multirate_reader_multi_stream_layout_reads_back_bit_exact() {
    let m = multi();
    let ep = EpisodeDir::open(&m.dir).unwrap();
    assert_eq!(ep.layout(), Layout::MultiStream);
    assert_eq!(ep.episode_id(), "EP");
    assert_eq!(ep.status(), Some(EpisodeStatus::Complete));
    let names: Vec<&str> = ep.streams().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["joints", "cam", "late"]);

    let j = ep.stream("joints").unwrap();
    assert_eq!((j.steps, j.chunks), (7, 3));
    assert_eq!((j.first_t_ns, j.last_t_ns), (Some(5), Some(9_000_000)));
    assert_eq!(j.producer.as_deref(), Some("test/1"));
    assert_eq!(j.channels.len(), 2);
    let c = ep.stream("cam").unwrap();
    assert_eq!((c.first_t_ns, c.last_t_ns), (Some(0), Some(300_000_000)));
    assert_eq!(c.timebase, Some(Timebase::ticks(10.0)));
    let l = ep.stream("late").unwrap();
    assert!(l.manifest_missing);
    assert_eq!((l.steps, l.status), (0, Some(EpisodeStatus::Recording)));

    let jd = ep.read_stream("joints").unwrap();
    assert_eq!(
        jd.timestamps_ns(),
        m.joints.timestamps_ns.as_deref().unwrap()
    );
    for name in ["q", "px"] {
        let ch = jd.channel(name).unwrap();
        assert_eq!(ch.to_contiguous().as_ref(), channel_bytes(&m.joints, name));
        assert_eq!(ch.segments().count(), 3);
        assert!(ch.contiguous().is_none());
    }
    let cd = ep.read_stream("cam").unwrap();
    assert_eq!(
        cd.timestamps_ns(),
        [0, 100_000_000, 200_000_000, 300_000_000]
    );
    let q = cd.channel("q").unwrap();
    assert!(q.is_zero_copy(), "one uncompressed chunk is read in place");
    assert_eq!(q.contiguous().unwrap(), channel_bytes(&m.cam, "q"));
    assert_eq!(q.dtype, DType::F32);
    assert_eq!(cd.channel("px").unwrap().lane, Lane::Action);
    let ld = ep.read_stream("late").unwrap();
    assert_eq!((ld.steps(), ld.channels().len()), (0, 1));

    // Events: merged with the annotation, sorted by t_ns (producer events first at equal
    // times); the torn last line ignored.
    assert_eq!(ep.torn_event_bytes(), 13);
    let ev: Vec<(i64, bool)> = ep
        .events()
        .iter()
        .map(|e| (e.t_ns, e.is_annotation()))
        .collect();
    assert_eq!(ev, [(100, false), (100, true), (300, false)]);
    assert_eq!(ep.events()[0].data, EventData::Binary(vec![1, 2, 3]));
    assert!(
        matches!(&ep.events()[1].origin, EventOrigin::Operator { author, .. } if author == "uid 1000")
    );
}

#[test]
fn multirate_reader_aligned_at_camera_clock() {
    let m = multi();
    let ep = EpisodeDir::open(&m.dir).unwrap();
    let mut opts = AlignOptions::new(Clock::Stream("cam".into()))
        .with_policy("joints/q", Policy::Linear)
        .with_max_staleness_ns(1_000_000);
    opts.channels = Some(vec!["joints/q".into(), "cam/px".into()]);
    let t = align_episode(&ep, &opts).unwrap();
    assert_eq!(t.t_ns, [0, 100_000_000, 200_000_000, 300_000_000]);
    let q = t.column("joints/q").unwrap();
    assert_eq!(q.dtype, DType::F32);
    // 0 is before joints starts; the others are after it ends (no later neighbour).
    assert_eq!(q.valid, [false; 4]);
    let px = t.column("cam/px").unwrap();
    assert_eq!(px.values, channel_bytes(&m.cam, "px"));
    assert_eq!(px.valid, [true; 4]);

    let opts = AlignOptions::new(Clock::Rate {
        hz: 1000.0,
        start_ns: Some(2_000_000),
        end_ns: Some(4_000_000),
    })
    .with_policy("joints/q", Policy::Nearest);
    let mut opts = opts;
    opts.channels = Some(vec!["joints/q".into()]);
    let t = align_episode(&ep, &opts).unwrap();
    let q = t.column("joints/q").unwrap();
    // Two samples share 2_000_000: the later one (row 3) stands for it.
    assert_eq!(q.source_row, [3, 4, 5]);
    assert_eq!(q.source_t_ns, [2_000_000, 3_500_000, 4_000_000]);
    assert_eq!(q.row(0).unwrap(), &channel_bytes(&m.joints, "q")[36..48]);
}

#[test]
fn multirate_reader_single_stream_layout_is_stream_main() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ep_0001");
    fs::create_dir_all(&dir).unwrap();
    let ep = episode("ep_0001", Timebase::ticks(100.0), None, 10, 5);
    write_episode_chunked(&ep, &dir, 4, &EpisodeWriteOptions::default()).unwrap();
    let e = EventRecord {
        seq: 0,
        t_ns: 20_000_000,
        label: "note".into(),
        source: "client".into(),
        data: EventData::Json(json!([1, 2])),
    };
    fs::write(dir.join(events_file_name("ep_0001")), e.to_line()).unwrap();

    let d = EpisodeDir::open(&dir).unwrap();
    assert_eq!(d.layout(), Layout::SingleStream);
    assert!(d.index().is_none());
    assert_eq!(d.status(), Some(EpisodeStatus::Complete));
    let s = &d.streams()[0];
    assert_eq!(s.name, "main");
    assert_eq!((s.steps, s.chunks), (10, 3));
    assert_eq!((s.first_t_ns, s.last_t_ns), (Some(0), Some(90_000_000)));
    assert_eq!(d.events().len(), 1);
    let data = d.read_stream("main").unwrap();
    let q = data.channel("q").unwrap();
    assert!(q.is_zero_copy());
    assert_eq!(q.segments().count(), 3);
    assert_eq!(q.to_contiguous().as_ref(), channel_bytes(&ep, "q"));
    assert_eq!(q.step(9).unwrap(), &channel_bytes(&ep, "q")[9 * 12..]);
    let ts: Vec<i64> = (0..10).map(|k| k * 10_000_000).collect();
    assert_eq!(data.timestamps_ns(), ts);

    // A renamed copy is found by its one manifest.
    let moved = tmp.path().join("copy");
    fs::rename(&dir, &moved).unwrap();
    let d = EpisodeDir::open(&moved).unwrap();
    assert_eq!(d.episode_id(), "ep_0001");
}

fn open_err(dir: &Path) -> EpisodeDirError {
    EpisodeDir::open(dir).unwrap_err()
}

fn rewrite_index(dir: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join(index_file_name("EP"));
    let mut v: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    f(&mut v);
    fs::write(path, serde_json::to_vec(&v).unwrap()).unwrap();
}

#[test]
fn multirate_reader_missing_stream_is_typed() {
    let m = multi();
    let ep = EpisodeDir::open(&m.dir).unwrap();
    let e = ep.read_stream("imu").unwrap_err();
    assert!(
        matches!(&e, EpisodeDirError::UnknownStream { stream, available, .. }
            if stream == "imu" && available == "joints, cam, late"),
        "{e}"
    );
    let e = align_episode(&ep, &AlignOptions::new(Clock::Stream("imu".into()))).unwrap_err();
    assert!(matches!(e, AlignError::UnknownClockStream { .. }), "{e}");

    // Listed with chunks but its folder is gone.
    fs::remove_dir_all(stream_dir(&m.dir, "cam")).unwrap();
    let e = open_err(&m.dir);
    assert!(
        matches!(&e, EpisodeDirError::MissingManifest { stream, chunks: 1, .. } if stream == "cam"),
        "{e}"
    );
}

#[test]
fn multirate_reader_bad_index_json_is_typed() {
    let m = multi();
    let path = m.dir.join(index_file_name("EP"));
    let good = fs::read(&path).unwrap();
    fs::write(&path, &good[..good.len() / 2]).unwrap();
    let e = open_err(&m.dir);
    assert!(
        matches!(e, EpisodeDirError::Index(IndexError::Json { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("EP_index.json"), "{e}");

    fs::write(&path, &good).unwrap();
    rewrite_index(&m.dir, |v| v["streams"][1]["steps"] = json!("many"));
    let e = open_err(&m.dir);
    assert!(e.to_string().contains("field `streams[1].steps`"), "{e}");

    fs::write(&path, &good).unwrap();
    rewrite_index(&m.dir, |v| v["streams"][0]["name"] = json!("../joints"));
    assert!(matches!(
        open_err(&m.dir),
        EpisodeDirError::BadStreamName { position: 0, .. }
    ));

    fs::write(&path, &good).unwrap();
    rewrite_index(&m.dir, |v| {
        v["streams"][0]["manifest"] = json!("streams/joints/../../../etc/x.wshard");
    });
    assert!(matches!(
        open_err(&m.dir),
        EpisodeDirError::BadManifestPath { .. }
    ));

    fs::write(&path, &good).unwrap();
    rewrite_index(&m.dir, |v| v["events_file"] = json!("/etc/passwd"));
    let e = open_err(&m.dir);
    assert!(e.to_string().contains("field `events_file`"), "{e}");

    fs::remove_file(&path).unwrap();
    let e = open_err(&m.dir);
    assert!(matches!(e, EpisodeDirError::NotAnEpisode { .. }), "{e}");
}

#[test]
fn multirate_reader_torn_events_line_is_ignored() {
    let m = multi();
    let path = m.dir.join(events_file_name("EP"));
    let bytes = fs::read(&path).unwrap();
    // Only the torn tail: no complete line at all.
    let first_nl = bytes.iter().position(|&b| b == b'\n').unwrap();
    fs::write(&path, &bytes[..first_nl]).unwrap();
    let ep = EpisodeDir::open(&m.dir).unwrap();
    assert_eq!(ep.torn_event_bytes(), first_nl as u64);
    assert_eq!(ep.events().len(), 1, "only the annotation");
}

#[test]
fn multirate_reader_corrupt_middle_events_line_is_typed() {
    let m = multi();
    let path = m.dir.join(events_file_name("EP"));
    let mut bytes = fs::read(&path).unwrap();
    let first_nl = bytes.iter().position(|&b| b == b'\n').unwrap();
    bytes[first_nl + 1] = b'#';
    fs::write(&path, &bytes).unwrap();
    let e = open_err(&m.dir);
    match &e {
        EpisodeDirError::Events(EventsError::Json { line, offset, .. }) => {
            assert_eq!((*line, *offset), (2, first_nl as u64 + 1));
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("EP_events.jsonl: line 2"), "{e}");
}

#[test]
fn multirate_reader_corrupt_chunk_names_the_stream() {
    let m = multi();
    let chunk = stream_dir(&m.dir, "cam").join("cam_chunk_0000.wshard");
    let ep = EpisodeDir::open(&m.dir).unwrap();
    let mut bytes = fs::read(&chunk).unwrap();
    // Flip a byte of the `signal/q` data (uncompressed: read in place, CRC checked).
    let q = channel_bytes(&m.cam, "q");
    let at = bytes
        .windows(q.len())
        .position(|w| w == q.as_slice())
        .unwrap();
    bytes[at] ^= 0xff;
    fs::write(&chunk, &bytes).unwrap();
    let e = ep.read_stream("cam").unwrap_err();
    assert!(
        matches!(&e, EpisodeDirError::Format { stream, .. } if stream == "cam"),
        "{e}"
    );
    assert!(e.to_string().contains("crc32c"), "{e}");
}

/// The Python binding hands these across threads (and releases the GIL while reading).
#[test]
fn multirate_reader_types_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<EpisodeDir>();
    check::<wshard::episode_dir::StreamData>();
    check::<wshard::episode_dir::ChannelData>();
    check::<wshard::align::AlignedTable>();
    check::<EpisodeDirError>();
    check::<AlignError>();
}
