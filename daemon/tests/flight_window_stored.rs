//! A trigger window copies the ring's chunks that lie wholly inside it without decoding
//! them: their data blocks' stored bytes and CRC32C are carried over as they are, the
//! meta blocks written anew; a block stored raw whose bytes disagree with its CRC32C
//! gives the window up with an error naming the window, stream, chunk and block.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod flight_harness;
mod sim_harness;

use flight_harness::{policy, registry, ring, wait};

use std::sync::Arc;

use sim_harness::{cmd, data_dir, fresh_sim, layout, records, schema, state, t_ns, Client};
use wshard::episode::Episode;
use wshard::manifest::read_episode_chunked;
use wshard::read::ShardReader;
use wshard_recorder::episode::Durability;
use wshard_recorder::flight::{trigger, FailedWindowKept, FlightRegistry, TriggerRequest};
use wshard_recorder::session::{FinalStatus, Session, SessionSettings};
use wshard_storage::fsio::sim::SimFs;
use wshard_storage::fsio::Fs;
use wshard_storage::layout::EpisodeLayout;

const CHUNK: u64 = 4;
const BATCH: u64 = 3;
const BATCHES: u64 = 6;
/// The batch after which the trigger comes: chunks 0..=2 (steps 0..=11) are final.
const TRIGGER_AFTER: u64 = 4;
/// The window: `t_ns(5)` - 25 ms .. + 60 ms = steps 3..=11; source chunk 1 (steps 4..=7)
/// and 2 (8..=11) lie wholly inside, chunk 0 is cut.
const PRE_NS: i64 = 25_000_000;
const POST_NS: i64 = 60_000_000;
const AT_STEP: u64 = 5;
const INSIDE_CHUNK: u64 = 1;

fn settings() -> SessionSettings {
    flight_harness::settings(CHUNK)
}

/// Record in flight mode (an unbounded ring), call `between` after batch `TRIGGER_AFTER`;
/// returns the registry once the window thread is done (persisted or failed).
fn record(sim: &SimFs, between: &mut dyn FnMut(&Arc<FlightRegistry>)) -> Arc<FlightRegistry> {
    let registry = registry(sim, settings(), u64::MAX, policy(1));
    let ring = ring(u64::MAX);
    let client = Arc::new(Client::new(sim));
    let session = Session::open(
        Arc::new(sim.clone()),
        &data_dir(),
        schema(Durability::Ack),
        settings(),
        client,
    )
    .unwrap();
    session.shared().set_flight(ring.clone());
    registry.register(ring.clone());
    let mut end = 0;
    for b in 0..BATCHES {
        assert!(session.submit(records(end, BATCH), BATCH));
        ring.note_t_ns(t_ns(end + BATCH - 1));
        end += BATCH;
        let shared = session.shared().clone();
        wait("the batch to be durable", || shared.durable() >= end);
        if b == TRIGGER_AFTER {
            between(&registry);
        }
    }
    let _ = session.close(FinalStatus::Complete);
    // Persisted, or given up after its one retry: either way no longer pending.
    wait("the window thread", || {
        registry.status_json()["triggers"]["pending"]
            .as_array()
            .is_some_and(Vec::is_empty)
    });
    registry
}

fn trigger_window(registry: &Arc<FlightRegistry>) -> String {
    let req = TriggerRequest {
        pre_ns: PRE_NS,
        post_ns: POST_NS,
        reason: "stored".into(),
        streams: None,
        at_ns: Some(t_ns(AT_STEP)),
    };
    trigger(registry, &req).unwrap().episode
}

/// `(name, stored bytes, CRC32C)` of every block of a chunk file but `meta/*`.
fn data_blocks(bytes: Vec<u8>) -> Vec<(String, Vec<u8>, u32)> {
    let r = ShardReader::from_bytes(bytes).unwrap();
    let names: Vec<String> = r.index().names().map(str::to_owned).collect();
    names
        .into_iter()
        .enumerate()
        .filter(|(_, n)| !n.starts_with("meta/"))
        .map(|(i, n)| {
            let crc = r.index().entries()[i].checksum;
            (n, r.read_stored(i).unwrap(), crc)
        })
        .collect()
}

