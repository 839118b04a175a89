//! Power-loss simulation of a split episode: a recording cut into parts (by `[rolling]`
//! and by the `split` request) is cut at every operation that changes state, recovery runs
//! on what the file system kept, and then the parts (`ep`, `ep.0001`, ...) concatenate to
//! a prefix of the stream sent, bit-exact, with no timestep missing or repeated between
//! parts, holding every timestep acknowledged DURABLE before the cut. And faults while the
//! next part is created: the split is refused with a typed error, recording goes on.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod sim_harness;

use std::sync::Arc;
use std::time::{Duration, Instant};

use sim_harness::{data_dir, fresh_sim, modes, records, recover, schema, Client, EP};
use wshard::manifest::{read_episode_chunked, Manifest};
use wshard::read::ShardReader;
use wshard_recorder::episode::Durability;
use wshard_recorder::session::parts::{part_id, SplitError};
use wshard_recorder::session::{
    FinalStatus, FsyncPolicy, Rolling, Rotation, Session, SessionSettings,
};
use wshard_storage::fsio::sim::{FaultKind, OpKind, PowerLoss, SimFs};
use wshard_storage::fsio::Fs;
use wshard_storage::layout::EpisodeLayout;

/// Payload bytes of one timestep of `sim_harness::schema` (f32 x4 + u8 x6).
const STEP_PAYLOAD: u64 = 22;
/// Timesteps per part under `[rolling]` in these scenarios.
const PART_STEPS: u64 = 10;
/// Batches sent: 30 timesteps, parts of 10, chunks of 8 (cuts inside chunks).
const BATCHES: [u64; 6] = [5, 5, 5, 5, 5, 5];

/// How the parts are cut.
#[derive(Clone, Copy, Debug)]
enum Cut {
    /// `[rolling] max_bytes` of 10 timesteps.
    Rolling,
    /// A `split` request after the second and the fourth batch.
    Request,
}

fn settings(fsync: FsyncPolicy, cut: Cut) -> SessionSettings {
    SessionSettings {
        fsync,
        rotation: Rotation {
            max_timesteps: 8,
            max_bytes: 1 << 30,
            max_age: Duration::from_secs(3600),
        },
        queue_frames: 16,
        compression_workers: 1,
        rolling: match cut {
            Cut::Rolling => Rolling {
                max_bytes: STEP_PAYLOAD * PART_STEPS,
                max_duration_ns: 0,
            },
            Cut::Request => Rolling::default(),
        },
        ..SessionSettings::default()
    }
}

