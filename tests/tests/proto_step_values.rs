//! Values inside timesteps, against the real daemon: `t_ns` must not decrease within an
//! episode (equal is allowed) and every `bool` element is 0 or 1 (as `done`), whichever
//! transport brings the step: single TIMESTEPs, within and across TIMESTEP_BATCHes, across
//! chunk rotation, and through a shared-memory ring. A refused batch is refused whole,
//! earlier steps stay, and what is written passes `wshard verify --deep`.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::path::Path;

use wshard_client::{ChannelSpec, Durability, OpenEpisode, Outcome, TimebaseSpec};
use wshard_e2e::abuse::assert_contains;
use wshard_e2e::check::{check_episode, wait_final};
use wshard_e2e::raw::{timestep_frame, RawConn};
use wshard_e2e::shm::{records, HandRing, RingSpec};
use wshard_e2e::{data, Daemon, DaemonOptions, TIMEOUT};
use wshard_ingest_proto::{
    push_step_record, AcceptedWhat, ErrorCode, Frame, Timestep, TimestepBatch,
};

/// An OPEN of the standard schema (its last channel, `valid`, is a scalar `bool`) with the
/// `timestamps_ns` timebase.
fn spec(id: &str, ch: &[ChannelSpec]) -> OpenEpisode {
    let mut s = data::open_spec(id, ch, Durability::Ack);
    s.timebase = TimebaseSpec::TimestampsNs { nominal_hz: 100.0 };
    s
}

/// One generator record of `seq`, with `t_ns` and the payload changed by `edit`.
fn record(ch: &[ChannelSpec], seq: u64, t_ns: i64, edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut payload = data::packed_payload(seq, ch);
    edit(&mut payload);
    let mut out = Vec::new();
    push_step_record(
        &mut out,
        seq,
        t_ns,
        data::reward(seq),
        data::done(seq),
        &[&payload],
    );
    out
}

fn batch(count: u32, records: Vec<u8>) -> Frame {
    Frame::TimestepBatch(TimestepBatch::from_records(count, records).unwrap())
}

fn timestep(ch: &[ChannelSpec], seq: u64, t_ns: i64) -> Frame {
    let Frame::Timestep(t) = timestep_frame(seq, ch) else {
        unreachable!()
    };
    Frame::Timestep(Timestep { t_ns, ..t })
}

/// `wshard verify --deep` on the data directory exits 0.
fn verify_deep_ok(data_dir: &Path) {
    let out = std::process::Command::new(wshard_e2e::bins::wshard())
        .args(["verify", "--deep"])
        .arg(data_dir)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn proto_timestamps_must_not_decrease_on_the_socket() {
    // Chunks of 4 timesteps: seq 4 opens chunk 1, seq 8 chunk 2.
    let d = Daemon::start(DaemonOptions::default().rotation(4));
    let ch = data::channels();
    let t = data::t_ns;
    let mut c = RawConn::hello(&d.socket());
    c.open(&spec("ts-order", &ch));
    c.timesteps(&ch, 0..4);
    // Across a chunk boundary: seq 4 (first of chunk 1) below seq 3 (last of chunk 0).
    c.send(&timestep(&ch, 4, t(3) - 1));
    let msg = c.expect_error(ErrorCode::TimestampOrder);
    assert_eq!(
        msg,
        format!(
            "TIMESTEP seq 4: t_ns {} is below t_ns {} of seq 3 (t_ns must not decrease \
             within an episode; equal is allowed)",
            t(3) - 1,
            t(3)
        )
    );
    // Within a batch: refused whole, seq 4 (good) is not written either.
    let mut recs = records(&ch, 4..6);
    recs.extend(record(&ch, 6, t(5) - 1_000, |_| {}));
    c.send(&batch(3, recs));
    assert_contains(
        &c.expect_error(ErrorCode::TimestampOrder),
        &["TIMESTEP seq 6", &format!("below t_ns {} of seq 5", t(5))],
    );
    // Across batches: the last step of the previous batch counts.
    c.send(&batch(2, records(&ch, 4..6)));
    c.send(&batch(1, record(&ch, 6, t(5) - 1, |_| {})));
    assert_contains(
        &c.expect_error(ErrorCode::TimestampOrder),
        &["TIMESTEP seq 6", "of seq 5"],
    );
    // The episode carries on from seq 6, across the next rotation.
    c.send(&batch(4, records(&ch, 6..10)));
    c.send(&timestep(&ch, 10, t(9) - 7));
    c.expect_error(ErrorCode::TimestampOrder);
    c.timesteps(&ch, 10..12);
    assert_eq!(c.flush_until(12), 12);
    c.close(Outcome::Completed, 12);
    // Exactly the generator's 12 steps, bit-exact, in 3 chunks, and a deep verify passes.
    let st = check_episode(&d.data_dir(), "ts-order", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 12));
    verify_deep_ok(&d.data_dir());
}

