//! Payload errors: truncation, trailing bytes, bad UTF-8, bad enum values, size mismatches;
//! arbitrary bytes never panic.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use proptest::prelude::*;
use wshard_ingest_proto::{
    check_sequence, parse, ErrorCode, Frame, FrameDecoder, FrameType, ProtoError, Timestep,
    TimestepBatch,
};

fn payload_of(frame: &Frame) -> (u8, Vec<u8>) {
    let w = wire(frame);
    (w[4], w[5..].to_vec())
}

/// OPEN bytes of `sample_open()` and the offset of its first channel.
fn open_bytes() -> (Vec<u8>, usize) {
    let open = sample_open();
    let (_, p) = payload_of(&Frame::Open(open.clone()));
    let first_channel = 2 + open.episode_id.len() + 2 + open.env_id.len() + 1 + 8 + 1 + 2;
    (p, first_channel)
}

fn parse_err(ty: u8, payload: &[u8]) -> ProtoError {
    let e = parse(&raw_frame(ty, payload)).unwrap_err();
    assert!(!e.is_fatal(), "payload errors keep the framing: {e}");
    assert_eq!(e.error_code(), ErrorCode::MalformedFrame, "{e}");
    e
}

#[test]
fn proto_truncated_payload_fields_at_every_cut() {
    for f in every_frame() {
        let (ty, p) = payload_of(&f);
        let min_valid = match f.frame_type() {
            FrameType::Timestep => 21,
            // After `count` the records are checked against it: PAYLOAD_SIZE, below.
            FrameType::TimestepBatch => 4,
            // The trailing policy byte is optional: 8 bytes are a whole SHM_ATTACH.
            FrameType::ShmAttach => 8,
            _ => p.len(),
        };
        for cut in 0..min_valid {
            let e = parse_err(ty, &p[..cut]);
            assert!(
                matches!(e, ProtoError::Truncated { .. }),
                "{:?} cut {cut}: {e}",
                f.frame_type()
            );
        }
    }
    // the message names the frame and field
    let e = parse_err(0x03, &[0; 12]);
    assert_eq!(
        e.to_string(),
        "TIMESTEP: field t_ns truncated: needs 21 bytes, 12 left"
    );
    let e = parse_err(0x83, &[0; 3]);
    assert!(e.to_string().contains("DURABLE: field up_to_seq"), "{e}");
    let (p, ch) = open_bytes();
    let e = parse_err(0x02, &p[..ch + 9]); // inside channels[0]
    assert!(e.to_string().contains("channels[0]."), "{e}");
}

#[test]
fn proto_trailing_garbage_refused() {
    for f in every_frame() {
        let t = f.frame_type();
        if matches!(t, FrameType::Timestep | FrameType::TimestepBatch) {
            continue; // their tail is payload, checked against the schema instead
        }
        if matches!(f, Frame::ShmAttach { policy: None, .. }) {
            continue; // the next byte would be the optional policy (proto_ring tests it)
        }
        let (ty, mut p) = payload_of(&f);
        p.extend_from_slice(&[0xEE, 0xEE]);
        let e = parse_err(ty, &p);
        assert_eq!(
            e,
            ProtoError::TrailingBytes {
                frame: t.name(),
                extra: 2
            }
        );
    }
}

#[test]
fn proto_bad_utf8_names_field() {
    let e = parse_err(0x01, &[1, 0, 2, 0, 0xC3, 0x28]);
    assert_eq!(
        e,
        ProtoError::BadUtf8 {
            frame: "HELLO",
            field: "client_name".into()
        }
    );
    let (mut p, ch) = open_bytes();
    p[ch + 2] = 0xFF; // first byte of channels[0].name
    let e = parse_err(0x02, &p);
    assert_eq!(
        e.to_string(),
        "OPEN: field channels[0].name is not valid UTF-8"
    );
}

fn bad_value(e: &ProtoError) -> (String, u64) {
    match e {
        ProtoError::BadValue { field, value, .. } => (field.clone(), *value),
        other => panic!("expected BadValue, got {other}"),
    }
}