fn wait(mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(t.elapsed() < Duration::from_secs(20), "stuck");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Record the scenario on `sim`; returns the highest DURABLE received, and the highest
/// received while the sim had power.
fn record(sim: &SimFs, durability: Durability, fsync: FsyncPolicy, cut: Cut) -> (u64, u64) {
    let client = Arc::new(Client::new(sim));
    let Ok(session) = Session::open(
        Arc::new(sim.clone()),
        &data_dir(),
        schema(durability),
        settings(fsync, cut),
        client.clone(),
    ) else {
        return (client.acked(), 0);
    };
    let acks_at_sync = durability == Durability::Ack && fsync != FsyncPolicy::Never;
    let mut end = 0;
    for (i, &n) in BATCHES.iter().enumerate() {
        if !session.submit(records(end, n), n) {
            break;
        }
        end += n;
        let shared = session.shared().clone();
        if acks_at_sync {
            wait(|| shared.durable() >= end || shared.is_failed() || sim.is_crashed());
        }
        if matches!(cut, Cut::Request) && (i == 1 || i == 3) {
            let reply = shared.parts.request_split();
            // The writer serves the request after its next message.
            session.flush();
            let _ = reply.recv_timeout(Duration::from_secs(5));
        }
    }
    session.flush();
    let summary = session.close(FinalStatus::Complete);
    if !sim.is_crashed() {
        assert_eq!(summary.failure, None);
        assert_eq!(summary.timesteps, end);
    }
    (
        client.acked(),
        client
            .durable_before_crash
            .load(std::sync::atomic::Ordering::SeqCst),
    )
}

/// A part's manifest in `fs`, when its directory holds one.
fn manifest(fs: &SimFs, id: &str) -> Option<Manifest> {
    let bytes = fs
        .read(&EpisodeLayout::new(&data_dir(), id).manifest())
        .ok()?;
    Some(Manifest::read(&ShardReader::from_bytes(bytes).unwrap()).unwrap())
}

/// Recover `img`, then check the parts: settled, nothing half-done left, each non-empty
/// part starts where the ones before it ended (no gap, no repeat) and holds exactly the
/// timesteps sent, and together they hold at least `acked`. Returns the timesteps found.
fn recover_and_check_parts(
    img: &SimFs,
    fsync: FsyncPolicy,
    cut: Cut,
    acked: u64,
    ctx: &str,
) -> u64 {
    let s = settings(fsync, cut);
    recover(img, &s);
    assert!(
        recover(img, &s).is_empty(),
        "{ctx}: a second recovery had work"
    );
    let real = tempfile::tempdir().unwrap();
    img.export_to(&data_dir(), real.path()).unwrap();
    let mut total = 0;
    for n in 0.. {
        let id = part_id(EP, n);
        let layout = EpisodeLayout::new(&data_dir(), &id);
        if !img.exists(&layout.dir) {
            break;
        }
        for p in img.read_dir(&layout.dir).unwrap() {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                !(name.ends_with(".partial") || name.ends_with(".wal") || name.ends_with(".tmp")),
                "{ctx}: {id}/{name} left after recovery"
            );
        }
        // Cut between the part's directory and its first manifest: an empty directory,
        // left alone by recovery; nothing of the stream was in it.
        let Some(m) = manifest(img, &id) else {
            assert!(img.read_dir(&layout.dir).unwrap().is_empty(), "{ctx}: {id}");
            continue;
        };
        assert!(
            matches!(m.status.as_deref(), Some("complete" | "recovered")),
            "{ctx}: {id}: {:?}",
            m.status
        );
        m.validate_continuity().unwrap();
        let first_seq = if n == 0 {
            0
        } else {
            m.extra["split"]["first_seq"].as_u64().unwrap()
        };
        if m.total_timesteps == 0 {
            continue;
        }
        assert_eq!(
            first_seq, total,
            "{ctx}: part {id} does not continue the one before"
        );
        let ep = read_episode_chunked(&EpisodeLayout::new(real.path(), &id).manifest())
            .unwrap_or_else(|e| panic!("{ctx}: {id} unreadable: {e}"));
        let want = records_episode(first_seq, ep.length);
        assert!(
            ep.channel("state").unwrap().data == want.0,
            "{ctx}: {id} state differs"
        );
        assert!(
            ep.channel("cmd").unwrap().data == want.1,
            "{ctx}: {id} cmd differs"
        );
        let ts = ep.timestamps_ns.as_deref().unwrap();
        assert_eq!(ts, &want.2[..], "{ctx}: {id} t_ns differ");
        total += ep.length;
    }
    assert!(
        total >= acked,
        "{ctx}: {total} timesteps found, {acked} acknowledged"
    );
    total
}

/// The channels `state`, `cmd` and the `t_ns` of the `n` timesteps from seq `from`, taken
/// from the very records the scenario sends.
fn records_episode(from: u64, n: u64) -> (Vec<u8>, Vec<u8>, Vec<i64>) {
    let rec = records(from, n);
    let len = 21 + STEP_PAYLOAD as usize;
    let mut state = Vec::new();
    let mut cmd = Vec::new();
    let mut ts = Vec::new();
    for r in rec.chunks_exact(len) {
        let mut t = [0u8; 8];
        t.copy_from_slice(&r[8..16]);
        ts.push(i64::from_le_bytes(t));
        state.extend_from_slice(&r[21..37]);
        cmd.extend_from_slice(&r[37..43]);
    }
    (state, cmd, ts)
}