#[test]
fn proto_equal_timestamps_are_allowed_and_the_rule_holds_for_ticks_too() {
    let d = Daemon::start(DaemonOptions::default().rotation(3));
    let ch = data::channels();
    let mut c = RawConn::hello(&d.socket());
    c.open(&spec("ts-equal", &ch));
    // Five timesteps at the same instant, across a rotation: accepted.
    let recs: Vec<u8> = (0..5).flat_map(|s| record(&ch, s, 1_000, |_| {})).collect();
    c.send(&batch(5, recs));
    c.send(&timestep(&ch, 5, 1_000));
    assert_eq!(c.flush_until(6), 6);
    c.close(Outcome::Completed, 6);
    let m = wshard_e2e::check::manifest_path(&d.data_dir(), "ts-equal");
    let ep = wshard::manifest::read_episode_chunked(&m).unwrap();
    assert_eq!(ep.timestamps_ns.unwrap(), [1_000; 6]);
    // `time/timestamps_ns` is written for every timebase, so the rule is the same with ticks.
    let mut ticks = spec("ts-ticks", &ch);
    ticks.timebase = TimebaseSpec::Ticks { tick_hz: 100.0 };
    c.open(&ticks);
    c.timesteps(&ch, 0..2);
    c.send(&timestep(&ch, 2, data::t_ns(1) - 1));
    c.expect_error(ErrorCode::TimestampOrder);
    c.timesteps(&ch, 2..3);
    c.close(Outcome::Completed, 3);
    check_episode(&d.data_dir(), "ts-ticks", &ch).unwrap();
    verify_deep_ok(&d.data_dir());
}

#[test]
fn proto_bool_elements_must_be_0_or_1() {
    let d = Daemon::start(DaemonOptions::default());
    let ch = data::channels();
    let bool_at = data::step_bytes(&ch) - 1; // `valid`, the last channel, bool scalar
    let mut c = RawConn::hello(&d.socket());
    c.open(&spec("bools", &ch));
    c.timesteps(&ch, 0..3);
    // A single TIMESTEP.
    let Frame::Timestep(mut bad) = timestep_frame(3, &ch) else {
        unreachable!()
    };
    bad.payload[bool_at] = 2;
    c.send(&Frame::Timestep(bad));
    assert_eq!(
        c.expect_error(ErrorCode::MalformedFrame),
        "TIMESTEP: field seq 3 channel valid element 0 has value 2, expected 0 or 1 (dtype bool)"
    );
    // Inside a batch: refused whole.
    let mut recs = records(&ch, 3..5);
    recs.extend(record(&ch, 5, data::t_ns(5), |p| p[bool_at] = 0xFF));
    c.send(&batch(3, recs));
    assert_contains(
        &c.expect_error(ErrorCode::MalformedFrame),
        &["seq 5 channel valid element 0 has value 255"],
    );
    // `done` is 0 or 1 as well.
    let mut recs = records(&ch, 3..5);
    recs[254 + 20] = 2; // seq 4: done = 2
    c.send(&batch(2, recs));
    assert_contains(
        &c.expect_error(ErrorCode::MalformedFrame),
        &["seq 4 done has value 2"],
    );
    // Nothing of the refused frames was written: the episode carries on from seq 3.
    c.timesteps(&ch, 3..8);
    c.close(Outcome::Completed, 8);
    let st = check_episode(&d.data_dir(), "bools", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 8));
    verify_deep_ok(&d.data_dir());
}

