//! The exact bytes the client writes, against a FAKE server (tests/common) that records
//! them: for steps with large payloads (written from the caller's memory, not copied into
//! the pending batch) and small ones (copied), through `push`, `push_packed` and
//! `push_batch`, the stream must be byte for byte what the proto crate's encoders build
//! for the same frames (`encode` for control frames, `BatchEncoder` for batches), with the
//! batches split exactly where the copying client split them.
#![allow(clippy::unwrap_used)]

mod common;

use std::ops::Range;
use std::time::Duration;

use common::*;
use wshard::episode::{DType, Lane};
use wshard_client::{ClientError, ClientOptions, ErrorCode, Outcome, Step};
use wshard_ingest_proto::{
    encode, BatchEncoder, ChannelSpec, Frame, OpenEpisode, TimebaseSpec, PROTOCOL_VERSION,
};

/// What the test does on the episode, in order.
enum Op {
    Push(Range<u64>),
    Packed(Range<u64>),
    Batch(Range<u64>),
    Flush,
}

/// What must be on the wire after HELLO and OPEN, in order (CLOSE follows).
enum Wire {
    Batch(Range<u64>),
    Flush,
}

/// joints f32[7] (28 B, copied), cam0 u8[256,128,3] (98,304 B, large), depth u8[64,64,3]
/// (12,288 B, copied), cam1 u8[320,240,3] (230,400 B, large): 341,020 B a step, 341,041 B
/// a record.
fn camera_spec(id: &str) -> OpenEpisode {
    OpenEpisode::new(id, "FakeCams-v0", TimebaseSpec::Ticks { tick_hz: 30.0 })
        .channel(ChannelSpec::new(
            "joints",
            Lane::Signal,
            DType::F32,
            vec![7],
        ))
        .channel(ChannelSpec::new(
            "cam0",
            Lane::Signal,
            DType::U8,
            vec![256, 128, 3],
        ))
        .channel(ChannelSpec::new(
            "depth",
            Lane::Signal,
            DType::U8,
            vec![64, 64, 3],
        ))
        .channel(ChannelSpec::new(
            "cam1",
            Lane::Signal,
            DType::U8,
            vec![320, 240, 3],
        ))
}

const CAMERA_CHANNELS: [usize; 4] = [28, 98_304, 12_288, 230_400];
const SMALL_CHANNELS: [usize; 2] = [28, 4];