/// Probe once, then cut the power after every operation until a run no longer reaches
/// the cut.
fn sweep(name: &str, durability: Durability, fsync: FsyncPolicy, cut: Cut) {
    let t = Instant::now();
    let probe = fresh_sim();
    let (acked, _) = record(&probe, durability, fsync, cut);
    assert_eq!(acked, 30, "{name}: probe acks");
    let img = probe.power_cut_image(PowerLoss::DropUnsynced);
    assert_eq!(recover_and_check_parts(&img, fsync, cut, 30, name), 30);
    for n in 0..3 {
        let m = manifest(&probe, &part_id(EP, n)).unwrap();
        assert_eq!(m.status.as_deref(), Some("complete"), "{name}: part {n}");
        assert_eq!(m.total_timesteps, PART_STEPS, "{name}: part {n}");
    }
    assert!(
        manifest(&probe, &part_id(EP, 3)).is_none(),
        "{name}: a fourth part"
    );
    let ops = probe.ops();
    let mut points = 0;
    for k in 0..ops * 2 + 10 {
        let sim = fresh_sim();
        sim.crash_after(k);
        let (acked, acked_before) = record(&sim, durability, fsync, cut);
        for mode in modes(k, true) {
            let img = sim.power_cut_image(mode);
            let ctx = format!("{name} crash after {k} ops ({mode:?})");
            let found = recover_and_check_parts(&img, fsync, cut, acked, &ctx);
            assert!(found >= acked_before, "{ctx}");
        }
        points += 1;
        if !sim.is_crashed() {
            break;
        }
    }
    assert!(points > ops, "{name}: the sweep stopped early");
    eprintln!(
        "{name}: {ops} operations, {points} crash points, {:.1} s",
        t.elapsed().as_secs_f64()
    );
}

#[test]
fn split_crash_point_every_operation_rolling_ack() {
    sweep(
        "rolling ack/always",
        Durability::Ack,
        FsyncPolicy::Always,
        Cut::Rolling,
    );
}

#[test]
fn split_crash_point_every_operation_rolling_chunk() {
    sweep(
        "rolling chunk/always",
        Durability::Chunk,
        FsyncPolicy::Always,
        Cut::Rolling,
    );
}

#[test]
fn split_crash_point_every_operation_request_ack_never() {
    sweep(
        "request ack/never",
        Durability::Ack,
        FsyncPolicy::Never,
        Cut::Request,
    );
}

#[test]
fn split_crash_point_every_operation_rolling_ack_never() {
    sweep(
        "rolling ack/never",
        Durability::Ack,
        FsyncPolicy::Never,
        Cut::Rolling,
    );
}

/// A split request served after `session`'s next message.
fn request_split(session: &Session) -> wshard_recorder::session::parts::SplitReply {
    let reply = session.shared().parts.request_split();
    session.flush();
    reply
        .recv_timeout(Duration::from_secs(5))
        .expect("the writer answers")
}

/// The timesteps and status of part `id` on `fs`.
fn part_state(fs: &SimFs, id: &str) -> (u64, Option<String>) {
    let m = manifest(fs, id).unwrap();
    (m.total_timesteps, m.status)
}

#[test]
fn split_fault_creating_the_next_part_is_refused_and_recording_goes_on() {
    let sim = fresh_sim();
    // The next part's directory cannot be created once (ENOSPC).
    sim.inject_on(OpKind::Create, "/data/ep.0001", 1, FaultKind::Enospc);
    let client = Arc::new(Client::new(&sim));
    let session = Session::open(
        Arc::new(sim.clone()),
        &data_dir(),
        schema(Durability::Ack),
        settings(FsyncPolicy::Always, Cut::Request),
        client.clone(),
    )
    .unwrap();
    assert!(session.submit(records(0, 10), 10));
    match request_split(&session) {
        Err(SplitError::Storage { episode, reason }) => {
            assert_eq!(episode, EP);
            assert!(reason.contains("creating part `ep.0001`"), "{reason}");
        }
        other => panic!("expected a storage refusal, got {other:?}"),
    }
    assert!(!session.shared().is_failed());
    assert_eq!(session.shared().parts.current(), EP);
    // Recording goes on in the same part; the next request succeeds.
    assert!(session.submit(records(10, 10), 10));
    let done = request_split(&session).unwrap();
    assert_eq!(
        (done.finished.as_str(), done.recording.as_str()),
        (EP, "ep.0001")
    );
    assert!(session.submit(records(20, 5), 5));
    let summary = session.close(FinalStatus::Complete);
    assert_eq!((summary.timesteps, summary.failure), (25, None));
    assert_eq!(client.acked(), 25);
    assert_eq!(part_state(&sim, EP), (20, Some("complete".into())));
    assert_eq!(part_state(&sim, "ep.0001"), (5, Some("complete".into())));
}

