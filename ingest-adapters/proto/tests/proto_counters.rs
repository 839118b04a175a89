//! `COUNTERS` (protocol version 2): its bytes, round trips, the limits (count, name
//! length, name characters, duplicates), hostile payloads, and its absence from version 1.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use proptest::prelude::*;
use wshard_ingest_proto::{
    check_version, encode, encode_to_vec, parse, validate_counter_name, Counter, Counters,
    ErrorCode, Frame, FrameDecoder, FrameType, ProtoError, ProtocolVersion, MAX_COUNTERS_PER_FRAME,
    MAX_COUNTER_NAME_BYTES,
};

const COUNTERS: u8 = 0x0C;

fn parse_err(payload: &[u8]) -> ProtoError {
    let e = parse(&raw_frame(COUNTERS, payload)).unwrap_err();
    assert!(!e.is_fatal(), "payload errors keep the framing: {e}");
    assert_eq!(e.error_code(), ErrorCode::MalformedFrame, "{e}");
    assert!(e.to_string().starts_with("COUNTERS: "), "{e}");
    e
}

/// A payload built by hand: `count`, then `(name, value)` entries.
fn payload(count: u16, entries: &[(&[u8], u64)]) -> Vec<u8> {
    let mut p = count.to_le_bytes().to_vec();
    for (name, value) in entries {
        p.extend_from_slice(&u16::try_from(name.len()).unwrap().to_le_bytes());
        p.extend_from_slice(name);
        p.extend_from_slice(&value.to_le_bytes());
    }
    p
}

#[test]
fn proto_counters_known_bytes() {
    let f = Frame::Counters(Counters::new([("rx", 0x0102), ("a_1", u64::MAX)]));
    assert_eq!(f.frame_type(), FrameType::Counters);
    assert_eq!(FrameType::Counters.code(), COUNTERS);
    assert_eq!(FrameType::Counters.name(), "COUNTERS");
    assert!(FrameType::Counters.is_client_to_server());
    let w = wire(&f);
    #[rustfmt::skip]
    let want: Vec<u8> = vec![
        28, 0, 0, 0, 0x0C,          // body_len 28, type
        2, 0,                       // count 2
        2, 0, b'r', b'x',           // name "rx"
        0x02, 0x01, 0, 0, 0, 0, 0, 0, // value 0x0102, little-endian
        3, 0, b'a', b'_', b'1',     // name "a_1"
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    ];
    assert_eq!(w, want);
    assert_eq!(parse(&w).unwrap(), f);
    let Frame::Counters(c) = &f else {
        unreachable!()
    };
    assert_eq!(c.payload_len(), w.len() - 5);
    // An empty frame is valid: it changes nothing.
    let empty = wire(&Frame::Counters(Counters::default()));
    assert_eq!(empty, [3, 0, 0, 0, 0x0C, 0, 0]);
    assert_eq!(parse(&empty).unwrap(), Frame::Counters(Counters::default()));
}

#[test]
fn proto_counters_limits_are_exact() {
    // 32 counters of 32-byte names: the largest valid frame.
    let names: Vec<String> = (0..MAX_COUNTERS_PER_FRAME)
        .map(|i| format!("{i:0>32}"))
        .collect();
    let full = Counters::new(names.iter().map(|n| (n.as_str(), 7)));
    let w = wire(&Frame::Counters(full.clone()));
    assert_eq!(parse(&w).unwrap(), Frame::Counters(full.clone()));
    // One more counter does not encode and does not parse.
    let mut over = full.clone();
    over.counters.push(Counter {
        name: "x".into(),
        value: 1,
    });
    let e = encode_to_vec(&Frame::Counters(over)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "COUNTERS: field count has value 33, expected 0..=32 (the most counters a COUNTERS frame carries)"
    );
    let e = parse_err(&payload(33, &[]));
    assert!(e.to_string().contains("field count has value 33"), "{e}");
    // Names of 32 bytes pass, 33 do not.
    assert_eq!(
        validate_counter_name(&"a".repeat(MAX_COUNTER_NAME_BYTES)),
        Ok(())
    );
    let long = "a".repeat(MAX_COUNTER_NAME_BYTES + 1);
    let e = parse_err(&payload(1, &[(long.as_bytes(), 1)]));
    assert_eq!(
        e.to_string(),
        format!("COUNTERS: counter 0 \"{long}\" is 33 bytes (must be 1..=32 bytes)")
    );
}

