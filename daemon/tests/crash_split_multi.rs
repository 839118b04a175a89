//! Power-loss simulation of a split multi-stream episode: two streams (`a` class `ack`,
//! `b` class `chunk`) recorded in rounds, the episode split twice (`cut_streams`, what
//! `split EP` runs), the power cut at every operation that changes state (in every
//! torn-write mode), recovery run on what the file system kept. Then every part is
//! settled (index final, agreeing with its streams' manifests, nothing half-done), each
//! stream's parts concatenate to a prefix of what was sent (bit-exact, no gap, no repeat),
//! holding every timestep acknowledged DURABLE, and a second recovery has nothing to do.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod multirate_harness;
mod sim_harness;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use multirate_harness::{ended, manifest, open_multi, read_index_of as read_index, settings, MEP};
use sim_harness::{data_dir, fresh_sim, modes, records, recover};
use wshard::episode_dir::index::EpisodeStatus;
use wshard::manifest::read_episode_chunked;
use wshard_recorder::control::split_multi::cut_streams;
use wshard_recorder::episode::Durability;
use wshard_recorder::session::cut_reason::CutReason;
use wshard_recorder::session::parts::part_id;
use wshard_recorder::session::FinalStatus;
use wshard_storage::fsio::sim::{PowerLoss, SimFs};
use wshard_storage::fsio::Fs;
use wshard_storage::layout::EpisodeLayout;

/// Streams: name, class, timesteps per round.
const STREAMS: [(&str, Durability, u64); 2] =
    [("a", Durability::Ack, 5), ("b", Durability::Chunk, 3)];
/// Rounds sent; the episode is split after these rounds.
const ROUNDS: u64 = 6;
const SPLIT_AFTER: [u64; 2] = [1, 3];
/// `limits.max_episode_id_bytes` for the part ids.
const MAX_ID: usize = 64;
/// Payload bytes of one timestep of the sim harness's schema (f32 x4 + u8 x6).
const STEP_PAYLOAD: usize = 22;

/// What the producers were told: each stream's highest DURABLE.
#[derive(Debug, Default)]
struct Acked {
    streams: BTreeMap<String, u64>,
    splits: usize,
    /// Why splits were refused.
    refused: Vec<String>,
}

/// Record the scenario on `sim` (a crash may be armed); never panics on storage errors.
fn record(sim: &SimFs) -> Acked {
    let mut acked = Acked::default();
    let classes: Vec<_> = STREAMS
        .iter()
        .map(|&(name, class, _)| (name, class))
        .collect();
    let Some((ep, open)) = open_multi(sim, &classes) else {
        return acked;
    };
    let per_round = |name: &str| STREAMS.iter().find(|s| s.0 == name).map_or(0, |s| s.2);
    let sessions: Vec<_> = open
        .into_iter()
        .map(|(name, s, client)| (name, s, client, per_round(name)))
        .collect();
    let mut sent = vec![0u64; sessions.len()];
    for round in 0..ROUNDS {
        for (i, (_, s, _, n)) in sessions.iter().enumerate() {
            if s.submit(records(sent[i], *n), *n) {
                sent[i] += n;
            }
            s.flush();
        }
        if SPLIT_AFTER.contains(&round) {
            // The writers took this round's timesteps (a split needs one in each stream).
            let t = Instant::now();
            while !sessions.iter().all(|(_, s, _, _)| {
                let sh = s.shared();
                sh.parts.part_steps() > 0 || sh.is_failed()
            }) && !sim.is_crashed()
                && t.elapsed() < Duration::from_secs(20)
            {
                std::thread::sleep(Duration::from_micros(200));
            }
            let parts: Vec<_> = sessions
                .iter()
                .map(|(name, s, _, _)| (name.to_owned(), s.shared().parts.clone()))
                .collect();
            let parts_of = |name: &str| {
                parts
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, p)| p.clone())
            };
            // The writers serve a cut after their next message: keep them busy.
            let done = AtomicBool::new(false);
            let cut = std::thread::scope(|scope| {
                scope.spawn(|| {
                    while !done.load(Ordering::Acquire) {
                        for (_, s, _, _) in &sessions {
                            s.flush();
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                });
                let r = cut_streams(&ep, &parts_of, MAX_ID, &data_dir(), CutReason::Split);
                done.store(true, Ordering::Release);
                r
            });
            match cut {
                Ok(_) => acked.splits += 1,
                Err(e) => acked.refused.push(e.to_string()),
            }
        }
    }
    for (name, s, client, _) in sessions {
        let parts = s.shared().parts.clone();
        let summary = s.close(FinalStatus::Complete);
        acked.streams.insert(name.to_owned(), client.acked());
        let status = if summary.failure.is_some() {
            EpisodeStatus::Interrupted
        } else {
            EpisodeStatus::Complete
        };
        let (steps, chunks) = parts.part_counts(summary.timesteps, summary.chunks);
        let _ = ep.end_stream(name, ended(status, steps, chunks));
    }
    let _ = ep.close(EpisodeStatus::Complete);
    acked
}

