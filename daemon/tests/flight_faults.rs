//! A trigger window whose persistence keeps failing (an unreadable source chunk, a full
//! disk), through the fault-injecting `SimFs`: the window is tried again a bounded number
//! of times, then given up: recorded failed (typed, naming window, stream and step), its
//! pins released so the ring honours its bound again, and what it already holds kept
//! (finalized `interrupted`, or left in its build directory when even that fails). A
//! restart never builds a window given up again. And a power cut at every operation of
//! giving a window up leaves an image the start-up finishes cleanly.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod flight_harness;
mod sim_harness;

use flight_harness::{policy, ring, wait};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sim_harness::{
    cmd, data_dir, fresh_sim, layout, records, recover, schema, state, t_ns, Client,
};
use wshard::episode::Episode;
use wshard::episode_dir::index::{EpisodeIndex, EpisodeStatus};
use wshard::manifest::read_episode_chunked;
use wshard_recorder::episode::Durability;
use wshard_recorder::flight::{
    resume::resume_pending, trigger, FailedWindowKept, FlightRegistry, TriggerRequest,
    WINDOW_FAILURE_KEY,
};
use wshard_recorder::session::{FinalStatus, Session, SessionSettings};
use wshard_storage::fsio::sim::{FaultKind, OpKind, PowerLoss, SimFs};
use wshard_storage::fsio::Fs;
use wshard_storage::layout::EpisodeLayout;

const CHUNK: u64 = 4;
const BATCH: u64 = 3;
/// Batches before the trigger (seqs 0..=5: `t` is seq 5's).
const BEFORE: u64 = 2;
/// Batches after it, up to seq 17: the window's chunks (seqs 3..=11) are all finalized.
const AFTER: u64 = 4;
/// Batches recorded once the window was given up: at least one more chunk each.
const LATER: u64 = 3;
const RETRIES: u32 = 2;
/// Injected far more often than the retries can use.
const FAULTS: u64 = 64;

/// What a run left: the acked mark, the window's name (when the trigger was answered),
/// the registry, the ring, and the ring's chunk count and pins after the later batches.
struct Outcome {
    acked: u64,
    window: Option<String>,
    registry: Arc<FlightRegistry>,
    ring_after: Option<(u64, u64)>,
}

fn settings() -> SessionSettings {
    flight_harness::settings(CHUNK)
}

fn registry(sim: &SimFs) -> Arc<FlightRegistry> {
    flight_harness::registry(sim, settings(), 1, policy(RETRIES))
}

/// Record in flight mode, trigger after `BEFORE` batches (window seqs 3..=11), record
/// `AFTER` more, wait until the window thread is done (persisted or given up), then
/// record `LATER` more batches.
fn run(sim: &SimFs) -> Outcome {
    let registry = registry(sim);
    let r = ring(1);
    let client = Arc::new(Client::new(sim));
    let mut out = Outcome {
        acked: 0,
        window: None,
        registry: registry.clone(),
        ring_after: None,
    };
    let Ok(session) = Session::open(
        Arc::new(sim.clone()),
        &data_dir(),
        schema(Durability::Ack),
        settings(),
        client.clone(),
    ) else {
        return out;
    };
    session.shared().set_flight(r.clone());
    registry.register(r.clone());
    let mut end = 0;
    let batch = |end: &mut u64| -> bool {
        if !session.submit(records(*end, BATCH), BATCH) {
            return false;
        }
        r.note_t_ns(t_ns(*end + BATCH - 1));
        *end += BATCH;
        let shared = session.shared().clone();
        let e = *end;
        wait("the batch to be durable", || {
            shared.durable() >= e || shared.is_failed() || sim.is_crashed()
        });
        !shared.is_failed() && !sim.is_crashed()
    };
    let mut live = (0..BEFORE).all(|_| batch(&mut end));
    if live {
        let req = TriggerRequest {
            pre_ns: 25_000_000,
            post_ns: 60_000_000,
            reason: "fault".into(),
            streams: None,
            at_ns: None,
        };
        out.window = trigger(&registry, &req).ok().map(|r| r.episode);
        live = (0..AFTER).all(|_| batch(&mut end));
    }
    wait("the window thread", || {
        registry.status_json()["triggers"]["pending"]
            .as_array()
            .is_some_and(Vec::is_empty)
    });
    if live && (0..LATER).all(|_| batch(&mut end)) {
        let v = r.view();
        out.ring_after = Some((v.chunks, v.pins));
    }
    let _ = session.close(FinalStatus::Complete);
    out.acked = client.acked();
    out
}

/// Every timestep of `ep` is what was sent, from global timestep `first` on.
fn check_from(ep: &Episode, first: u64, ctx: &str) {
    let seqs = first..first + ep.length;
    let want_state: Vec<u8> = seqs.clone().flat_map(state).collect();
    let want_cmd: Vec<u8> = seqs.clone().flat_map(cmd).collect();
    assert!(
        ep.channel("state").unwrap().data == want_state,
        "{ctx}: state"
    );
    assert!(ep.channel("cmd").unwrap().data == want_cmd, "{ctx}: cmd");
    let ts: Vec<i64> = seqs.map(t_ns).collect();
    assert_eq!(ep.timestamps_ns.as_deref(), Some(&ts[..]), "{ctx}: t_ns");
}