#[test]
fn proto_counters_bad_names_are_named() {
    for (name, reason) in [
        (&b""[..], "is empty (must be 1..=32 bytes)"),
        (b"Received", "has 'R' at byte 0 (allowed: a-z, 0-9, _)"),
        (b"rx-count", "has '-' at byte 2 (allowed: a-z, 0-9, _)"),
        (b"rx count", "has ' ' at byte 2 (allowed: a-z, 0-9, _)"),
        (
            "r\u{e9}".as_bytes(),
            "has '\u{e9}' at byte 1 (allowed: a-z, 0-9, _)",
        ),
    ] {
        let p = payload(2, &[(b"ok", 1), (name, 2)]);
        let e = parse_err(&p);
        let shown = String::from_utf8(name.to_vec()).unwrap();
        assert_eq!(
            e.to_string(),
            format!("COUNTERS: counter 1 {shown:?} {reason}")
        );
        // The encoder refuses the same frame (nothing is written).
        let f = Frame::Counters(Counters::new([("ok", 1), (shown.as_str(), 2)]));
        let mut out = vec![0xAA];
        assert_eq!(encode(&f, &mut out).unwrap_err(), e);
        assert_eq!(out, [0xAA]);
    }
    let e = parse_err(&payload(3, &[(b"rx", 1), (b"tx", 2), (b"rx", 3)]));
    assert_eq!(
        e.to_string(),
        "COUNTERS: counter 2 \"rx\" appears twice in the frame (names are unique per frame)"
    );
    // A name that is not UTF-8.
    let e = parse_err(&payload(1, &[(&[0xFF, 0xFE], 1)]));
    assert_eq!(
        e.to_string(),
        "COUNTERS: field counters[0].name is not valid UTF-8"
    );
}

#[test]
fn proto_counters_truncated_and_trailing_bytes_are_named() {
    let full = payload(2, &[(b"rx", 1), (b"tx", 2)]);
    let fields = |cut: usize| match parse_err(&full[..cut]) {
        ProtoError::Truncated { field, .. } => field,
        other => panic!("cut {cut}: {other}"),
    };
    assert_eq!(fields(0), "count");
    assert_eq!(fields(1), "count");
    assert_eq!(fields(2), "counters[0].name");
    assert_eq!(fields(5), "counters[0].name");
    assert_eq!(fields(6), "counters[0].value");
    assert_eq!(fields(13), "counters[0].value");
    assert_eq!(fields(14), "counters[1].name");
    assert_eq!(fields(full.len() - 1), "counters[1].value");
    let mut extra = full.clone();
    extra.push(0);
    assert_eq!(
        parse_err(&extra).to_string(),
        "COUNTERS: 1 trailing bytes after the last field"
    );
}

#[test]
fn proto_counters_hostile_count_is_refused_before_reading() {
    // A count of 65535 with nothing after it: refused for the count, not for the bytes
    // it would need, and nothing is allocated for it.
    let e = parse_err(&u16::MAX.to_le_bytes());
    assert!(e.to_string().contains("field count has value 65535"), "{e}");
    // A name length far beyond the frame.
    let mut p = 1u16.to_le_bytes().to_vec();
    p.extend_from_slice(&u16::MAX.to_le_bytes());
    match parse_err(&p) {
        ProtoError::Truncated {
            field, need, have, ..
        } => {
            assert_eq!(field, "counters[0].name");
            assert_eq!((need, have), (65535, 0));
        }
        other => panic!("{other}"),
    }
}

#[test]
fn proto_counters_unknown_to_version_1() {
    let w = wire(&Frame::Counters(Counters::new([("rx", 1)])));
    let e = check_version(&w, 1 << 20, ProtocolVersion::V1).unwrap_err();
    assert!(e.is_fatal());
    assert_eq!(e.error_code(), ErrorCode::UnknownFrame);
    assert_eq!(
        e.to_string(),
        "unknown frame type 0x0c for protocol version 1 (COUNTERS needs version 2, asked for in HELLO)"
    );
    assert_eq!(
        ProtocolVersion::introducing(FrameType::Counters),
        ProtocolVersion::V2
    );
    let mut dec = FrameDecoder::new(1 << 20).with_protocol_version(ProtocolVersion::V2);
    dec.feed(&w);
    assert_eq!(
        dec.next_frame().unwrap(),
        Some(Frame::Counters(Counters::new([("rx", 1)])))
    );
}

fn name_strategy() -> impl Strategy<Value = String> {
    "[a-z0-9_]{1,32}"
}

proptest! {
    #[test]
    fn proto_counters_prop_roundtrip(
        entries in proptest::collection::btree_map(name_strategy(), any::<u64>(), 0..=32)
    ) {
        let c = Counters::new(entries.iter().map(|(k, v)| (k.as_str(), *v)));
        let w = wire(&Frame::Counters(c.clone()));
        prop_assert_eq!(w.len(), 5 + c.payload_len());
        prop_assert_eq!(parse(&w).unwrap(), Frame::Counters(c));
    }

    #[test]
    fn proto_counters_prop_garbage_never_panics(
        body in proptest::collection::vec(any::<u8>(), 0..400)
    ) {
        match parse(&raw_frame(COUNTERS, &body)) {
            Ok(Frame::Counters(c)) => {
                prop_assert!(c.validate().is_ok());
                prop_assert_eq!(encode_to_vec(&Frame::Counters(c)).unwrap(), raw_frame(COUNTERS, &body));
            }
            Ok(other) => prop_assert!(false, "{other:?}"),
            Err(e) => {
                prop_assert!(!e.is_fatal());
                prop_assert_eq!(e.error_code(), ErrorCode::MalformedFrame);
            }
        }
    }
}
