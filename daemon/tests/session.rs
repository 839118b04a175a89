//! The session (writer + publisher threads) on real files, without a socket: what it
//! acknowledges, how it rotates, what it leaves on disk.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::sync::{Arc, Mutex};
use std::time::Duration;

use wshard::codec::Codec;
use wshard::episode::{DType, Lane, Timebase};
use wshard::manifest::{read_episode_chunked, Manifest};
use wshard_ingest_proto::push_step_record;
use wshard_recorder::episode::{Durability, EpisodeSchema};
use wshard_recorder::session::{
    FinalStatus, FsyncPolicy, Responder, Rotation, Session, SessionSettings,
};
use wshard_storage::fsio::RealFs;
use wshard_storage::layout::EpisodeLayout;

#[derive(Default)]
struct Recorded {
    durable: Mutex<Vec<u64>>,
    errors: Mutex<Vec<String>>,
}

impl Responder for Recorded {
    fn durable(&self, up_to_seq: u64) {
        self.durable.lock().unwrap().push(up_to_seq);
    }
    fn storage_failed(&self, message: &str) {
        self.errors.lock().unwrap().push(message.to_owned());
    }
}

fn schema(id: &str, durability: Durability) -> EpisodeSchema {
    EpisodeSchema::new(
        id.into(),
        "TestEnv-v0".into(),
        Timebase::ticks(1000.0),
        durability,
        vec![
            (
                "joint_pos".into(),
                Lane::Signal,
                DType::F32,
                vec![7],
                Codec::zstd(),
                None,
            ),
            (
                "cmd".into(),
                Lane::Action,
                DType::F32,
                vec![7],
                Codec::Lz4,
                None,
            ),
        ],
        serde_json::Map::new(),
    )
    .unwrap()
}

fn step_payload(i: u64) -> Vec<u8> {
    (0..14)
        .flat_map(|j| ((i * 14 + j) as f32 * 0.5).to_le_bytes())
        .collect()
}

fn settings(fsync: FsyncPolicy, max_timesteps: u64) -> SessionSettings {
    SessionSettings {
        fsync,
        rotation: Rotation {
            max_timesteps,
            max_bytes: 1 << 30,
            max_age: Duration::from_secs(3600),
        },
        ..SessionSettings::default()
    }
}

fn push(session: &Session, from: u64, n: u64) {
    let mut rec = Vec::new();
    for i in from..from + n {
        push_step_record(
            &mut rec,
            i,
            1_700_000_000_000_000_000 + i as i64 * 1_000_000,
            i as f32,
            i % 100 == 99,
            &[&step_payload(i)],
        );
    }
    assert!(session.submit(rec, n));
}

fn record(
    durability: Durability,
    fsync: FsyncPolicy,
    total: u64,
    batch: u64,
    max_ts: u64,
) -> (tempfile::TempDir, Arc<Recorded>, Manifest) {
    let dir = tempfile::tempdir().unwrap();
    let resp = Arc::new(Recorded::default());
    let s = Session::open(
        Arc::new(RealFs),
        dir.path(),
        schema("ep", durability),
        settings(fsync, max_ts),
        resp.clone(),
    )
    .unwrap();
    let mut i = 0;
    while i < total {
        let n = batch.min(total - i);
        push(&s, i, n);
        i += n;
    }
    let summary = s.close(FinalStatus::Complete);
    assert_eq!(summary.failure, None);
    assert_eq!(summary.timesteps, total);
    let layout = EpisodeLayout::new(dir.path(), "ep");
    let m = Manifest::read_file(layout.manifest()).unwrap();
    (dir, resp, m)
}

fn check_values(dir: &std::path::Path, total: u64) {
    let layout = EpisodeLayout::new(dir, "ep");
    let ep = read_episode_chunked(&layout.manifest()).unwrap();
    assert_eq!(ep.length, total);
    let want: Vec<u8> = (0..total)
        .flat_map(|i| step_payload(i)[..28].to_vec())
        .collect();
    assert_eq!(ep.channel("joint_pos").unwrap().data, want);
    let want_cmd: Vec<u8> = (0..total)
        .flat_map(|i| step_payload(i)[28..].to_vec())
        .collect();
    assert_eq!(ep.channel("cmd").unwrap().data, want_cmd);
    assert_eq!(ep.reward, (0..total).map(|i| i as f32).collect::<Vec<_>>());
    assert_eq!(ep.timestamps_ns.unwrap()[0], 1_700_000_000_000_000_000);
}