#[test]
fn proto_bad_enum_values() {
    let (p, ch) = open_bytes();
    let name_len = "joints".len();
    let cases: [(usize, u8, &str); 5] = [
        (ch - 12, 2, "timebase_kind"),
        (ch - 3, 9, "durability"),
        (ch + 2 + name_len, 7, "channels[0].lane"),
        (ch + 2 + name_len + 1, 13, "channels[0].dtype"),
        // joints has ndim 1: codec follows one u32
        (ch + 2 + name_len + 3 + 4, 4, "channels[0].codec"),
    ];
    for (at, v, field) in cases {
        let mut q = p.clone();
        q[at] = v;
        let e = parse_err(0x02, &q);
        assert_eq!(bad_value(&e), (field.to_owned(), u64::from(v)), "{e}");
    }
    let mut q = p.clone();
    q[ch + 2 + name_len] = 7;
    assert_eq!(
        parse_err(0x02, &q).to_string(),
        "OPEN: field channels[0].lane has value 7, expected 0 (signal) or 1 (action)"
    );
    assert_eq!(bad_value(&parse_err(0x05, &[2])), ("outcome".into(), 2));
    assert_eq!(
        bad_value(&parse_err(0x82, &[3, 0, 0, 0, 0, 0, 0, 0, 0])),
        ("what".into(), 3)
    );
    assert_eq!(
        bad_value(&parse_err(0x84, &[27, 0, 0, 0])),
        ("code".into(), 27)
    );
    assert_eq!(
        parse_err(0x84, &[27, 0, 0, 0]).to_string(),
        "ERROR: field code has value 27, expected an error code 1..=26"
    );
    assert_eq!(
        bad_value(&parse_err(0x84, &[0, 0, 0, 0])),
        ("code".into(), 0)
    );
    let mut step = vec![0u8; 21];
    step[20] = 2;
    assert_eq!(bad_value(&parse_err(0x03, &step)), ("done".into(), 2));
    let mut zero_count = vec![0u8; 4];
    zero_count.extend_from_slice(&[0; 21]);
    assert_eq!(
        bad_value(&parse_err(0x04, &zero_count)),
        ("count".into(), 0)
    );
}

#[test]
fn proto_timestep_payload_size_mismatch_names_seq_and_sizes() {
    let step = Timestep {
        seq: 17,
        t_ns: 0,
        reward: 0.0,
        done: false,
        payload: vec![0; 92],
    };
    let e = step.validate(88).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::PayloadSize);
    assert_eq!(e.error_code().code(), 12);
    assert!(!e.is_fatal());
    assert_eq!(
        e.to_string(),
        "TIMESTEP seq 17: payload is 92 bytes, schema step is 88 bytes"
    );
    step.validate(92).unwrap();
    let frame = e.to_error_frame();
    assert_eq!(
        frame,
        Frame::Error {
            code: ErrorCode::PayloadSize,
            message: "TIMESTEP seq 17: payload is 92 bytes, schema step is 88 bytes".into()
        }
    );
}

#[test]
fn proto_batch_payload_size_mismatch_names_seq_and_sizes() {
    let batch = sample_batch(17, 4); // 4 x 48-byte payloads
    batch.validate(STEP_BYTES).unwrap();
    let e = batch.validate(44).unwrap_err();
    assert_eq!(
        e,
        ProtoError::PayloadSize {
            seq: 17,
            got: 48,
            want: 44
        }
    );
    assert_eq!(e.error_code(), ErrorCode::PayloadSize);
    // records that do not split into `count` equal steps
    let mut records = batch.records().to_vec();
    records.push(0);
    let odd = TimestepBatch::from_records(4, records).unwrap();
    let e = odd.validate(STEP_BYTES).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::PayloadSize);
    assert_eq!(
        e.to_string(),
        "TIMESTEP_BATCH seq 17 (count 4): steps are 277 bytes, schema needs 4 x (21 + 48) bytes"
    );
}

