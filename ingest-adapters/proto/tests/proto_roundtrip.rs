//! Encode/parse round trips of every frame type, batch encoding and a proptest over
//! arbitrary frames.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use proptest::prelude::*;
use wshard::episode::{DType, Lane};
use wshard_ingest_proto::{
    encode, encode_timestep, parse, AcceptedWhat, BatchEncoder, ChannelSpec, CodecChoice,
    Durability, ErrorCode, Frame, FrameDecoder, OpenEpisode, Outcome, RingPolicy, TimebaseSpec,
    Timestep, TimestepBatch, TimestepRef,
};

#[test]
fn proto_roundtrip_every_frame_type() {
    let frames = every_frame();
    let mut seen = std::collections::HashSet::new();
    for f in &frames {
        seen.insert(f.frame_type());
        let bytes = wire(f);
        assert_eq!(bytes[4], f.frame_type().code());
        assert_eq!(
            u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize,
            bytes.len() - 4
        );
        assert_eq!(&parse(&bytes).unwrap(), f, "{:?}", f.frame_type());
    }
    assert_eq!(seen.len(), 11, "one frame of each of the 11 types");
}

#[test]
fn proto_roundtrip_stream_through_decoder() {
    let frames = every_frame();
    let mut stream = Vec::new();
    for f in &frames {
        encode(f, &mut stream).unwrap();
    }
    let mut dec = FrameDecoder::new(1 << 20);
    dec.feed(&stream);
    for f in &frames {
        assert_eq!(dec.next_frame().unwrap().as_ref(), Some(f));
    }
    assert_eq!(dec.next_frame().unwrap(), None);
    assert_eq!(dec.buffered(), 0);
}

#[test]
fn proto_known_bytes_hello_and_durable() {
    let hello = wire(&Frame::Hello {
        version: 1,
        client_name: "ab".into(),
    });
    assert_eq!(hello, [7, 0, 0, 0, 0x01, 1, 0, 2, 0, b'a', b'b']);
    let durable = wire(&Frame::Durable { up_to_seq: 0x0102 });
    assert_eq!(durable, [9, 0, 0, 0, 0x83, 2, 1, 0, 0, 0, 0, 0, 0]);
    assert_eq!(wire(&Frame::Flush), [1, 0, 0, 0, 0x06]);
    let attach = wire(&Frame::ShmAttach {
        slot_size: 0x1000,
        slot_count: 64,
        policy: None,
    });
    assert_eq!(attach, [9, 0, 0, 0, 0x07, 0, 0x10, 0, 0, 64, 0, 0, 0]);
    let attach = wire(&Frame::ShmAttach {
        slot_size: 0x1000,
        slot_count: 64,
        policy: Some(RingPolicy::DropNewest),
    });
    assert_eq!(attach, [10, 0, 0, 0, 0x07, 0, 0x10, 0, 0, 64, 0, 0, 0, 1]);
    let accepted = wire(&Frame::Accepted {
        what: AcceptedWhat::ShmAttach,
        up_to_seq: 5,
    });
    assert_eq!(accepted, [10, 0, 0, 0, 0x82, 7, 5, 0, 0, 0, 0, 0, 0, 0]);
}

/// OPEN's durability byte: 0 ack, 1 chunk, 2 the server's default (`None`), both ways; 3 is
/// refused.
#[test]
fn proto_open_durability_codes() {
    let cases = [
        (Some(Durability::Ack), 0u8),
        (Some(Durability::Chunk), 1),
        (None, 2),
    ];
    for (durability, code) in cases {
        let mut open = sample_open();
        open.durability = durability;
        let mut bytes = wire(&Frame::Open(open.clone()));
        // Header, episode_id and env_id (u16 length each), timebase_kind, tick_hz.
        let at = 5 + 2 + open.episode_id.len() + 2 + open.env_id.len() + 1 + 8;
        assert_eq!(bytes[at], code, "{durability:?}");
        assert_eq!(parse(&bytes).unwrap(), Frame::Open(open));
        bytes[at] = 3;
        let e = parse(&bytes).unwrap_err();
        assert!(e.to_string().contains("durability"), "{e}");
    }
    assert_eq!(
        sample_open().with_server_default_durability().durability,
        None
    );
    for d in Durability::ALL {
        assert_eq!(Durability::parse(d.as_str()), Some(d));
    }
    assert_eq!(Durability::parse("server"), None);
}

