//! Backpressure policies of the shared-memory ring against the real daemon
//! (`shm_policy_*`): a producer far faster than a deliberately slow daemon (fsync
//! `always`, a queue of one frame, a ring of two one-step slots) with `drop_newest` and
//! `drop_oldest` drops timesteps and says so everywhere (client counters, the gap block of
//! each chunk listing exactly the missing seqs, manifest, log), records every other
//! timestep bit-exact with DURABLE semantics intact, and recovery after SIGKILL rebuilds
//! the same gap record; `block` still loses nothing. Hand-made rings check the daemon's
//! rules exactly: gaps accepted only forward, only between slots, only with a drop policy.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::os::unix::fs::FileExt as _;
use std::path::Path;
use std::time::{Duration, Instant};

use wshard::episode::Episode;
use wshard_client::{
    ChannelSpec, Client, ClientOptions, Durability, EpisodeWriter, ErrorCode, Outcome, RingPolicy,
    Transport,
};
use wshard_e2e::check::{self, read_manifest, wait_final};
use wshard_e2e::daemon::killed_by_sigkill;
use wshard_e2e::raw::{raw_frame, RawConn};
use wshard_e2e::shm::{records, HandRing, RingSpec};
use wshard_e2e::{data, Daemon, DaemonOptions, TIMEOUT};
use wshard_ingest_proto::{push_step_record, AcceptedWhat, Frame};

const GAP_BLOCK: &str = "time/dropped_seq_ranges";

/// The slow daemon: every drained group fsynced, one frame of queue.
fn slow_daemon(rotation: u64) -> Daemon {
    Daemon::start(
        DaemonOptions::default()
            .rotation(rotation)
            .fsync("always", 1)
            .queue(1),
    )
}

/// A ring of two slots of one step each (the standard schema's records are 254 bytes).
fn tiny_ring(policy: RingPolicy) -> Transport {
    Transport::Shm {
        slot_bytes: 320,
        slots: 2,
        policy,
    }
}

/// The seq of a generator timestamp ([`data::t_ns`] is injective: 10 ms apart, jitter
/// below 10 ms).
fn seq_of(t_ns: i64) -> u64 {
    let seq = u64::try_from((t_ns - data::t_ns(0)) / 10_000_000).unwrap();
    assert_eq!(data::t_ns(seq), t_ns, "not a generator timestamp");
    seq
}

/// What the chunks of an episode say about seqs.
#[derive(Debug)]
struct Gapped {
    status: String,
    /// The seq of every recorded timestep, in order.
    seqs: Vec<u64>,
    /// The gap block of each chunk.
    gaps: Vec<Vec<[u64; 2]>>,
    dropped: u64,
    manifest: wshard::manifest::Manifest,
}

fn decode_ranges(bytes: &[u8]) -> Vec<[u64; 2]> {
    assert_eq!(bytes.len() % 16, 0, "gap block of {} bytes", bytes.len());
    bytes
        .chunks_exact(16)
        .map(|p| {
            [
                u64::from_le_bytes(p[..8].try_into().unwrap()),
                u64::from_le_bytes(p[8..].try_into().unwrap()),
            ]
        })
        .collect()
}