fn index_of(img: &SimFs, w: &str) -> Option<EpisodeIndex> {
    let p = data_dir().join(w).join(format!("{w}_index.json"));
    img.exists(&p)
        .then(|| EpisodeIndex::from_json_bytes(&img.read(&p).unwrap(), &p).unwrap())
}

/// The window's stream `ep` and its first seq.
fn window_steps(img: &SimFs, w: &str) -> (Episode, u64) {
    let real = tempfile::tempdir().unwrap();
    img.export_to(&data_dir(), real.path()).unwrap();
    let m = EpisodeLayout::stream(real.path(), w, "ep").manifest();
    let ep = read_episode_chunked(&m).unwrap();
    let first = (0..)
        .find(|&s| t_ns(s) == ep.timestamps_ns.as_ref().unwrap()[0])
        .unwrap();
    (ep, first)
}

fn pending_records(img: &SimFs) -> Vec<PathBuf> {
    img.read_dir(&data_dir().join(".flight").join("pending"))
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".json"))
        .collect()
}

fn chunk_files(img: &SimFs, dir: &Path) -> usize {
    img.read_dir(dir)
        .unwrap_or_default()
        .iter()
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.contains("_chunk_") && n.ends_with(".wshard")
        })
        .count()
}

/// Source chunk 2 (seqs 8..=11, inside the window) cannot be read.
fn unreadable_source_chunk(sim: &SimFs) {
    for n in 1..=FAULTS {
        sim.inject_on(
            OpKind::Read,
            "/data/ep/ep_chunk_0002.wshard",
            n,
            FaultKind::Eio,
        );
    }
}

#[test]
fn fault_flight_unreadable_source_chunk_gives_the_window_up_and_keeps_what_it_holds() {
    let sim = fresh_sim();
    unreadable_source_chunk(&sim);
    let out = run(&sim);
    let w = out.window.clone().expect("trigger answered");
    assert_eq!(out.acked, (BEFORE + AFTER + LATER) * BATCH);
    // Failure visible, typed: window, stream, what failed, how often.
    let failed = out.registry.failed_windows();
    assert_eq!(failed.len(), 1, "{failed:?}");
    let f = &failed[0];
    assert_eq!(f.window, w);
    assert_eq!(f.stream.as_deref(), Some("ep"));
    assert_eq!(f.source_stream.as_deref(), Some("ep"));
    assert!(f.error.contains("ep_chunk_0002"), "{}", f.error);
    assert_eq!(f.attempts, RETRIES + 1);
    assert_eq!(f.kept, FailedWindowKept::Interrupted);
    let status = out.registry.status_json();
    assert_eq!(status["triggers"]["failed"], 1, "{status}");
    assert_eq!(
        status["triggers"]["retries"],
        u64::from(RETRIES),
        "{status}"
    );
    assert_eq!(
        status["triggers"]["failed_windows"][0]["window"],
        w.as_str()
    );
    assert_eq!(status["triggers"]["failed_windows"][0]["stream"], "ep");
    // Pins released: the ring keeps its bound again (one byte: its newest chunk only).
    assert_eq!(out.ring_after, Some((1, 0)), "ring chunks and pins");
    assert_eq!(chunk_files(&sim, &layout().dir), 1);
    // What it held before the unreadable chunk (seqs 3..=7) is an `interrupted` episode.
    let index = index_of(&sim, &w).expect("the failed window's episode");
    assert_eq!(index.status, EpisodeStatus::Interrupted);
    assert_eq!(index.metadata[WINDOW_FAILURE_KEY]["window"], w.as_str());
    assert_eq!(index.metadata[WINDOW_FAILURE_KEY]["kept"], "interrupted");
    let (ep, first) = window_steps(&sim, &w);
    assert_eq!((first, ep.length), (3, 5));
    check_from(&ep, first, "interrupted window");
    assert!(pending_records(&sim).is_empty());
    // A power cut now and a restart: nothing to build again, the episode stays.
    let img = sim.power_cut_image(PowerLoss::DropUnsynced);
    recover(&img, &settings());
    let again = registry(&img);
    assert_eq!(resume_pending(&again).0, 0);
    let (ep, first) = window_steps(&img, &w);
    assert_eq!((first, ep.length), (3, 5));
}