/// The channels `state`, `cmd` and the `t_ns` of the `n` timesteps from seq `from`, taken
/// from the very records the scenario sends.
fn records_episode(from: u64, n: u64) -> (Vec<u8>, Vec<u8>, Vec<i64>) {
    let rec = records(from, n);
    let len = 21 + STEP_PAYLOAD;
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

/// Recover `img` and check the parts (the module doc); returns each stream's timesteps.
fn recover_and_check(img: &SimFs, acked: &Acked, ctx: &str) -> BTreeMap<String, u64> {
    recover(img, &settings());
    let again = recover(img, &settings());
    assert!(
        again.is_empty(),
        "{ctx}: a second recovery had work: {again:?}"
    );
    let real = tempfile::tempdir().unwrap();
    img.export_to(&data_dir(), real.path()).unwrap();
    let mut total: BTreeMap<String, u64> = BTreeMap::new();
    for n in 0.. {
        let id = part_id(MEP, n);
        let dir = data_dir().join(&id);
        if !img.exists(&dir) {
            break;
        }
        let files = img.files(&dir).unwrap_or_default();
        for p in files.keys() {
            let name = p.display().to_string();
            assert!(
                ![".partial", ".wal", ".tmp"]
                    .iter()
                    .any(|s| name.ends_with(s)),
                "{ctx}: {name} left after recovery"
            );
        }
        let Some(index) = read_index(img, &id) else {
            // Cut before the part's index: no stream recorded into it.
            assert!(
                files.is_empty(),
                "{ctx}: {id} holds files but no index: {:?}",
                files.keys().collect::<Vec<_>>()
            );
            continue;
        };
        assert_ne!(
            index.status,
            EpisodeStatus::Recording,
            "{ctx}: {id} not final"
        );
        if n > 0 {
            assert_eq!(
                index.metadata["split"]["previous"],
                part_id(MEP, n - 1),
                "{ctx}: {id}"
            );
        }
        for s in &index.streams {
            let layout = EpisodeLayout::stream(&data_dir(), &id, &s.name);
            let m = manifest(img, &layout)
                .unwrap_or_else(|| panic!("{ctx}: {id}/{} has no manifest", s.name));
            assert_eq!(
                (
                    m.total_timesteps,
                    m.chunks.len() as u64,
                    m.status.as_deref()
                ),
                (s.steps, s.chunks, Some(s.status.as_str())),
                "{ctx}: {id}/{}: index vs manifest",
                s.name
            );
            m.validate_continuity().unwrap();
            if m.total_timesteps == 0 {
                continue;
            }
            let first_seq = m
                .extra
                .get("split")
                .and_then(|l| l["first_seq"].as_u64())
                .unwrap_or(0);
            let so_far = total.entry(s.name.clone()).or_insert(0);
            assert_eq!(
                first_seq, *so_far,
                "{ctx}: {id}/{} does not continue the part before",
                s.name
            );
            let path = EpisodeLayout::stream(real.path(), &id, &s.name).manifest();
            let got = read_episode_chunked(&path)
                .unwrap_or_else(|e| panic!("{ctx}: {id}/{}: {e}", s.name));
            let want = records_episode(first_seq, got.length);
            assert!(
                got.channel("state").unwrap().data == want.0
                    && got.channel("cmd").unwrap().data == want.1,
                "{ctx}: {id}/{}: values differ",
                s.name
            );
            assert_eq!(got.timestamps_ns.as_deref().unwrap(), &want.2[..], "{ctx}");
            *so_far += got.length;
        }
    }
    for (name, durable) in &acked.streams {
        let found = total.get(name).copied().unwrap_or(0);
        assert!(
            found >= *durable,
            "{ctx}: stream {name}: {found} timesteps found, {durable} acknowledged"
        );
    }
    total
}

#[test]
fn split_multi_crash_point_every_operation() {
    let t = Instant::now();
    let probe = fresh_sim();
    let acked = record(&probe);
    assert_eq!(acked.splits, 2, "probe: {acked:?}");
    let img = probe.power_cut_image(PowerLoss::DropUnsynced);
    let total = recover_and_check(&img, &acked, "probe");
    for (name, _, per_round) in STREAMS {
        assert_eq!(total[name], per_round * ROUNDS, "probe: {name}");
    }
    // The probe's parts are final as recorded: complete, linked.
    for n in 0..3 {
        let ix = read_index(&probe, &part_id(MEP, n)).unwrap();
        assert_eq!(ix.status, EpisodeStatus::Complete, "probe: part {n}");
        assert_eq!(ix.streams.len(), 2, "probe: part {n}");
        if n < 2 {
            assert_eq!(ix.metadata["split"]["next"], part_id(MEP, n + 1));
        }
    }
    let ops = probe.ops();
    let mut points = 0;
    for k in 0..ops * 2 + 10 {
        let sim = fresh_sim();
        sim.crash_after(k);
        let acked = record(&sim);
        for mode in modes(k, true) {
            let ctx = format!("crash after {k} of {ops} ops ({mode:?})");
            recover_and_check(&sim.power_cut_image(mode), &acked, &ctx);
        }
        points += 1;
        if !sim.is_crashed() {
            break;
        }
    }
    assert!(points > ops, "the sweep stopped early");
    eprintln!(
        "split multi: {ops} operations, {points} crash points, {:.1} s",
        t.elapsed().as_secs_f64()
    );
}