/// Read every chunk of `id`, check that the manifest is continuous (in timesteps) and the
/// chunks verify; recover each timestep's seq from its timestamp, check it bit-exact
/// against the generator, and check that each chunk's gap block lists exactly the seqs
/// missing before its timesteps (and nothing else), with `dropped_steps` in the chunk's
/// manifest entry and the sum at the top level.
fn check_gapped(dd: &Path, id: &str, ch: &[ChannelSpec]) -> Gapped {
    let manifest = read_manifest(dd, id).unwrap();
    manifest.validate_continuity().unwrap();
    let dir = dd.join(id);
    for c in manifest.check_chunk_files(&dir) {
        assert!(c.error.is_none(), "{id}: {:?}", c.error);
    }
    let mut out = Gapped {
        status: manifest.status.clone().unwrap_or_default(),
        seqs: Vec::new(),
        gaps: Vec::new(),
        dropped: 0,
        manifest: manifest.clone(),
    };
    let mut next = 0u64;
    for c in &manifest.chunks {
        let ep = Episode::read_file(dir.join(&c.uri)).unwrap();
        let ts = ep.timestamps_ns.as_ref().unwrap();
        let mut expected = Vec::new();
        for (k, &t) in ts.iter().enumerate() {
            let seq = seq_of(t);
            assert!(
                seq >= next,
                "{id} chunk {}: seq {seq} after {next}",
                c.chunk_index
            );
            if seq > next {
                expected.push([next, seq]);
            }
            next = seq + 1;
            out.seqs.push(seq);
            // bit-exact against the generator
            assert_eq!(ep.reward[k].to_bits(), data::reward(seq).to_bits());
            assert_eq!(ep.done[k], data::done(seq));
            for (i, (got, spec)) in ep.channels.iter().zip(ch).enumerate() {
                let n = data::elements(&spec.shape);
                let sz = n * spec.dtype.size();
                assert_eq!(
                    &got.data[k * sz..(k + 1) * sz],
                    data::channel_payload(seq, i, spec.dtype, n).as_slice(),
                    "{id}: channel {} seq {seq}",
                    got.id
                );
            }
        }
        let block = ep.aux_block(GAP_BLOCK).map(|b| decode_ranges(&b.data));
        match &block {
            Some(r) => assert_eq!(r, &expected, "{id} chunk {}", c.chunk_index),
            None => assert!(
                expected.is_empty(),
                "{id} chunk {}: no gap block",
                c.chunk_index
            ),
        }
        let total: u64 = expected.iter().map(|[a, b]| b - a).sum();
        let listed = c
            .extra
            .get("dropped_steps")
            .and_then(serde_json::Value::as_u64);
        assert_eq!(listed.unwrap_or(0), total, "{id} chunk {}", c.chunk_index);
        assert_eq!(listed.is_some(), total > 0);
        out.dropped += total;
        out.gaps.push(expected);
    }
    assert_eq!(out.seqs.len() as u64, manifest.total_timesteps);
    if out.dropped > 0 {
        assert_eq!(
            manifest.extra.get("dropped_steps"),
            Some(&serde_json::json!(out.dropped)),
            "{id}"
        );
    }
    out
}