#[test]
fn proto_batch_encoder_matches_frame_encoding() {
    let batch = sample_batch(10, 5);
    let expected = wire(&Frame::TimestepBatch(batch.clone()));
    let mut out = vec![0xAA]; // something already in the send buffer stays
    let mut enc = BatchEncoder::new(&mut out);
    for s in batch.steps(STEP_BYTES).unwrap() {
        // split the payload per channel as a client would hand it over
        let (a, rest) = s.payload.split_at(28);
        let (b, c) = rest.split_at(8);
        enc.push_step(s.seq, s.t_ns, s.reward, s.done, &[a, b, c]);
    }
    assert_eq!(enc.count(), 5);
    let len = enc.finish().unwrap();
    assert_eq!(len, expected.len());
    assert_eq!(out[0], 0xAA);
    assert_eq!(&out[1..], &expected[..]);
}

#[test]
fn proto_batch_encoder_empty_or_dropped_leaves_nothing() {
    let mut out = vec![1, 2, 3];
    assert_eq!(BatchEncoder::new(&mut out).finish().unwrap(), 0);
    assert_eq!(out, [1, 2, 3]);
    {
        let mut enc = BatchEncoder::new(&mut out);
        enc.push_step(0, 0, 0.0, false, &[&[9; 4]]);
    }
    assert_eq!(out, [1, 2, 3]);
}

#[test]
fn proto_encode_timestep_matches_frame() {
    let step = Timestep {
        seq: 5,
        t_ns: 99,
        reward: -1.0,
        done: false,
        payload: payload(5),
    };
    let mut out = Vec::new();
    encode_timestep(
        &mut out,
        5,
        99,
        -1.0,
        false,
        &[&step.payload[..10], &step.payload[10..]],
    )
    .unwrap();
    assert_eq!(out, wire(&Frame::Timestep(step)));
}

#[test]
fn proto_batch_steps_iterate_borrowed() {
    let batch = sample_batch(0, 3);
    let steps: Vec<TimestepRef<'_>> = batch.steps(STEP_BYTES).unwrap().collect();
    assert_eq!(steps.len(), 3);
    assert_eq!(batch.first_seq(), 0);
    assert_eq!(batch.end_seq(), 3);
    for (i, s) in steps.iter().enumerate() {
        assert_eq!(s.seq, i as u64);
        assert_eq!(s.payload, &payload(i as u64)[..]);
        assert_eq!(s.done, i == 2);
    }
    batch.check_sequence(0).unwrap();
}

fn arb_string(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(any::<char>(), 0..max).prop_map(|v| v.into_iter().collect())
}

fn arb_channel() -> impl Strategy<Value = ChannelSpec> {
    (
        arb_string(12),
        prop_oneof![Just(Lane::Signal), Just(Lane::Action)],
        0usize..13,
        proptest::collection::vec(any::<u32>(), 0..10),
        prop_oneof![
            Just(CodecChoice::Default),
            Just(CodecChoice::None),
            Just(CodecChoice::Lz4),
            any::<i8>().prop_map(|level| CodecChoice::Zstd { level }),
        ],
        proptest::option::of(arb_string(6).prop_filter("non-empty", |s| !s.is_empty())),
    )
        .prop_map(|(name, lane, d, shape, codec, modality)| ChannelSpec {
            name,
            lane,
            dtype: DType::ALL[d],
            shape,
            codec,
            modality,
        })
}