#[test]
fn proto_batch_sequence_and_done_checked() {
    let batch = sample_batch(5, 3);
    assert_eq!(
        batch.check_sequence(4).unwrap_err(),
        ProtoError::Sequence {
            expected: 4,
            got: 5
        }
    );
    assert_eq!(
        check_sequence(4, 5).unwrap_err().error_code(),
        ErrorCode::Sequence
    );
    let rec = 21 + STEP_BYTES;
    let mut records = batch.records().to_vec();
    records[rec..rec + 8].copy_from_slice(&9u64.to_le_bytes()); // second step seq 9, not 6
    let e = TimestepBatch::from_records(3, records)
        .unwrap()
        .validate(STEP_BYTES)
        .unwrap_err();
    assert_eq!(
        e,
        ProtoError::Sequence {
            expected: 6,
            got: 9
        }
    );
    let mut records = batch.records().to_vec();
    records[rec + 20] = 3; // second step done = 3
    let e = TimestepBatch::from_records(3, records)
        .unwrap()
        .validate(STEP_BYTES)
        .unwrap_err();
    assert_eq!(bad_value(&e), ("seq 6 done".into(), 3));
    assert_eq!(e.error_code(), ErrorCode::MalformedFrame);
}

#[test]
fn proto_error_codes_match_protocol_table() {
    let names = [
        "MALFORMED_FRAME",
        "UNKNOWN_FRAME",
        "FRAME_TOO_LARGE",
        "HANDSHAKE",
        "UNSUPPORTED_VERSION",
        "BAD_SCHEMA",
        "BAD_EPISODE_ID",
        "EPISODE_EXISTS",
        "ALREADY_OPEN",
        "NOT_OPEN",
        "SEQUENCE",
        "PAYLOAD_SIZE",
        "LIMIT",
        "OVERLOADED",
        "STORAGE",
        "SHUTTING_DOWN",
        "INTERNAL",
        "BAD_SHM",
        "DISK_LOW",
        "STOPPED",
        "PERMISSION_DENIED",
        "TIMESTAMP_ORDER",
        "TIMEOUT",
        "UNKNOWN_EPISODE",
        "EPISODE_CLOSED",
        "STREAM_EXISTS",
    ];
    for (i, name) in names.iter().enumerate() {
        let code = ErrorCode::from_u16(i as u16 + 1).unwrap();
        assert_eq!(code.name(), *name);
        assert_eq!(code.code(), i as u16 + 1);
    }
    assert_eq!(ErrorCode::from_u16(0), None);
    assert_eq!(ErrorCode::from_u16(27), None);
    assert_eq!(ErrorCode::ALL.len(), names.len());
    let closing: Vec<u16> = ErrorCode::ALL
        .iter()
        .filter(|c| c.closes_connection())
        .map(|c| c.code())
        .collect();
    assert_eq!(closing, [2, 3, 4, 5, 14, 16, 17, 21, 23]);
}

#[test]
fn proto_error_frame_message_truncated_to_str16() {
    let long = "é".repeat(40_000); // 80 000 bytes
    let Frame::Error { message, .. } = Frame::error(ErrorCode::Internal, long) else {
        unreachable!()
    };
    assert!(message.len() <= 65_535);
    assert!(message.len() >= 65_534);
}

proptest! {
    #[test]
    fn proto_prop_arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300), max in 0u32..400) {
        let _ = parse(&bytes);
        let mut dec = FrameDecoder::new(max);
        dec.feed(&bytes);
        for _ in 0..300 {
            match dec.next_frame() {
                Ok(Some(Frame::TimestepBatch(b))) => { let _ = b.validate(3); }
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => { let _ = (e.to_string(), e.error_code()); if e.is_fatal() { break; } }
            }
        }
    }

    #[test]
    fn proto_prop_typed_garbage_never_panics(ty in prop::sample::select(vec![1u8, 2, 3, 4, 5, 6, 7, 0x81, 0x82, 0x83, 0x84]), body in proptest::collection::vec(any::<u8>(), 0..200), step in 0usize..64) {
        match parse(&raw_frame(ty, &body)) {
            Ok(Frame::TimestepBatch(b)) => { let _ = b.steps(step).map(|s| s.count()); }
            Ok(Frame::Timestep(t)) => { let _ = t.validate(step); }
            Ok(Frame::Open(o)) => { let _ = o.validate(&Default::default()); let _ = o.step_bytes(); }
            Ok(_) => {}
            Err(e) => prop_assert!(!e.is_fatal()),
        }
    }
}