#[test]
fn session_records_rotates_and_acknowledges() {
    let (dir, resp, m) = record(Durability::Ack, FsyncPolicy::Always, 2_500, 64, 1_000);
    assert_eq!(m.status.as_deref(), Some("complete"));
    assert_eq!(
        m.chunks.iter().map(|c| c.length_t).collect::<Vec<_>>(),
        [1_000, 1_000, 500]
    );
    m.validate_continuity().unwrap();
    check_values(dir.path(), 2_500);
    let acks = resp.durable.lock().unwrap().clone();
    assert!(
        acks.windows(2).all(|w| w[0] < w[1]),
        "acks must increase: {acks:?}"
    );
    assert_eq!(acks.last(), Some(&2_500));
    // No journal, partial or temp file is left behind.
    let names: Vec<String> = std::fs::read_dir(dir.path().join("ep"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| n.ends_with(".wshard") && !n.contains("partial")),
        "{names:?}"
    );
    assert_eq!(names.len(), 4);
}

#[test]
fn session_chunk_durability_writes_no_journal() {
    let (dir, resp, m) = record(
        Durability::Chunk,
        FsyncPolicy::Interval(Duration::from_millis(5)),
        1_234,
        100,
        500,
    );
    assert_eq!(m.chunks.len(), 3);
    check_values(dir.path(), 1_234);
    // Acks only at chunk boundaries and at close.
    assert_eq!(
        resp.durable.lock().unwrap().clone(),
        vec![500, 1_000, 1_234]
    );
}

#[test]
fn session_batch_split_at_rotation_keeps_every_step() {
    // Batches of 7 against chunks of 10: every chunk boundary falls inside a batch.
    let (dir, _, m) = record(Durability::Ack, FsyncPolicy::Never, 95, 7, 10);
    assert_eq!(m.chunks.len(), 10);
    assert!(m.chunks.iter().take(9).all(|c| c.length_t == 10));
    check_values(dir.path(), 95);
}

#[test]
fn session_refuses_an_existing_episode() {
    let dir = tempfile::tempdir().unwrap();
    let resp = Arc::new(Recorded::default());
    let s = Session::open(
        Arc::new(RealFs),
        dir.path(),
        schema("dup", Durability::Ack),
        SessionSettings::default(),
        resp.clone(),
    )
    .unwrap();
    let e = Session::open(
        Arc::new(RealFs),
        dir.path(),
        schema("dup", Durability::Ack),
        SessionSettings::default(),
        resp,
    )
    .unwrap_err();
    assert!(e.to_string().contains("already exists"), "{e}");
    let _ = s.close(FinalStatus::Aborted);
}

#[test]
fn session_dropped_without_close_is_interrupted_and_complete_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let resp = Arc::new(Recorded::default());
    let s = Session::open(
        Arc::new(RealFs),
        dir.path(),
        schema("drop", Durability::Ack),
        settings(FsyncPolicy::Always, 50),
        resp,
    )
    .unwrap();
    push(&s, 0, 120);
    drop(s);
    let m = Manifest::read_file(EpisodeLayout::new(dir.path(), "drop").manifest()).unwrap();
    assert_eq!(m.status.as_deref(), Some("interrupted"));
    assert_eq!(m.total_timesteps, 120);
    assert!(m.extra["reason"].as_str().unwrap().contains("disconnected"));
}

#[test]
fn session_ack_without_fsync_acknowledges_published_chunks() {
    // fsync `never`: the journal is never synced, so DURABLE comes only with durable chunks.
    let (dir, resp, m) = record(Durability::Ack, FsyncPolicy::Never, 250, 50, 100);
    assert_eq!(m.chunks.len(), 3);
    check_values(dir.path(), 250);
    assert_eq!(resp.durable.lock().unwrap().clone(), vec![100, 200, 250]);
}