fn check_window(ep: &Episode) {
    let seqs = 3..12u64;
    assert_eq!(ep.length, 9);
    let want_state: Vec<u8> = seqs.clone().flat_map(state).collect();
    let want_cmd: Vec<u8> = seqs.clone().flat_map(cmd).collect();
    assert!(ep.channel("state").unwrap().data == want_state, "state");
    assert!(ep.channel("cmd").unwrap().data == want_cmd, "cmd");
    let want_t: Vec<i64> = seqs.map(t_ns).collect();
    assert_eq!(ep.timestamps_ns.as_deref(), Some(&want_t[..]));
}

/// The window's chunks made from source chunks wholly inside it hold their data blocks
/// exactly as stored there (bytes and CRC32C); the window reads back bit-exact, and every
/// block of every window chunk checks.
#[test]
fn flight_window_copies_a_chunk_wholly_inside_as_stored() {
    let sim = fresh_sim();
    let mut window = None;
    let registry = record(&sim, &mut |r| window = Some(trigger_window(r)));
    let w = window.unwrap();
    let pending = registry.status_json()["triggers"]["pending"].clone();
    assert!(pending.as_array().is_some_and(Vec::is_empty), "{pending}");
    let real = tempfile::tempdir().unwrap();
    sim.export_to(&data_dir(), real.path()).unwrap();
    let wl = EpisodeLayout::stream(real.path(), &w, "ep");
    let ep = read_episode_chunked(&wl.manifest()).unwrap();
    check_window(&ep);
    // Window chunk 0 is source chunk 0 cut; 1 and 2 are source chunks 1 and 2.
    for (k, src) in [(1, INSIDE_CHUNK), (2, INSIDE_CHUNK + 1)] {
        let copied = std::fs::read(wl.chunk(k)).unwrap();
        let r = ShardReader::from_bytes(copied.clone()).unwrap();
        assert!(r.check_all().iter().all(|c| c.ok()), "window chunk {k}");
        let source = sim.read(&layout().chunk(src)).unwrap();
        assert_eq!(data_blocks(copied), data_blocks(source), "window chunk {k}");
    }
}

/// A raw block of a source chunk wholly inside the window whose bytes no longer match
/// its CRC32C: the window is given up (kept `interrupted` with what it copied before),
/// and the error names the window, the stream,
/// the source chunk and the block.
#[test]
fn flight_window_refuses_a_source_chunk_whose_raw_block_crc_mismatches() {
    let sim = fresh_sim();
    let mut window = None;
    let mut corrupted = String::new();
    let registry = record(&sim, &mut |r| {
        let path = layout().chunk(INSIDE_CHUNK);
        let mut bytes = sim.read(&path).unwrap();
        let reader = ShardReader::from_bytes(bytes.clone()).unwrap();
        let (i, name) = reader
            .index()
            .names()
            .enumerate()
            .find(|(i, n)| !n.starts_with("meta/") && !reader.index().entries()[*i].is_compressed())
            .map(|(i, n)| (i, n.to_owned()))
            .expect("a block stored raw");
        let at = usize::try_from(reader.index().entries()[i].data_offset).unwrap();
        bytes[at] ^= 0x5a;
        let mut f = sim.create(&path).unwrap();
        f.write_all(&bytes).unwrap();
        f.sync_all().unwrap();
        corrupted = name;
        window = Some(trigger_window(r));
    });
    let w = window.unwrap();
    let failures = registry.failed_windows();
    assert_eq!(failures.len(), 1, "{failures:?}");
    let failed = failures[0].error.clone();
    for want in [
        format!("window {w}"),
        "stream ep".to_owned(),
        format!("source chunk {INSIDE_CHUNK}"),
        format!("block `{corrupted}`"),
        "CRC32C".to_owned(),
    ] {
        assert!(failed.contains(&want), "{want:?} not in {failed:?}");
    }
    // Given up: what it copied before the damaged chunk is kept, `interrupted`.
    assert_eq!(failures[0].window, w);
    assert_eq!(failures[0].kept, FailedWindowKept::Interrupted);
    assert!(sim.exists(&data_dir().join(&w)), "window {w} not in place");
}
