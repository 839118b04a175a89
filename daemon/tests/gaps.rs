//! Seq gaps (shared-memory drop policies) through the real write path and recovery, over
//! the simulated file system: a session fed batches that skip seqs writes each gap into
//! the chunk of the timestep after it (`time/dropped_seq_ranges`, `dropped_steps` in the
//! manifest) and into the journal (GAP records); power is cut after every operation of the
//! recording, recovery runs on each image, and the episode found must be a prefix of the
//! live one with exactly the same gap record, covering every seq acknowledged DURABLE.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod sim_harness;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sim_harness::{data_dir, fresh_sim, layout, modes, records, recover, schema, Client};
use wshard::episode::Episode;
use wshard::manifest::Manifest;
use wshard::read::ShardReader;
use wshard_ingest_proto::iter_records;
use wshard_recorder::chunk::SeqGaps;
use wshard_recorder::episode::Durability;
use wshard_recorder::session::{FinalStatus, FsyncPolicy, Rotation, Session, SessionSettings};
use wshard_storage::fsio::sim::{PowerLoss, SimFs};
use wshard_storage::fsio::Fs;

/// Chunks of 8 timesteps.
const CHUNK: u64 = 8;

/// `(first seq, timesteps)` of each batch: 30 timesteps, seqs 0..56, 26 seqs dropped in
/// four gaps. Chunk 0 = 0-4 7 8 9 (gap [5, 7)), chunk 1 = 10-13 20-23 ([14, 20)), chunk 2 =
/// 24-26 40-44 ([27, 40)), chunk 3 = 50-55 ([45, 50), right at the chunk's start). Batches
/// cross chunk boundaries.
const BATCHES: [(u64, u64); 7] = [(0, 5), (7, 4), (11, 3), (20, 5), (25, 2), (40, 5), (50, 6)];

/// The truth: the seq of every timestep, and each chunk's gaps.
fn truth() -> (Vec<u64>, Vec<Vec<[u64; 2]>>) {
    let seqs: Vec<u64> = BATCHES.iter().flat_map(|&(s, n)| s..s + n).collect();
    let mut gaps = vec![Vec::new(); seqs.len().div_ceil(CHUNK as usize)];
    let mut next = 0;
    for (i, &s) in seqs.iter().enumerate() {
        if s > next {
            gaps[i / CHUNK as usize].push([next, s]);
        }
        next = s + 1;
    }
    (seqs, gaps)
}