#[test]
fn split_fault_committing_the_next_part_leaves_it_for_recovery_then_part_exists() {
    let sim = fresh_sim();
    // The next part's first manifest cannot be renamed into place (EIO).
    sim.inject_on(OpKind::Rename, "ep.0001_manifest", 1, FaultKind::Eio);
    let client = Arc::new(Client::new(&sim));
    let session = Session::open(
        Arc::new(sim.clone()),
        &data_dir(),
        schema(Durability::Ack),
        settings(FsyncPolicy::Always, Cut::Request),
        client,
    )
    .unwrap();
    assert!(session.submit(records(0, 10), 10));
    assert!(matches!(
        request_split(&session),
        Err(SplitError::Storage { .. })
    ));
    // The directory stays (what a failed creation left is for recovery): the next
    // split is refused with a typed error, and recording goes on.
    assert!(session.submit(records(10, 10), 10));
    match request_split(&session) {
        Err(SplitError::PartExists { episode, part }) => {
            assert_eq!((episode.as_str(), part.as_str()), (EP, "ep.0001"));
        }
        other => panic!("expected PartExists, got {other:?}"),
    }
    let summary = session.close(FinalStatus::Complete);
    assert_eq!((summary.timesteps, summary.failure), (20, None));
    assert_eq!(part_state(&sim, EP), (20, Some("complete".into())));
}

#[test]
fn split_gap_right_after_the_cut_goes_with_the_next_part() {
    for power_cut in [false, true] {
        let sim = fresh_sim();
        let session = Session::open(
            Arc::new(sim.clone()),
            &data_dir(),
            schema(Durability::Ack),
            settings(FsyncPolicy::Always, Cut::Request),
            Arc::new(Client::new(&sim)),
        )
        .unwrap();
        assert!(session.submit(records(0, 10), 10));
        assert!(request_split(&session).is_ok());
        // Seqs 10..15 were dropped by the producer (a ring's drop policy) right at the cut.
        assert!(session.submit(records(15, 10), 10));
        let summary = session.close(FinalStatus::Complete);
        assert_eq!((summary.timesteps, summary.failure), (20, None));
        let img = if power_cut {
            // The same on what a power cut after CLOSE keeps (recovery has nothing to do).
            let img = sim.power_cut_image(PowerLoss::DropUnsynced);
            assert!(recover(&img, &settings(FsyncPolicy::Always, Cut::Request)).is_empty());
            img
        } else {
            sim.clone()
        };
        let m = manifest(&img, "ep.0001").unwrap();
        assert_eq!(m.total_timesteps, 10);
        assert_eq!(
            m.extra["split"]["first_seq"], 10,
            "the part's seq 0 is seq 10"
        );
        assert_eq!(m.extra["dropped_steps"], 5, "{:?}", m.extra);
        let real = tempfile::tempdir().unwrap();
        img.export_to(&data_dir(), real.path()).unwrap();
        let ep =
            read_episode_chunked(&EpisodeLayout::new(real.path(), "ep.0001").manifest()).unwrap();
        let want = records_episode(15, 10);
        assert!(ep.channel("state").unwrap().data == want.0);
        assert_eq!(ep.timestamps_ns.as_deref().unwrap(), &want.2[..]);
    }
}