#[test]
fn session_flush_without_journal_publishes_the_open_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let resp = Arc::new(Recorded::default());
    let s = Session::open(
        Arc::new(RealFs),
        dir.path(),
        schema("fl", Durability::Chunk),
        settings(FsyncPolicy::Interval(Duration::from_millis(5)), 1_000_000),
        resp.clone(),
    )
    .unwrap();
    push(&s, 0, 40);
    s.flush();
    let t = std::time::Instant::now();
    while resp.durable.lock().unwrap().last() != Some(&40) {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "FLUSH was not answered: {:?}",
            resp.durable.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    push(&s, 40, 10);
    let summary = s.close(FinalStatus::Complete);
    assert_eq!((summary.timesteps, summary.chunks), (50, 2));
}

/// `queues.max_pending_bytes` far below one batch, and below the sum of a few: every
/// submission waits for the writer to process the previous one (a batch larger than the
/// budget passes alone), and nothing is lost or reordered.
#[test]
fn session_byte_budget_of_the_queue_holds_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let resp = Arc::new(Recorded::default());
    let s = Session::open(
        Arc::new(RealFs),
        dir.path(),
        schema("ep", Durability::Ack),
        SessionSettings {
            queue_bytes: 1_000,
            ..settings(FsyncPolicy::Interval(Duration::from_millis(2)), 700)
        },
        resp.clone(),
    )
    .unwrap();
    let budget = &s.shared().queue_budget;
    let mut i = 0;
    let mut max_seen = 0;
    while i < 5_000 {
        let n = (i % 37) + 1;
        push(&s, i, n);
        max_seen = max_seen.max(budget.used());
        i += n;
    }
    let summary = s.close(FinalStatus::Complete);
    assert_eq!(summary.failure, None);
    assert_eq!(summary.timesteps, i);
    // At most one batch (the largest is 37 records of 77 bytes) over the budget.
    assert!(max_seen <= 1_000 + 37 * 77, "queued {max_seen} bytes");
    check_values(dir.path(), i);
}

/// Compressed chunks larger than what is copied for an early release give their channel
/// buffers back right after compression, and the next chunk fills them while the previous
/// one is written: over many rotations, in both durability classes, every byte is kept.
#[test]
fn session_compressed_chunks_reuse_buffers_early_and_keep_every_byte() {
    const FRAME: usize = 96 * 1024;
    let frame = |i: u64| -> Vec<u8> {
        // Compressible (runs), and different in every step.
        (0..FRAME)
            .map(|j| ((j / 512) as u64 ^ i).to_le_bytes()[0])
            .collect()
    };
    for (durability, codec) in [
        (Durability::Chunk, Codec::zstd()),
        (Durability::Ack, Codec::Lz4),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let schema = EpisodeSchema::new(
            "cam".into(),
            String::new(),
            Timebase::ticks(30.0),
            durability,
            vec![(
                "cam0".into(),
                Lane::Signal,
                DType::U8,
                vec![FRAME as u64],
                codec,
                None,
            )],
            serde_json::Map::new(),
        )
        .unwrap();
        let s = Session::open(
            Arc::new(RealFs),
            dir.path(),
            schema,
            // 16 steps = 1.5 MiB per chunk: more than an early release copies.
            settings(FsyncPolicy::Interval(Duration::from_millis(5)), 16),
            Arc::new(Recorded::default()),
        )
        .unwrap();
        let total = 200u64;
        for i in 0..total {
            let mut rec = Vec::new();
            push_step_record(&mut rec, i, i as i64, 0.0, i + 1 == total, &[&frame(i)]);
            assert!(s.submit(rec, 1));
        }
        let summary = s.close(FinalStatus::Complete);
        assert_eq!(summary.failure, None, "{durability:?}");
        assert_eq!(summary.timesteps, total);
        let layout = EpisodeLayout::new(dir.path(), "cam");
        let m = Manifest::read_file(layout.manifest()).unwrap();
        assert_eq!(m.chunks.len(), 13, "{durability:?}");
        let ep = read_episode_chunked(&layout.manifest()).unwrap();
        let want: Vec<u8> = (0..total).flat_map(frame).collect();
        assert!(
            ep.channel("cam0").unwrap().data == want,
            "{durability:?}: bytes differ"
        );
    }
}