#[test]
fn fault_flight_full_disk_keeps_the_window_in_its_build_and_a_restart_does_not_retry_it() {
    let sim = fresh_sim();
    // The window's second chunk cannot be created, nor its stream's manifest: the disk
    // is full for the window; the ring's own writes go on.
    for n in 1..=FAULTS {
        sim.inject_on(
            OpKind::Create,
            "streams/ep/ep_chunk_0001",
            n,
            FaultKind::Enospc,
        );
        sim.inject_on(
            OpKind::Create,
            "streams/ep/ep_manifest",
            n,
            FaultKind::Enospc,
        );
    }
    let out = run(&sim);
    let w = out.window.clone().expect("trigger answered");
    let failed = out.registry.failed_windows();
    assert_eq!(failed.len(), 1, "{failed:?}");
    let f = &failed[0];
    assert_eq!(
        (f.window.as_str(), f.stream.as_deref()),
        (w.as_str(), Some("ep"))
    );
    assert!(f.error.contains("ep_chunk_0001"), "{}", f.error);
    assert_eq!(f.kept, FailedWindowKept::InBuild);
    assert_eq!(out.ring_after, Some((1, 0)), "ring chunks and pins");
    // Nothing silently deleted: the window's first chunk (seq 3) stays in its build.
    let build = data_dir().join(".flight/build").join(&w).join("streams/ep");
    assert_eq!(chunk_files(&sim, &build), 1, "{:?}", sim.read_dir(&build));
    assert!(index_of(&sim, &w).is_none());
    let records = pending_records(&sim);
    assert_eq!(records.len(), 1);
    let record: serde_json::Value =
        serde_json::from_slice(&sim.read(&records[0]).unwrap()).unwrap();
    assert_eq!(record["failed"]["window"], w.as_str());
    assert_eq!(record["failed"]["kept"], "in_build");
    // Restarts: the failed window is shown, never built again (its build is kept).
    let img = sim.power_cut_image(PowerLoss::DropUnsynced);
    for start in 0..3 {
        recover(&img, &settings());
        let again = registry(&img);
        assert_eq!(resume_pending(&again).0, 0, "start {start}");
        assert_eq!(again.pending_windows(), 0);
        let shown = again.failed_windows();
        assert_eq!(shown.len(), 1);
        assert_eq!(shown[0].kept, FailedWindowKept::InBuild);
        assert_eq!(
            again.status_json()["triggers"]["failed_windows"][0]["window"],
            w.as_str()
        );
        assert_eq!(chunk_files(&img, &build), 1);
        assert_eq!(pending_records(&img).len(), 1);
    }
}

#[test]
fn crash_flight_points_at_every_operation_of_giving_a_window_up() {
    let probe = fresh_sim();
    unreadable_source_chunk(&probe);
    let out = run(&probe);
    assert!(out.window.is_some() && out.registry.failed_windows().len() == 1);
    let ops = probe.ops();
    let mut points = 0;
    // How often the image held: the window built whole at the start, the interrupted
    // episode, the failed record alone.
    let (mut whole, mut interrupted, mut marked) = (0, 0, 0);
    for k in 0..ops * 2 + 10 {
        let sim = fresh_sim();
        unreadable_source_chunk(&sim);
        sim.crash_after(k);
        let out = run(&sim);
        let img = sim.power_cut_image(PowerLoss::DropUnsynced);
        let ctx = format!("crash after {k} ops");
        recover(&img, &settings());
        let again = registry(&img);
        resume_pending(&again);
        wait("the resumed windows", || again.pending_windows() == 0);
        if let Some(w) = &out.window {
            match index_of(&img, w) {
                // Built again at the start (the image reads every chunk), or the
                // interrupted episode of the failed window: exact from seq 3 on either way.
                Some(index) => {
                    let (ep, first) = window_steps(&img, w);
                    check_from(&ep, first, &ctx);
                    assert_eq!(first, 3, "{ctx}");
                    match index.status {
                        EpisodeStatus::Complete => {
                            whole += 1;
                            assert!(
                                first + ep.length >= out.acked.min(12) && first + ep.length <= 12,
                                "{ctx}: {} steps, {} acked",
                                ep.length,
                                out.acked
                            );
                        }
                        EpisodeStatus::Interrupted => {
                            interrupted += 1;
                            assert_eq!(ep.length, 5, "{ctx}");
                        }
                        s => panic!("{ctx}: window {s:?}"),
                    }
                    assert!(pending_records(&img).is_empty(), "{ctx}");
                }
                // Not in place: its record says it was given up, and is shown so.
                None => {
                    marked += 1;
                    let records = pending_records(&img);
                    assert_eq!(records.len(), 1, "{ctx}");
                    assert_eq!(again.failed_windows().len(), 1, "{ctx}");
                }
            }
        }
        points += 1;
        if !sim.is_crashed() {
            break;
        }
    }
    assert!(points > ops, "{points} crash points, {ops} operations");
    assert!(
        whole > 0 && interrupted > 0 && marked > 0,
        "outcomes: {whole} built whole, {interrupted} interrupted, {marked} marked failed"
    );
    eprintln!(
        "flight window given up: {ops} operations, {points} crash points checked \
         ({whole} built whole, {interrupted} interrupted, {marked} marked failed)"
    );
}