/// Distinct bytes for every (seq, channel, offset), so that a misplaced slice shows.
fn channel_bytes(seq: u64, ch: usize, len: usize) -> Vec<u8> {
    let mut x = (seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (ch as u64) << 56) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

struct Steps {
    /// Per seq, per channel.
    payloads: Vec<Vec<Vec<u8>>>,
    packed: Vec<Vec<u8>>,
    last: u64,
}

impl Steps {
    fn new(channels: &[usize], n: u64) -> Self {
        let payloads: Vec<Vec<Vec<u8>>> = (0..n)
            .map(|s| {
                channels
                    .iter()
                    .enumerate()
                    .map(|(c, &len)| channel_bytes(s, c, len))
                    .collect()
            })
            .collect();
        let packed = payloads.iter().map(|p| p.concat()).collect();
        Self {
            payloads,
            packed,
            last: n - 1,
        }
    }

    fn t_ns(seq: u64) -> i64 {
        seq as i64 * 33_333_333 - 7
    }

    fn reward(seq: u64) -> f32 {
        seq as f32 * 0.25 - 1.0
    }

    fn done(&self, seq: u64) -> bool {
        seq == self.last
    }

    fn refs(&self, seq: u64) -> Vec<&[u8]> {
        self.payloads[seq as usize]
            .iter()
            .map(Vec::as_slice)
            .collect()
    }
}

fn run_ops(ep: &mut wshard_client::EpisodeWriter<'_>, steps: &Steps, ops: &[Op]) {
    for op in ops {
        match op {
            Op::Push(r) => {
                for s in r.clone() {
                    let seq = ep
                        .push(
                            Steps::t_ns(s),
                            Steps::reward(s),
                            steps.done(s),
                            &steps.refs(s),
                        )
                        .unwrap();
                    assert_eq!(seq, s);
                }
            }
            Op::Packed(r) => {
                for s in r.clone() {
                    let seq = ep
                        .push_packed(
                            Steps::t_ns(s),
                            Steps::reward(s),
                            steps.done(s),
                            &steps.packed[s as usize],
                        )
                        .unwrap();
                    assert_eq!(seq, s);
                }
            }
            Op::Batch(r) => {
                let refs: Vec<Vec<&[u8]>> = r.clone().map(|s| steps.refs(s)).collect();
                let batch: Vec<Step<'_>> = r
                    .clone()
                    .zip(&refs)
                    .map(|(s, p)| Step {
                        t_ns: Steps::t_ns(s),
                        reward: Steps::reward(s),
                        done: steps.done(s),
                        payloads: p,
                    })
                    .collect();
                assert_eq!(ep.push_batch(&batch).unwrap(), r.clone());
            }
            Op::Flush => {
                ep.flush().unwrap();
            }
        }
    }
}

fn frame(f: &Frame) -> Vec<u8> {
    let mut out = Vec::new();
    encode(f, &mut out).unwrap();
    out
}

/// HELLO, OPEN, the `wire` frames, CLOSE{completed}, as the proto crate encodes them.
fn expected_stream(spec: &OpenEpisode, steps: &Steps, wire: &[Wire]) -> Vec<u8> {
    let mut out = frame(&Frame::Hello {
        version: PROTOCOL_VERSION,
        client_name: "client-test/1".into(),
    });
    out.extend(frame(&Frame::Open(spec.clone())));
    for w in wire {
        match w {
            Wire::Batch(r) => {
                let mut enc = BatchEncoder::new(&mut out);
                for s in r.clone() {
                    enc.push_step(
                        s,
                        Steps::t_ns(s),
                        Steps::reward(s),
                        steps.done(s),
                        &steps.refs(s),
                    );
                }
                enc.finish().unwrap();
            }
            Wire::Flush => out.extend(frame(&Frame::Flush)),
        }
    }
    out.extend(frame(&Frame::Close {
        outcome: Outcome::Completed,
    }));
    out
}

/// Run `ops` on one episode over a fresh fake server and compare every byte received with
/// `wire`.
fn check_wire(
    cfg: FakeConfig,
    options: ClientOptions,
    spec: OpenEpisode,
    steps: &Steps,
    ops: &[Op],
    wire: &[Wire],
) {
    let server = FakeServer::start(cfg);
    {
        let mut client = connect(&server, options);
        let mut ep = client.open_episode(spec.clone()).unwrap();
        run_ops(&mut ep, steps, ops);
        let summary = ep.close(Outcome::Completed).unwrap();
        assert_eq!(summary.timesteps, steps.last + 1);
    }
    let rec = server.join();
    let want = expected_stream(&spec, steps, wire);
    assert_eq!(rec.steps.len() as u64, steps.last + 1);
    assert_eq!(rec.raw.len(), want.len(), "stream length");
    if let Some(at) = rec.raw.iter().zip(&want).position(|(a, b)| a != b) {
        panic!("stream differs at byte {at} of {}", want.len());
    }
}

#[test]
fn proto_client_large_steps_wire_bytes_identical() {
    // Records of 341,041 B; frames of at most 1 MiB hold 3 of them.
    let options = ClientOptions {
        batch_bytes: 600_000, // a batch is due at its second step
        ..opts()
    };
    let steps = Steps::new(&CAMERA_CHANNELS, 14);
    let ops = [
        Op::Push(0..2),     // step 0 copied, step 1 makes the batch due
        Op::Packed(2..4),   // the same through push_packed
        Op::Push(4..5),     // pending when push_batch comes
        Op::Batch(5..11),   // with step 4: [4, 5, 6] (full frame), [7, 8, 9], [10]
        Op::Push(11..12),   // pending, sent by the flush
        Op::Flush,          //
        Op::Packed(12..13), // pending
        Op::Push(13..14),   // due: [12, 13]
    ];
    let wire = [
        Wire::Batch(0..2),
        Wire::Batch(2..4),
        Wire::Batch(4..7),
        Wire::Batch(7..10),
        Wire::Batch(10..11),
        Wire::Batch(11..12),
        Wire::Flush,
        Wire::Batch(12..14),
    ];
    let spec = camera_spec("ep-cams");
    check_wire(FakeConfig::default(), options, spec, &steps, &ops, &wire);
}

#[test]
fn proto_client_large_steps_default_batching_wire_bytes_identical() {
    // A record is above the default batch_bytes (256 KiB): every push is one frame;
    // push_batch fills frames up to max_frame_bytes (3 records of 1 MiB), pushes are not
    // held back by a pending step.
    let steps = Steps::new(&CAMERA_CHANNELS, 12);
    let ops = [
        Op::Push(0..2),
        Op::Packed(2..3),
        Op::Batch(3..8),
        Op::Push(8..9),
        Op::Batch(9..10),
        Op::Packed(10..12),
        Op::Flush,
    ];
    let wire = [
        Wire::Batch(0..1),
        Wire::Batch(1..2),
        Wire::Batch(2..3),
        Wire::Batch(3..6),
        Wire::Batch(6..8),
        Wire::Batch(8..9),
        Wire::Batch(9..10),
        Wire::Batch(10..11),
        Wire::Batch(11..12),
        Wire::Flush,
    ];
    let spec = camera_spec("ep-cams-default");
    check_wire(FakeConfig::default(), opts(), spec, &steps, &ops, &wire);
}

#[test]
fn proto_client_large_steps_batched_by_steps_wire_bytes_identical() {
    // Sizes never make a batch due (batch_bytes above the frame limit): 2-step batches,
    // split early by max_frame_bytes when a push_batch overflows a frame.
    let options = ClientOptions {
        batch_bytes: 8 << 20,
        batch_steps: 2,
        ..opts()
    };
    let steps = Steps::new(&CAMERA_CHANNELS, 9);
    let ops = [Op::Push(0..3), Op::Batch(3..6), Op::Packed(6..9)];
    let wire = [
        Wire::Batch(0..2),
        Wire::Batch(2..5),
        Wire::Batch(5..6),
        Wire::Batch(6..8),
        Wire::Batch(8..9),
    ];
    let spec = camera_spec("ep-cams-steps");
    check_wire(FakeConfig::default(), options, spec, &steps, &ops, &wire);
}

#[test]
fn proto_client_small_steps_wire_bytes_identical() {
    let options = ClientOptions {
        batch_steps: 4,
        ..opts()
    };
    let steps = Steps::new(&SMALL_CHANNELS, 20);
    let ops = [
        Op::Push(0..6),
        Op::Packed(6..7),
        Op::Batch(7..10),
        Op::Push(10..11),
        Op::Flush,
        Op::Packed(11..20),
    ];
    let wire = [
        Wire::Batch(0..4),
        Wire::Batch(4..10),
        Wire::Batch(10..11),
        Wire::Flush,
        Wire::Batch(11..15),
        Wire::Batch(15..19),
        Wire::Batch(19..20),
    ];
    check_wire(
        FakeConfig::default(),
        options,
        spec("ep-small"),
        &steps,
        &ops,
        &wire,
    );
}

/// 2 x 640x480x3 u8 + joints: the benchmark's camera step (1,843,228 B).
fn vga_spec(id: &str) -> OpenEpisode {
    OpenEpisode::new(id, "FakeCams-v0", TimebaseSpec::Ticks { tick_hz: 30.0 })
        .channel(ChannelSpec::new(
            "cam0",
            Lane::Signal,
            DType::U8,
            vec![480, 640, 3],
        ))
        .channel(ChannelSpec::new(
            "cam1",
            Lane::Signal,
            DType::U8,
            vec![480, 640, 3],
        ))
        .channel(ChannelSpec::new(
            "joints",
            Lane::Signal,
            DType::F32,
            vec![7],
        ))
}

#[test]
fn proto_client_large_steps_short_writes_wire_bytes_identical() {
    // Right after answering OPEN the server stops reading for 1.5 x the client's write
    // timeout (T). The first batch fills the socket buffer (~200 KB of a 1.8 MB frame),
    // the kernel gives up at T (SO_SNDTIMEO) and `sendmsg` returns short, in the middle of
    // the first camera slice; the client must go on from there with the next `sendmsg`,
    // which the server serves again at 1.5 T, before that call's own timeout.
    let spec = vga_spec("ep-short");
    let hello_open = frame(&Frame::Hello {
        version: PROTOCOL_VERSION,
        client_name: "client-test/1".into(),
    })
    .len()
        + frame(&Frame::Open(spec.clone())).len();
    let timeout = Duration::from_millis(1000);
    let cfg = FakeConfig {
        max_frame_bytes: 16 << 20,
        pause_once: Some((hello_open, timeout * 3 / 2)),
        ..FakeConfig::default()
    };
    let options = ClientOptions {
        timeout: Some(timeout),
        ..opts()
    };
    let steps = Steps::new(&[921_600, 921_600, 28], 6);
    let ops = [Op::Push(0..1), Op::Batch(1..5), Op::Packed(5..6)];
    let wire = [Wire::Batch(0..1), Wire::Batch(1..5), Wire::Batch(5..6)];
    check_wire(cfg, options, spec, &steps, &ops, &wire);
}

#[test]
fn proto_client_large_steps_server_error_fails_episode() {
    // Borrowed-payload batches go through the same bookkeeping: the refused batch is
    // reported once, then the episode is failed; the connection stays usable.
    let cfg = FakeConfig {
        reject_seq: Some(3),
        ..FakeConfig::default()
    };
    let server = FakeServer::start(cfg);
    let steps = Steps::new(&CAMERA_CHANNELS, 8);
    {
        let mut client = connect(&server, opts());
        let mut ep = client.open_episode(camera_spec("ep-cams-seq")).unwrap();
        let mut server_error = None;
        for s in 0..8u64 {
            // one frame a step; the one holding seq 3 is refused, seen by a later push
            match ep.push(0, 0.0, false, &steps.refs(s)) {
                Ok(seq) => assert_eq!(seq, s),
                Err(ClientError::Server { code, message }) => {
                    server_error = Some((code, message));
                    break;
                }
                Err(e) => panic!("{e}"),
            }
        }
        match ep.flush() {
            Err(ClientError::EpisodeFailed) => assert!(server_error.is_some()),
            Err(ClientError::Server { code, message }) => server_error = Some((code, message)),
            other => panic!("{other:?}"),
        }
        let (code, message) = server_error.unwrap();
        assert_eq!(code, ErrorCode::Sequence);
        assert_eq!(message, "TIMESTEP seq 3: expected seq 4");
        assert!(matches!(
            ep.push(0, 0.0, false, &steps.refs(0)),
            Err(ClientError::EpisodeFailed)
        ));
        // Batches sent before the ERROR arrived were refused as well (the fake still
        // expects seq 3); close reports such a later ERROR if one is unreported.
        match ep.close(Outcome::Aborted) {
            Ok(summary) => assert_eq!(summary.timesteps, 3),
            Err(ClientError::Server { code, .. }) => assert_eq!(code, ErrorCode::Sequence),
            Err(e) => panic!("{e}"),
        }
    }
    let rec = server.join();
    assert_eq!(rec.steps.len(), 3);
    assert_eq!(rec.closes, [Outcome::Aborted]);
}

#[test]
fn proto_client_large_steps_connection_lost() {
    // The server drops the connection after the first batch: a later vectored write fails
    // (EPIPE / ECONNRESET, never SIGPIPE), and every call after it says the connection is
    // gone.
    let cfg = FakeConfig {
        close_after_batches: Some(1),
        ..FakeConfig::default()
    };
    let server = FakeServer::start(cfg);
    let steps = Steps::new(&CAMERA_CHANNELS, 2);
    {
        let mut client = connect(&server, opts());
        let mut ep = client.open_episode(camera_spec("ep-cams-gone")).unwrap();
        ep.push(0, 0.0, false, &steps.refs(0)).unwrap();
        let mut failed = None;
        for i in 0..1000 {
            let s = (i % 2) as usize;
            let batch = [Step {
                t_ns: 0,
                reward: 0.0,
                done: false,
                payloads: &steps.refs(s as u64),
            }];
            if let Err(e) = ep.push_batch(&batch) {
                failed = Some(e);
                break;
            }
        }
        match failed {
            Some(ClientError::Io(_) | ClientError::Closed) => {}
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            ep.push(0, 0.0, false, &steps.refs(1)),
            Err(ClientError::Closed | ClientError::Io(_))
        ));
        drop(ep);
    }
    assert_eq!(server.join().batch_counts, [1]);
}