fn arb_open() -> impl Strategy<Value = OpenEpisode> {
    (
        arb_string(20),
        arb_string(20),
        any::<bool>(),
        -1e12f64..1e12,
        any::<bool>(),
        proptest::collection::vec(arb_channel(), 0..5),
        arb_string(30),
    )
        .prop_map(|(id, env, ticks, hz, chunk, channels, meta)| OpenEpisode {
            episode_id: id,
            env_id: env,
            timebase: if ticks {
                TimebaseSpec::Ticks { tick_hz: hz }
            } else {
                TimebaseSpec::TimestampsNs { nominal_hz: hz }
            },
            durability: Some(if chunk {
                Durability::Chunk
            } else {
                Durability::Ack
            }),
            channels,
            metadata_json: meta,
        })
}

fn arb_step() -> impl Strategy<Value = Timestep> {
    (
        any::<u64>(),
        any::<i64>(),
        -1e6f32..1e6,
        any::<bool>(),
        proptest::collection::vec(any::<u8>(), 0..40),
    )
        .prop_map(|(seq, t_ns, reward, done, payload)| Timestep {
            seq,
            t_ns,
            reward,
            done,
            payload,
        })
}

fn arb_batch() -> impl Strategy<Value = TimestepBatch> {
    (any::<u64>(), 1u64..6, 0usize..20, any::<u64>()).prop_map(|(first, n, p, salt)| {
        let first = first / 2;
        let payloads: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                (0..p)
                    .map(|j| (salt as usize + i as usize * 3 + j) as u8)
                    .collect()
            })
            .collect();
        TimestepBatch::from_steps((0..n).map(|i| TimestepRef {
            seq: first + i,
            t_ns: (salt as i64).wrapping_add(i as i64),
            reward: i as f32,
            done: (salt >> i) & 1 == 1,
            payload: &payloads[i as usize],
        }))
        .unwrap()
    })
}

fn arb_frame() -> impl Strategy<Value = Frame> {
    prop_oneof![
        (any::<u16>(), arb_string(20)).prop_map(|(version, client_name)| Frame::Hello {
            version,
            client_name
        }),
        (any::<u16>(), arb_string(20), any::<u32>()).prop_map(|(version, server_name, m)| {
            Frame::HelloOk {
                version,
                server_name,
                max_frame_bytes: m,
            }
        }),
        arb_open().prop_map(Frame::Open),
        arb_step().prop_map(Frame::Timestep),
        arb_batch().prop_map(Frame::TimestepBatch),
        prop_oneof![Just(Outcome::Completed), Just(Outcome::Aborted)]
            .prop_map(|outcome| Frame::Close { outcome }),
        Just(Frame::Flush),
        (0usize..3, any::<u64>()).prop_map(|(w, up_to_seq)| Frame::Accepted {
            what: [
                AcceptedWhat::Open,
                AcceptedWhat::Close,
                AcceptedWhat::ShmAttach
            ][w],
            up_to_seq,
        }),
        (any::<u32>(), any::<u32>(), 0usize..4).prop_map(|(slot_size, slot_count, p)| {
            Frame::ShmAttach {
                slot_size,
                slot_count,
                policy: RingPolicy::ALL.get(p).copied(),
            }
        }),
        any::<u64>().prop_map(|up_to_seq| Frame::Durable { up_to_seq }),
        (0usize..ErrorCode::ALL.len(), arb_string(40))
            .prop_map(|(c, message)| Frame::error(ErrorCode::ALL[c], message)),
    ]
}

proptest! {
    #[test]
    fn proto_prop_arbitrary_frames_roundtrip(frames in proptest::collection::vec(arb_frame(), 1..6), chunk in 1usize..64) {
        let mut stream = Vec::new();
        for f in &frames {
            encode(f, &mut stream).unwrap();
        }
        // each frame parses back alone
        let mut at = 0;
        for f in &frames {
            let len = u32::from_le_bytes(stream[at..at + 4].try_into().unwrap()) as usize + 4;
            prop_assert_eq!(&parse(&stream[at..at + len]).unwrap(), f);
            at += len;
        }
        // and the whole stream through the decoder in arbitrary chunks
        let mut dec = FrameDecoder::new(u32::MAX);
        let mut got = Vec::new();
        for piece in stream.chunks(chunk) {
            dec.feed(piece);
            while let Some(f) = dec.next_frame().unwrap() {
                got.push(f);
            }
        }
        prop_assert_eq!(got, frames);
    }
}
