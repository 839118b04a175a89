//! Power-loss simulation of the flight recorder: a flight stream's ring eviction, and a
//! trigger window's persistence, are cut at every operation that changes state; recovery
//! (and, for windows, the start-up that finishes pending windows) runs on the image, and
//! every timestep acknowledged DURABLE that the ring still holds, or that a requested
//! window covers, must be there, bit-exact.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod flight_harness;
mod sim_harness;

use flight_harness::{policy, registry, ring, wait};

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use sim_harness::{
    cmd, data_dir, fresh_sim, layout, records, recover, schema, state, t_ns, Client,
};
use wshard::episode::Episode;
use wshard::episode_dir::index::EpisodeStatus;
use wshard::manifest::{read_episode_chunked, Manifest};
use wshard::read::ShardReader;
use wshard_recorder::episode::Durability;
use wshard_recorder::flight::{resume::resume_pending, trigger, FlightRegistry, TriggerRequest};
use wshard_recorder::session::flight_ring::FlightRing;
use wshard_recorder::session::{FinalStatus, Session, SessionSettings};
use wshard_storage::fsio::sim::{PowerLoss, SimFs};
use wshard_storage::fsio::Fs;
use wshard_storage::layout::EpisodeLayout;

const CHUNK: u64 = 4;
const BATCHES: u64 = 6;
const BATCH: u64 = 3;

fn settings() -> SessionSettings {
    flight_harness::settings(CHUNK)
}

/// Record `BATCHES` batches in flight mode (each settled), calling `between` after batch
/// `trigger_after`; returns the highest DURABLE received.
fn record(
    sim: &SimFs,
    ring: &Arc<FlightRing>,
    registry: Option<&Arc<FlightRegistry>>,
    trigger_after: u64,
    between: &mut dyn FnMut(),
) -> u64 {
    let client = Arc::new(Client::new(sim));
    let Ok(session) = Session::open(
        Arc::new(sim.clone()),
        &data_dir(),
        schema(Durability::Ack),
        settings(),
        client.clone(),
    ) else {
        return client.acked();
    };
    session.shared().set_flight(ring.clone());
    if let Some(r) = registry {
        r.register(ring.clone());
    }
    let mut end = 0;
    for b in 0..BATCHES {
        if !session.submit(records(end, BATCH), BATCH) {
            break;
        }
        ring.note_t_ns(t_ns(end + BATCH - 1));
        end += BATCH;
        let shared = session.shared().clone();
        wait("the batch to be durable", || {
            shared.durable() >= end || shared.is_failed() || sim.is_crashed()
        });
        if b == trigger_after {
            between();
        }
    }
    let _ = session.close(FinalStatus::Complete);
    client.acked()
}

/// Every timestep of `ep` from global timestep `first` on is what was sent.
fn check_from(ep: &Episode, first: u64, ctx: &str) {
    let n = ep.length;
    let seqs = first..first + n;
    let want_state: Vec<u8> = seqs.clone().flat_map(state).collect();
    let want_cmd: Vec<u8> = seqs.clone().flat_map(cmd).collect();
    assert!(
        ep.channel("state").unwrap().data == want_state,
        "{ctx}: state differs"
    );
    assert!(
        ep.channel("cmd").unwrap().data == want_cmd,
        "{ctx}: cmd differs"
    );
    let ts: Vec<i64> = seqs.map(t_ns).collect();
    assert_eq!(
        ep.timestamps_ns.as_deref(),
        Some(&ts[..]),
        "{ctx}: timestamps"
    );
}

fn manifest_in(fs: &SimFs, path: &Path) -> Manifest {
    Manifest::read(&ShardReader::from_bytes(fs.read(path).unwrap()).unwrap()).unwrap()
}

/// After recovery: the ring's series is continuous from its start, every acknowledged
/// timestep the ring still holds is there, and only listed chunks are left.
fn check_ring_image(img: &SimFs, acked: u64, ctx: &str) -> (u64, u64) {
    let settings = settings();
    recover(img, &settings);
    assert!(
        recover(img, &settings).is_empty(),
        "{ctx}: second recovery had work"
    );
    let l = layout();
    if !img.exists(&l.manifest()) {
        assert_eq!(acked, 0, "{ctx}: no manifest, {acked} acknowledged");
        return (0, 0);
    }
    let m = manifest_in(img, &l.manifest());
    m.validate_continuity()
        .unwrap_or_else(|e| panic!("{ctx}: not continuous: {e}"));
    assert!(
        m.total_timesteps >= acked,
        "{ctx}: {} < {acked}",
        m.total_timesteps
    );
    let (first_chunk, first_step) = m.ring_start();
    for p in img.read_dir(&l.dir).unwrap() {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            !(name.ends_with(".partial") || name.ends_with(".wal") || name.ends_with(".tmp")),
            "{ctx}: {name} left"
        );
        if name.contains("_chunk_") {
            assert!(
                m.chunks.iter().any(|c| c.uri == name),
                "{ctx}: {name} is not listed (ring starts at chunk {first_chunk})"
            );
        }
    }
    if !m.chunks.is_empty() {
        let real = tempfile::tempdir().unwrap();
        img.export_to(&data_dir(), real.path()).unwrap();
        let ep = read_episode_chunked(&EpisodeLayout::new(real.path(), &l.episode_id).manifest())
            .unwrap_or_else(|e| panic!("{ctx}: unreadable: {e}"));
        assert_eq!(ep.length + first_step, m.total_timesteps, "{ctx}");
        check_from(&ep, first_step, ctx);
    }
    (first_chunk, m.total_timesteps)
}