/// Open `id` (standard schema, timestamps) on a raw connection after `socket_steps` socket
/// timesteps, attach a hand-made ring of 4 slots of 1 KiB, publish steps up to 6 in slots
/// of 3 and flush them.
fn attached(d: &Daemon, id: &str, socket_steps: u64) -> (RawConn, HandRing) {
    let ch = data::channels();
    let mut c = RawConn::hello(&d.socket());
    c.open(&spec(id, &ch));
    c.timesteps(&ch, 0..socket_steps);
    let mut ring = HandRing::create(&RingSpec::new(1024, 4));
    c.send_with_fds(
        &Frame::ShmAttach {
            slot_size: 1024,
            slot_count: 4,
            policy: None,
        },
        &ring.fds(),
    );
    assert_eq!(c.expect_accepted(AcceptedWhat::ShmAttach), socket_steps);
    let mut seq = socket_steps;
    while seq < 6 {
        let end = (seq + 3).min(6);
        ring.publish(&records(&ch, seq..end), u32::try_from(end - seq).unwrap());
        seq = end;
    }
    assert_eq!(c.flush_until(6), 6);
    (c, ring)
}

#[test]
fn proto_step_values_are_checked_on_the_ring_too() {
    let d = Daemon::start(DaemonOptions::default().rotation(4));
    let ch = data::channels();
    let bool_at = data::step_bytes(&ch) - 1;
    let t = data::t_ns;
    type Slot = Box<dyn Fn(&[ChannelSpec]) -> Vec<u8>>;
    let cases: Vec<(&str, u64, Slot, ErrorCode, String)> = vec![
        (
            // The first ring slot against the last socket step.
            "ring-ts-after-socket",
            6,
            Box::new(move |ch| record(ch, 6, t(5) - 1, |_| {})),
            ErrorCode::TimestampOrder,
            format!(
                "TIMESTEP seq 6: t_ns {} is below t_ns {} of seq 5",
                t(5) - 1,
                t(5)
            ),
        ),
        (
            // Across slots.
            "ring-ts-across-slots",
            0,
            Box::new(move |ch| record(ch, 6, t(5) - 1, |_| {})),
            ErrorCode::TimestampOrder,
            "TIMESTEP seq 6".to_owned(),
        ),
        (
            // Inside a slot.
            "ring-ts-in-slot",
            0,
            Box::new(move |ch| {
                let mut r = records(ch, 6..8);
                r.extend(record(ch, 8, t(7) - 1, |_| {}));
                r
            }),
            ErrorCode::TimestampOrder,
            "TIMESTEP seq 8".to_owned(),
        ),
        (
            "ring-bool",
            0,
            Box::new(move |ch| {
                let mut r = records(ch, 6..7);
                r.extend(record(ch, 7, t(7), |p| p[bool_at] = 3));
                r
            }),
            ErrorCode::MalformedFrame,
            "seq 7 channel valid element 0 has value 3".to_owned(),
        ),
    ];
    for (id, socket_steps, slot, code, want) in cases {
        let (mut c, mut ring) = attached(&d, id, socket_steps);
        let recs = slot(&ch);
        let count = u32::try_from(recs.len() / (21 + data::step_bytes(&ch))).unwrap();
        ring.publish(&recs, count);
        assert_contains(&c.expect_error(code), &[&want]);
        // The ring ends, the episode is interrupted with everything accepted before.
        let m = wait_final(&d.data_dir(), id, TIMEOUT).unwrap();
        assert_eq!(m.status.as_deref(), Some("interrupted"), "{id}");
        let st = check_episode(&d.data_dir(), id, &ch).unwrap();
        assert_eq!(st.timesteps, 6, "{id}");
    }
    verify_deep_ok(&d.data_dir());
}