fn settings(fsync: FsyncPolicy) -> SessionSettings {
    SessionSettings {
        fsync,
        rotation: Rotation {
            max_timesteps: CHUNK,
            max_bytes: 1 << 30,
            max_age: Duration::from_secs(3600),
        },
        queue_frames: 16,
        compression_workers: 1,
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

/// Record [`BATCHES`] on `sim` (a crash may be armed), settling after each batch, then
/// FLUSH and CLOSE. Returns the highest DURABLE received while the sim had power, and
/// whether the episode was closed without a failure.
fn record(sim: &SimFs, durability: Durability, fsync: FsyncPolicy) -> (u64, bool) {
    let client = Arc::new(Client::new(sim));
    let Ok(session) = Session::open(
        Arc::new(sim.clone()),
        &data_dir(),
        schema(durability),
        settings(fsync),
        client.clone(),
    ) else {
        return (client.durable_before_crash.load(Ordering::SeqCst), false);
    };
    let acks_at_sync = durability == Durability::Ack && fsync != FsyncPolicy::Never;
    let mut timesteps = 0;
    for (first, n) in BATCHES {
        if !session.submit(records(first, n), n) {
            break;
        }
        timesteps += n;
        let shared = session.shared().clone();
        let sealed = (timesteps - 1) / CHUNK;
        wait(|| {
            let quiet = shared.stats.chunks.load(Ordering::SeqCst) >= sealed
                && (!acks_at_sync || shared.durable() >= first + n);
            quiet || shared.is_failed() || sim.is_crashed()
        });
    }
    session.flush();
    let summary = session.close(FinalStatus::Complete);
    let ok = summary.failure.is_none();
    if ok {
        assert_eq!(summary.timesteps, 30);
        assert_eq!(client.acked(), 56, "DURABLE counts seqs");
    }
    (client.durable_before_crash.load(Ordering::SeqCst), ok)
}

fn seq_of(t_ns: i64) -> u64 {
    u64::try_from((t_ns - 1_700_000_000_000_000_000) / 10_000_000).unwrap()
}

/// Check the episode in `fs`: a prefix of [`truth`] in timesteps, bit-exact, with exactly
/// the truth's gap blocks and manifest counts for the chunks found, and every seq below
/// `acked` recorded or dropped. Returns the timesteps found.
fn check(fs: &SimFs, acked: u64, ctx: &str) -> u64 {
    let l = layout();
    // No directory, or an empty one (cut before the first manifest commit: not an
    // episode, left alone by recovery): nothing was acknowledged.
    if !fs.exists(&l.dir) || fs.read_dir(&l.dir).is_ok_and(|e| e.is_empty()) {
        assert_eq!(acked, 0, "{ctx}");
        return 0;
    }
    let bytes = fs.read(&l.manifest()).unwrap();
    let m = Manifest::read(&ShardReader::from_bytes(bytes).unwrap()).unwrap();
    m.validate_continuity().unwrap();
    assert!(
        matches!(m.status.as_deref(), Some("recovered" | "complete")),
        "{ctx}: {:?}",
        m.status
    );
    let (seqs, gaps) = truth();
    let mut found = Vec::new();
    let mut dropped = 0;
    for (k, c) in m.chunks.iter().enumerate() {
        let ep = Episode::from_bytes(fs.read(&l.dir.join(&c.uri)).unwrap()).unwrap();
        let ts = ep.timestamps_ns.as_ref().unwrap();
        for (i, &t) in ts.iter().enumerate() {
            let seq = seq_of(t);
            found.push(seq);
            // bit-exact against what was sent for that seq
            let rec = records(seq, 1);
            let s = iter_records(&rec, 22).next().unwrap();
            assert_eq!(t, s.t_ns, "{ctx}");
            assert_eq!(ep.reward[i].to_bits(), s.reward.to_bits(), "{ctx}");
            assert_eq!(ep.done[i], s.done, "{ctx}");
            let state = &ep.channel("state").unwrap().data[i * 16..(i + 1) * 16];
            let cmd = &ep.channel("cmd").unwrap().data[i * 6..(i + 1) * 6];
            assert_eq!([state, cmd].concat(), s.payload, "{ctx}: seq {seq}");
        }
        let g = SeqGaps::of_episode(&ep).unwrap();
        // The last chunk found may be a prefix of its live self (recovered from a torn
        // journal): it has the gaps before the timesteps it has.
        let want: Vec<[u64; 2]> = gaps[k]
            .iter()
            .copied()
            .filter(|r| found.contains(&r[1]))
            .collect();
        assert_eq!(g.ranges(), &want[..], "{ctx}: chunk {k} gap block");
        let listed = c
            .extra
            .get("dropped_steps")
            .and_then(serde_json::Value::as_u64);
        assert_eq!(listed.unwrap_or(0), g.total(), "{ctx}: chunk {k}");
        dropped += g.total();
    }
    assert_eq!(found[..], seqs[..found.len()], "{ctx}: not a prefix");
    assert_eq!(
        m.extra
            .get("dropped_steps")
            .and_then(serde_json::Value::as_u64),
        (dropped > 0).then_some(dropped),
        "{ctx}: manifest dropped_steps"
    );
    let end = found.last().map_or(0, |s| s + 1);
    assert!(
        end >= acked,
        "{ctx}: seqs up to {end} found, {acked} acknowledged"
    );
    // Nothing half-done is left.
    for p in fs.read_dir(&l.dir).unwrap() {
        let name = p.display().to_string();
        assert!(
            !(name.ends_with(".partial") || name.ends_with(".wal") || name.ends_with(".tmp")),
            "{ctx}: {name} left"
        );
    }
    found.len() as u64
}

/// Record once without a crash (everything there, nothing to recover), then cut the power
/// after every operation of the recording, recover each image and check it.
fn sweep(name: &str, durability: Durability, fsync: FsyncPolicy, torn: bool) {
    let st = settings(fsync);
    let probe = fresh_sim();
    let (acked, ok) = record(&probe, durability, fsync);
    assert!(ok && acked == 56, "{name}: probe");
    let img = probe.power_cut_image(PowerLoss::DropUnsynced);
    assert!(
        recover(&img, &st).is_empty(),
        "{name}: closed, nothing to do"
    );
    assert_eq!(check(&img, 56, name), 30);
    let (mut points, mut full) = (0, 0);
    for k in 0..probe.ops() * 2 + 10 {
        let sim = fresh_sim();
        sim.crash_after(k);
        let (acked, _) = record(&sim, durability, fsync);
        let crashed = sim.is_crashed();
        for mode in modes(k, torn) {
            let img = sim.power_cut_image(mode);
            let ctx = format!("{name} crash after {k} ops ({mode:?})");
            recover(&img, &st);
            let n = check(&img, acked, &ctx);
            assert!(recover(&img, &st).is_empty(), "{ctx}: second recovery");
            full += u64::from(n == 30);
        }
        points += 1;
        if !crashed {
            break;
        }
    }
    println!("{name}: {points} crash points, {full} images with all 30 timesteps");
    assert!(points > 20, "{name}: {points} crash points");
}

#[test]
fn gaps_recorded_and_recovered_ack_always() {
    sweep("ack/always", Durability::Ack, FsyncPolicy::Always, true);
}

#[test]
fn gaps_recorded_and_recovered_ack_never() {
    sweep("ack/never", Durability::Ack, FsyncPolicy::Never, false);
}

#[test]
fn gaps_recorded_and_recovered_chunk() {
    sweep("chunk", Durability::Chunk, FsyncPolicy::Always, false);
}

#[test]
fn gaps_truth_is_what_the_docs_say() {
    let (seqs, gaps) = truth();
    assert_eq!(seqs.len(), 30);
    assert_eq!(seqs.last(), Some(&55));
    assert_eq!(gaps, [[[5, 7]], [[14, 20]], [[27, 40]], [[45, 50]]]);
}
