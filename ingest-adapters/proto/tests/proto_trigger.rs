//! `TRIGGER` and `TRIGGERED` (version 2): round trips, their bytes, every malformed field
//! named (the message starts with the frame's name, so a client tells a trigger's refusal
//! from a timestep's), unknown to a version 1 connection.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use wshard_ingest_proto::{
    check_version, is_event_refusal, is_trigger_refusal, parse, ErrorCode, Frame, FrameType,
    ProtoError, ProtocolVersion, Trigger, Triggered, MAX_TRIGGER_STREAMS,
};

fn trigger() -> Trigger {
    Trigger {
        pre_ns: 30_000_000_000,
        post_ns: 10_000_000_000,
        reason: "teleop button".into(),
        streams: vec!["arm".into(), "ep/cam".into()],
        at_ns: Some(-5),
    }
}

#[test]
fn proto_trigger_round_trips_and_known_bytes() {
    for t in [trigger(), Trigger::default()] {
        let f = Frame::Trigger(t);
        assert_eq!(parse(&wire(&f)).unwrap(), f);
    }
    let reply = Frame::Triggered(Triggered {
        episode: "flight-1-1".into(),
        merged: true,
        window_start_ns: -1,
        window_end_ns: i64::MAX,
    });
    assert_eq!(parse(&wire(&reply)).unwrap(), reply);
    let w = wire(&Frame::Trigger(Trigger {
        pre_ns: 1,
        post_ns: 2,
        reason: "r".into(),
        streams: vec!["s".into()],
        at_ns: None,
    }));
    let mut want = vec![0u8; 4];
    want.push(0x0D);
    want.extend_from_slice(&1i64.to_le_bytes());
    want.extend_from_slice(&2i64.to_le_bytes());
    want.extend_from_slice(&[1, 0, b'r', 1, 0, 1, 0, b's', 0]);
    let body = u32::try_from(want.len() - 4).unwrap();
    want[..4].copy_from_slice(&body.to_le_bytes());
    assert_eq!(w, want);
    assert_eq!(FrameType::Trigger.code(), 0x0D);
    assert_eq!(FrameType::Triggered.code(), 0x85);
    assert!(FrameType::Trigger.is_client_to_server());
    assert!(!FrameType::Triggered.is_client_to_server());
}

#[test]
fn proto_trigger_malformed_fields_are_named_and_start_with_trigger() {
    let full = wire(&Frame::Trigger(trigger()));
    for cut in 5..full.len() {
        let mut bytes = full[..cut].to_vec();
        let body = u32::try_from(cut - 4).unwrap();
        bytes[..4].copy_from_slice(&body.to_le_bytes());
        let e = parse(&bytes).unwrap_err();
        assert!(is_trigger_refusal(&e.to_string()), "{e}");
        assert!(!e.is_fatal(), "{e}");
    }
    // A bad has_at flag, and a count over the limit.
    let mut bad = wire(&Frame::Trigger(Trigger::default()));
    let last = bad.len() - 1;
    bad[last] = 7;
    let e = parse(&bad).unwrap_err();
    assert!(
        matches!(&e, ProtoError::BadValue { field, .. } if field == "has_at"),
        "{e}"
    );
    assert_eq!(e.error_code(), ErrorCode::MalformedFrame);
    let too_many = Trigger {
        streams: vec!["s".into(); MAX_TRIGGER_STREAMS + 1],
        ..Trigger::default()
    };
    let mut out = Vec::new();
    let e = wshard_ingest_proto::encode(&Frame::Trigger(too_many), &mut out).unwrap_err();
    assert!(e.to_string().contains("count"), "{e}");
}

#[test]
fn proto_trigger_refusal_rule() {
    assert!(is_trigger_refusal("TRIGGER: trigger: `pre_ns` is -1 ns"));
    assert!(is_trigger_refusal("TRIGGER field x"));
    for other in ["TRIGGERED", "EVENT: x", "TIMESTEP seq 3", "trigger: x", ""] {
        assert!(!is_trigger_refusal(other), "{other}");
    }
    assert!(!is_event_refusal("TRIGGER: x"));
}

#[test]
fn proto_trigger_frames_are_unknown_to_a_v1_connection() {
    for ty in [FrameType::Trigger, FrameType::Triggered] {
        assert_eq!(ProtocolVersion::introducing(ty), ProtocolVersion::V2);
        let head = [100, 0, 0, 0, ty.code()];
        let e = check_version(&head, 1 << 20, ProtocolVersion::V1).unwrap_err();
        assert_eq!(e.error_code(), ErrorCode::UnknownFrame);
        assert!(check_version(&head, 1 << 20, ProtocolVersion::V2).is_ok());
    }
}
