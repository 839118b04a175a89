//! Sample frames shared by the proto tests.
#![allow(clippy::unwrap_used, dead_code)]

use wshard::episode::{DType, Lane};
use wshard_ingest_proto::{
    encode, AcceptedWhat, ChannelSpec, CodecChoice, Durability, EpisodeOpen, ErrorCode, Event,
    Frame, OpenEpisode, Outcome, RingPolicy, StreamOpen, TimebaseSpec, Timestep, TimestepBatch,
    TimestepRef, PROTOCOL_VERSION,
};

/// joints f32[7] (28 bytes) + gripper action f64 (8 bytes) + rgb u8[2,2,3] (12 bytes) = 48.
pub const STEP_BYTES: usize = 48;

pub fn sample_open() -> OpenEpisode {
    OpenEpisode::new(
        "ep-0001.run_2",
        "Franka-teleop",
        TimebaseSpec::Ticks { tick_hz: 30.0 },
    )
    .with_durability(Durability::Chunk)
    .channel(ChannelSpec::new(
        "joints",
        Lane::Signal,
        DType::F32,
        vec![7],
    ))
    .channel(
        ChannelSpec::new("gripper", Lane::Action, DType::F64, vec![])
            .with_codec(CodecChoice::Zstd { level: 9 }),
    )
    .channel(
        ChannelSpec::new("cam/wrist", Lane::Signal, DType::U8, vec![2, 2, 3])
            .with_codec(CodecChoice::Lz4)
            .with_modality("rgb"),
    )
    .with_metadata_json(r#"{"operator":"ana"}"#)
}

pub fn payload(seq: u64) -> Vec<u8> {
    (0..STEP_BYTES)
        .map(|i| (seq as usize * 7 + i) as u8)
        .collect()
}

pub fn sample_batch(first: u64, count: u64) -> TimestepBatch {
    let payloads: Vec<Vec<u8>> = (first..first + count).map(payload).collect();
    TimestepBatch::from_steps(
        (first..first + count)
            .zip(&payloads)
            .map(|(seq, p)| TimestepRef {
                seq,
                t_ns: 1_000 * seq as i64,
                reward: seq as f32 * 0.5,
                done: seq + 1 == first + count,
                payload: p,
            }),
    )
    .unwrap()
}

/// One frame of every type.
pub fn every_frame() -> Vec<Frame> {
    vec![
        Frame::Hello {
            version: PROTOCOL_VERSION,
            client_name: "teleop-loop/0.3".into(),
        },
        Frame::HelloOk {
            version: PROTOCOL_VERSION,
            server_name: "wshardd/0.1.0".into(),
            max_frame_bytes: 64 << 20,
        },
        Frame::Open(sample_open()),
        Frame::Timestep(Timestep {
            seq: 17,
            t_ns: -5,
            reward: 1.25,
            done: true,
            payload: payload(17),
        }),
        Frame::TimestepBatch(sample_batch(3, 4)),
        Frame::Close {
            outcome: Outcome::Aborted,
        },
        Frame::Flush,
        Frame::ShmAttach {
            slot_size: 4096,
            slot_count: 64,
            policy: None,
        },
        Frame::ShmAttach {
            slot_size: 4096,
            slot_count: 2,
            policy: Some(RingPolicy::DropOldest),
        },
        Frame::Accepted {
            what: AcceptedWhat::Close,
            up_to_seq: 42,
        },
        Frame::Accepted {
            what: AcceptedWhat::ShmAttach,
            up_to_seq: 7,
        },
        Frame::Durable { up_to_seq: 41 },
        Frame::error(
            ErrorCode::PayloadSize,
            "TIMESTEP seq 17: payload is 92 bytes",
        ),
    ]
}

pub fn wire(frame: &Frame) -> Vec<u8> {
    let mut out = Vec::new();
    encode(frame, &mut out).unwrap();
    out
}

/// A frame of type `ty` with body `payload`.
pub fn raw_frame(ty: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = ((payload.len() + 1) as u32).to_le_bytes().to_vec();
    out.push(ty);
    out.extend_from_slice(payload);
    out
}

/// The stream `joints` of episode `ep-7`: the channels of `sample_open()`, at 1 kHz.
pub fn sample_stream_open() -> StreamOpen {
    let open = sample_open();
    StreamOpen {
        episode_id: "ep-7".into(),
        schema: OpenEpisode {
            episode_id: "joints".into(),
            env_id: String::new(),
            timebase: TimebaseSpec::TimestampsNs { nominal_hz: 1000.0 },
            ..open
        },
    }
}

/// One frame of every type protocol version 2 adds, and the new `ACCEPTED.what` values.
pub fn every_v2_frame() -> Vec<Frame> {
    vec![
        Frame::EpisodeOpen(
            EpisodeOpen::new("ep-7", "Franka-teleop").with_metadata_json(r#"{"task":"pick"}"#),
        ),
        Frame::StreamOpen(Box::new(sample_stream_open())),
        Frame::Event(Event::text(-3, "instruction", "pick up the red cube")),
        Frame::Event(Event::json(5, "score", r#"{"ok":true}"#)),
        Frame::Event(Event::binary(9, "", vec![0, 255, 7])),
        Frame::EpisodeClose {
            outcome: Outcome::Aborted,
        },
        Frame::Accepted {
            what: AcceptedWhat::EpisodeOpen,
            up_to_seq: 0,
        },
        Frame::Accepted {
            what: AcceptedWhat::StreamOpen,
            up_to_seq: 0,
        },
        Frame::Accepted {
            what: AcceptedWhat::Event,
            up_to_seq: 12,
        },
        Frame::Accepted {
            what: AcceptedWhat::EpisodeClose,
            up_to_seq: 2,
        },
    ]
}