/// Push single-step batches in bursts of 100 (far faster than the slow daemon takes
/// them), pausing 2 ms between bursts so that it records some, until the client dropped
/// some and sent at least `min_sent` (or `max_rounds` bursts went by); then drain the ring
/// with FLUSH and push one last step, which always gets through an empty ring; FLUSH again.
fn burst(w: &mut EpisodeWriter<'_>, ch: &[ChannelSpec], min_sent: u64, max_rounds: u32) {
    for _ in 0..max_rounds {
        data::push_steps(w, ch, 100).unwrap();
        if w.dropped_steps() > 0 && w.next_seq() - w.dropped_steps() >= min_sent {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    // DURABLE covers everything sent, never a dropped step.
    let d = w.flush().unwrap();
    assert_eq!(d, w.published_seq());
    assert!(w.durable_seq() >= w.published_seq());
    data::push_steps(w, ch, 1).unwrap();
    assert_eq!(
        w.published_seq(),
        w.next_seq(),
        "an empty ring takes the last step"
    );
    assert_eq!(w.flush().unwrap(), w.next_seq());
}

fn client_one_step_batches(d: &Daemon, name: &str) -> Client {
    let opts = ClientOptions {
        batch_steps: 1,
        ..ClientOptions::default()
    };
    Client::connect_with(d.socket(), name, opts).unwrap()
}

#[test]
fn shm_policy_drop_newest_and_drop_oldest_record_the_gaps() {
    let d = slow_daemon(100);
    let ch = data::channels();
    let dd = d.data_dir();
    for policy in [RingPolicy::DropNewest, RingPolicy::DropOldest] {
        let id = format!("policy-{}", policy.name().replace('_', "-"));
        let mut client = client_one_step_batches(&d, &id);
        let mut w = client
            .open_episode_with(
                data::open_spec(&id, &ch, Durability::Ack),
                tiny_ring(policy),
            )
            .unwrap();
        assert_eq!(w.transport(), tiny_ring(policy));
        burst(&mut w, &ch, 400, 3000);
        let (pushed, dropped, batches) = (w.next_seq(), w.dropped_steps(), w.dropped_batches());
        assert!(
            dropped > 0,
            "{id}: the slow daemon never made the producer drop"
        );
        assert_eq!(batches, dropped, "{id}: one step per slot");
        // wait_durable on a dropped seq ends once everything sent before it is durable.
        w.wait_durable(pushed - 1).unwrap();
        let summary = w.close(Outcome::Completed).unwrap();
        assert_eq!(
            (
                summary.timesteps,
                summary.durable_up_to,
                summary.dropped_steps
            ),
            (pushed - dropped, pushed, dropped),
            "{id}"
        );
        let g = check_gapped(&dd, &id, &ch);
        assert_eq!(g.status, "complete");
        assert_eq!(
            g.dropped, dropped,
            "{id}: gap blocks list exactly the drops"
        );
        assert_eq!(g.seqs.len() as u64 + g.dropped, pushed);
        assert_eq!(g.seqs.last().copied(), Some(pushed - 1));
        assert!(g.gaps.iter().flatten().count() > 0);
        let m = &g.manifest;
        assert_eq!(m.extra["ring_policy"], serde_json::json!(policy.name()));
        assert_eq!(
            m.extra["producer_dropped_steps"],
            serde_json::json!(dropped)
        );
        assert_eq!(
            m.extra["producer_dropped_batches"],
            serde_json::json!(batches)
        );
        println!(
            "{id}: pushed {pushed}, dropped {dropped} in {} gaps over {} chunks",
            g.gaps.iter().map(Vec::len).sum::<usize>(),
            g.gaps.len()
        );
    }
    assert!(d.wait_log("shared-memory ring drops", 2, TIMEOUT));
    assert!(
        d.log().contains("dropped_steps="),
        "counters logged at close"
    );
    check::assert_verify_ok(&dd);
    assert!(!d.log().contains("panicked"));
}

#[test]
fn shm_policy_block_loses_nothing() {
    let d = slow_daemon(1500);
    let ch = data::channels();
    let dd = d.data_dir();
    let mut client = client_one_step_batches(&d, "block");
    let mut w = client
        .open_episode_with(
            data::open_spec("policy-block", &ch, Durability::Ack),
            tiny_ring(RingPolicy::Block),
        )
        .unwrap();
    burst(&mut w, &ch, 2000, 20);
    assert_eq!(w.next_seq(), 2001);
    assert_eq!((w.dropped_steps(), w.dropped_batches()), (0, 0));
    let summary = w.close(Outcome::Completed).unwrap();
    assert_eq!(
        (
            summary.timesteps,
            summary.durable_up_to,
            summary.dropped_steps
        ),
        (2001, 2001, 0)
    );
    let g = check_gapped(&dd, "policy-block", &ch);
    assert_eq!(g.seqs, (0..2001).collect::<Vec<_>>());
    assert!(g.gaps.iter().all(Vec::is_empty));
    assert_eq!(g.dropped, 0);
    for key in ["dropped_steps", "ring_policy", "producer_dropped_steps"] {
        assert!(!g.manifest.extra.contains_key(key), "{key}");
    }
    let st = check::check_episode(&dd, "policy-block", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 2001));
}

#[test]
fn shm_policy_recovery_after_sigkill_rebuilds_the_gaps() {
    // Chunks of 100: some published live with their gap blocks, the open one only in the
    // journal when the daemon is killed.
    let mut d = slow_daemon(100);
    let ch = data::channels();
    let dd = d.data_dir();
    let mut expected = Vec::new();
    for policy in [RingPolicy::DropNewest, RingPolicy::DropOldest] {
        let id = format!("crash-{}", policy.name().replace('_', "-"));
        let mut client = client_one_step_batches(&d, &id);
        let mut w = client
            .open_episode_with(
                data::open_spec(&id, &ch, Durability::Ack),
                tiny_ring(policy),
            )
            .unwrap();
        burst(&mut w, &ch, 250, 3000);
        assert!(w.dropped_steps() > 0, "{id}: nothing dropped");
        // The publisher lists chunks in the background: wait for the first.
        let deadline = Instant::now() + TIMEOUT;
        let live = loop {
            let m = read_manifest(&dd, &id).unwrap();
            if !m.chunks.is_empty() || Instant::now() > deadline {
                break m;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(!live.chunks.is_empty(), "{id}: no chunk published live");
        expected.push((id, w.next_seq(), w.dropped_steps(), live.chunks.len()));
        std::mem::forget(w); // no CLOSE: the daemon dies with the episode open
        std::mem::forget(client);
    }
    assert!(killed_by_sigkill(&d.kill9().unwrap()));
    d.spawn();
    d.wait_ready();
    for (id, pushed, dropped, live_chunks) in expected {
        let m = wait_final(&dd, &id, TIMEOUT).unwrap();
        assert_eq!(m.status.as_deref(), Some("recovered"), "{id}");
        let g = check_gapped(&dd, &id, &ch);
        assert!(
            g.manifest.chunks.len() > live_chunks,
            "{id}: nothing recovered"
        );
        // Everything was durable: every step sent is back, every drop is in a gap block.
        assert_eq!(g.dropped, dropped, "{id}");
        assert_eq!(g.seqs.len() as u64 + dropped, pushed, "{id}");
        assert_eq!(g.seqs.last().copied(), Some(pushed - 1), "{id}");
        assert_eq!(
            g.manifest.extra.get("dropped_steps"),
            Some(&serde_json::json!(dropped))
        );
    }
    assert!(check::episode_files_ending(&dd, ".wal").is_empty());
    check::assert_verify_ok(&dd);
    d.record_ok("after-policy-crash", 50);
}

/// Raw connection, small schema, a hand-made ring attached with `policy`.
fn hand_attached(d: &Daemon, id: &str, policy: Option<RingPolicy>) -> (RawConn, HandRing) {
    let mut c = RawConn::hello(&d.socket());
    c.open(&data::open_spec(
        id,
        &data::small_channels(),
        Durability::Ack,
    ));
    let ring = HandRing::create(&RingSpec::new(256, 4));
    c.send_with_fds(
        &Frame::ShmAttach {
            slot_size: 256,
            slot_count: 4,
            policy,
        },
        &ring.fds(),
    );
    assert_eq!(c.expect_accepted(AcceptedWhat::ShmAttach), 0);
    (c, ring)
}

#[test]
fn shm_policy_hand_ring_rules() {
    let d = Daemon::start(DaemonOptions::default().rotation(5));
    let ch = data::small_channels();
    let dd = d.data_dir();

    // Socket timesteps first: a gap there is SEQUENCE, as always; then a drop_newest ring
    // takes over at the seq expected and may skip forward, between slots only.
    let mut c = RawConn::hello(&d.socket());
    c.open(&data::open_spec("hand-gaps", &ch, Durability::Ack));
    c.timesteps(&ch, 0..2);
    c.send(&wshard_e2e::raw::timestep_frame(5, &ch));
    let msg = c.expect_error(ErrorCode::Sequence);
    assert!(msg.contains("seq 5: expected seq 2"), "{msg}");
    let mut ring = HandRing::create(&RingSpec::new(256, 4));
    c.send_with_fds(
        &Frame::ShmAttach {
            slot_size: 256,
            slot_count: 4,
            policy: Some(RingPolicy::DropNewest),
        },
        &ring.fds(),
    );
    assert_eq!(c.expect_accepted(AcceptedWhat::ShmAttach), 2);
    ring.publish(&records(&ch, 4..6), 2); // [2, 4) dropped
    ring.publish(&records(&ch, 6..7), 1);
    ring.publish(&records(&ch, 9..12), 3); // [7, 9) dropped
    ring.publish(&records(&ch, 20..21), 1); // [12, 20) dropped
    assert_eq!(c.flush_until(21), 21);
    c.send(&Frame::Close {
        outcome: Outcome::Completed,
    });
    assert_eq!(c.expect_accepted(AcceptedWhat::Close), 9);
    assert_eq!(c.durable(), 21, "DURABLE counts seqs: one past the last");
    let g = check_gapped(&dd, "hand-gaps", &ch);
    assert_eq!(g.seqs, [0, 1, 4, 5, 6, 9, 10, 11, 20]);
    // Chunks of 5 timesteps: the gap goes with the timestep after it.
    assert_eq!(g.gaps, [vec![[2, 4]], vec![[7, 9], [12, 20]]]);
    assert_eq!(g.dropped, 12);
    assert_eq!(g.manifest.extra["dropped_steps"], serde_json::json!(12));
    assert_eq!(
        g.manifest.extra["ring_policy"],
        serde_json::json!("drop_newest")
    );
    // The hand ring never counted anything: the producer's counters say 0.
    assert_eq!(
        g.manifest.extra["producer_dropped_steps"],
        serde_json::json!(0)
    );

    // Backwards: SEQUENCE, the ring ends, the episode is interrupted with what came before.
    let (mut c, mut ring) = hand_attached(&d, "hand-backwards", Some(RingPolicy::DropOldest));
    ring.publish(&records(&ch, 0..2), 2);
    ring.publish(&records(&ch, 5..6), 1);
    ring.publish(&records(&ch, 3..4), 1);
    let msg = c.expect_error(ErrorCode::Sequence);
    assert!(msg.contains("TIMESTEP seq 3: expected seq 6"), "{msg}");
    let m = wait_final(&dd, "hand-backwards", TIMEOUT).unwrap();
    assert_eq!(m.status.as_deref(), Some("interrupted"));
    let g = check_gapped(&dd, "hand-backwards", &ch);
    assert_eq!((g.seqs, g.dropped), (vec![0, 1, 5], 3));

    // A gap inside one slot is not a dropped batch: SEQUENCE.
    let (mut c, mut ring) = hand_attached(&d, "hand-inside", Some(RingPolicy::DropNewest));
    let mut recs = records(&ch, 0..2);
    recs.extend(records(&ch, 3..4));
    ring.publish(&recs, 3);
    let msg = c.expect_error(ErrorCode::Sequence);
    assert!(msg.contains("TIMESTEP seq 3: expected seq 2"), "{msg}");

    // Seqs stay below u64::MAX: a gap may jump to u64::MAX - 1, not to u64::MAX.
    let (mut c, mut ring) = hand_attached(&d, "hand-max", Some(RingPolicy::DropNewest));
    let payload = data::packed_payload(0, &ch);
    let mut recs = Vec::new();
    push_step_record(&mut recs, u64::MAX - 1, 0, 0.0, false, &[&payload]);
    ring.publish(&recs, 1);
    assert_eq!(c.flush_until(u64::MAX), u64::MAX);
    recs.clear();
    push_step_record(&mut recs, u64::MAX, 0, 0.0, false, &[&payload]);
    ring.publish(&recs, 1);
    let msg = c.expect_error(ErrorCode::Sequence);
    assert!(msg.contains("runs past the largest seq"), "{msg}");
    let m = wait_final(&dd, "hand-max", TIMEOUT).unwrap();
    assert_eq!(
        (m.status.as_deref(), m.total_timesteps),
        (Some("interrupted"), 1)
    );
    assert_eq!(m.extra["dropped_steps"], serde_json::json!(u64::MAX - 1));

    // drop_oldest: the shared tail moving backwards is a broken ring.
    let (mut c, mut ring) = hand_attached(&d, "hand-tail", Some(RingPolicy::DropOldest));
    ring.publish(&records(&ch, 0..2), 2);
    assert_eq!(c.flush_until(2), 2);
    ring.publish(&records(&ch, 2..3), 1);
    ring.file
        .write_all_at(
            &0u64.to_le_bytes(),
            wshard_ingest_proto::ring::OFFSET_TAIL as u64,
        )
        .unwrap();
    ring.wake();
    let msg = c.expect_error(ErrorCode::BadShm);
    assert!(msg.contains("ring tail 0 moved backwards"), "{msg}");

    // Without a policy byte (block), a gap between slots is SEQUENCE as before.
    let (mut c, mut ring) = hand_attached(&d, "hand-block", None);
    ring.publish(&records(&ch, 0..2), 2);
    ring.publish(&records(&ch, 4..5), 1);
    let msg = c.expect_error(ErrorCode::Sequence);
    assert!(msg.contains("TIMESTEP seq 4: expected seq 2"), "{msg}");

    // An unknown policy value is MALFORMED_FRAME; the episode carries on over the socket.
    let mut c = RawConn::hello(&d.socket());
    c.open(&data::open_spec("hand-bad-policy", &ch, Durability::Ack));
    let mut payload = 256u32.to_le_bytes().to_vec();
    payload.extend_from_slice(&4u32.to_le_bytes());
    payload.push(7);
    c.send_bytes(&raw_frame(0x07, &payload)).unwrap();
    let msg = c.expect_error(ErrorCode::MalformedFrame);
    assert!(msg.contains("field policy has value 7"), "{msg}");
    c.timesteps(&ch, 0..3);
    c.close(Outcome::Completed, 3);

    assert!(!d.log().contains("panicked"));
    check::assert_verify_ok(&dd);
}