#[test]
fn flight_crash_points_at_every_operation_of_ring_eviction() {
    // One byte of ring: every chunk evicts the one before it.
    let probe = fresh_sim();
    let acked = record(&probe, &ring(1), None, u64::MAX, &mut || {});
    assert_eq!(acked, BATCHES * BATCH);
    let (first_chunk, _) = check_ring_image(
        &probe.power_cut_image(PowerLoss::DropUnsynced),
        acked,
        "probe",
    );
    assert!(first_chunk > 0, "the probe evicted nothing");
    let ops = probe.ops();
    let mut points = 0;
    for k in 0..ops * 2 + 10 {
        let sim = fresh_sim();
        sim.crash_after(k);
        let acked = record(&sim, &ring(1), None, u64::MAX, &mut || {});
        let img = sim.power_cut_image(PowerLoss::DropUnsynced);
        check_ring_image(&img, acked, &format!("crash after {k} ops"));
        points += 1;
        if !sim.is_crashed() {
            break;
        }
    }
    assert!(points > ops, "{points} crash points, {ops} operations");
    eprintln!("flight ring eviction: {ops} operations, {points} crash points checked");
}

/// Run one recording with a trigger after the second batch over `sim`: returns the acked
/// mark and the window episode's name (when the trigger was answered).
fn record_with_trigger(sim: &SimFs) -> (u64, Option<String>, Arc<FlightRegistry>) {
    let registry = registry(sim, settings(), 1, policy(1));
    let r = ring(1);
    let mut window = None;
    let reg = registry.clone();
    let acked = record(sim, &r, Some(&registry), 1, &mut || {
        // t = the latest t_ns (seq 5): the window is seqs 3..=11.
        let req = TriggerRequest {
            pre_ns: 25_000_000,
            post_ns: 60_000_000,
            reason: "cut".into(),
            streams: None,
            at_ns: None,
        };
        if let Ok(reply) = trigger(&reg, &req) {
            window = Some(reply.episode);
        }
    });
    // The window thread ends: persisted, or given up after the cut (no longer pending).
    wait("the window thread", || {
        let v = registry.status_json();
        v["triggers"]["pending"]
            .as_array()
            .is_some_and(Vec::is_empty)
    });
    (acked, window, registry)
}

fn window_steps(img: &SimFs, w: &str) -> Option<(Episode, u64)> {
    let index_path = data_dir().join(w).join(format!("{w}_index.json"));
    if !img.exists(&index_path) {
        return None;
    }
    let index = wshard::episode_dir::index::EpisodeIndex::from_json_bytes(
        &img.read(&index_path).unwrap(),
        &index_path,
    )
    .unwrap();
    assert_eq!(index.status, EpisodeStatus::Complete);
    let real = tempfile::tempdir().unwrap();
    img.export_to(&data_dir(), real.path()).unwrap();
    let m = EpisodeLayout::stream(real.path(), w, "ep").manifest();
    let ep = read_episode_chunked(&m).unwrap();
    let first = (0..)
        .find(|&s| t_ns(s) == ep.timestamps_ns.as_ref().unwrap()[0])
        .unwrap();
    Some((ep, first))
}

#[test]
fn flight_crash_points_at_every_operation_of_window_persistence() {
    let probe = fresh_sim();
    let (acked, w, _) = record_with_trigger(&probe);
    assert_eq!(acked, BATCHES * BATCH);
    let w = w.expect("probe trigger answered");
    let (ep, first) = window_steps(&probe, &w).expect("probe window persisted");
    assert_eq!((first, ep.length), (3, 9), "probe window");
    check_from(&ep, first, "probe window");
    let ops = probe.ops();
    let mut points = 0;
    for k in 0..ops * 2 + 10 {
        let sim = fresh_sim();
        sim.crash_after(k);
        let (acked, w, _) = record_with_trigger(&sim);
        let img = sim.power_cut_image(PowerLoss::DropUnsynced);
        let ctx = format!("crash after {k} ops");
        // Recovery, then the start-up's pending windows.
        recover(&img, &settings());
        let registry = registry(&img, settings(), 1, policy(1));
        resume_pending(&registry);
        wait("the resumed window", || {
            registry.status_json()["triggers"]["pending"]
                .as_array()
                .is_some_and(Vec::is_empty)
                || registry.counters().failed.load(Ordering::Relaxed) > 0
        });
        assert_eq!(
            registry.counters().failed.load(Ordering::Relaxed),
            0,
            "{ctx}"
        );
        if let Some(w) = w {
            // The trigger was answered: its window exists, and holds every acknowledged
            // timestep it covers (seqs 3..=11), exactly.
            let (ep, first) = window_steps(&img, &w)
                .unwrap_or_else(|| panic!("{ctx}: answered window {w} missing"));
            check_from(&ep, first, &ctx);
            assert_eq!(first, 3, "{ctx}");
            assert!(
                first + ep.length >= acked.min(12),
                "{ctx}: {} steps, {acked} acked",
                ep.length
            );
            assert!(first + ep.length <= 12, "{ctx}");
        }
        let pending = img
            .read_dir(&data_dir().join(".flight").join("pending"))
            .unwrap_or_default();
        assert!(
            pending
                .iter()
                .all(|p| !p.to_string_lossy().ends_with(".json")),
            "{ctx}: {pending:?}"
        );
        points += 1;
        if !sim.is_crashed() {
            break;
        }
    }
    assert!(points > ops, "{points} crash points, {ops} operations");
    eprintln!("flight window persistence: {ops} operations, {points} crash points checked");
}
