//! Protocol version 2 frames: round trips, their bytes, every malformed field named, the
//! version negotiation, and the version 2 frame types unknown to a version 1 connection.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use common::*;
use proptest::prelude::*;
use wshard_ingest_proto::{
    check, check_version, encode, parse, AcceptedWhat, ErrorCode, Event, EventKind, Frame,
    FrameDecoder, FrameStatus, FrameType, OpenEpisode, Outcome, ProtoError, ProtocolVersion,
    NEWEST_PROTOCOL_VERSION, PROTOCOL_VERSION,
};

const V2_TYPES: [FrameType; 5] = [
    FrameType::EpisodeOpen,
    FrameType::StreamOpen,
    FrameType::Event,
    FrameType::EpisodeClose,
    FrameType::Counters,
];

fn payload_of(frame: &Frame) -> (u8, Vec<u8>) {
    let w = wire(frame);
    (w[4], w[5..].to_vec())
}

fn parse_err(ty: u8, payload: &[u8]) -> ProtoError {
    let e = parse(&raw_frame(ty, payload)).unwrap_err();
    assert!(!e.is_fatal(), "payload errors keep the framing: {e}");
    assert_eq!(e.error_code(), ErrorCode::MalformedFrame, "{e}");
    e
}

#[test]
fn proto_v2_roundtrip_every_frame() {
    let frames = every_v2_frame();
    let types: BTreeSet<u8> = frames.iter().map(|f| f.frame_type().code()).collect();
    assert_eq!(types, BTreeSet::from([0x08, 0x09, 0x0A, 0x0B, 0x82]));
    let mut stream = Vec::new();
    for f in &frames {
        let bytes = wire(f);
        assert_eq!(bytes[4], f.frame_type().code());
        assert_eq!(&parse(&bytes).unwrap(), f, "{:?}", f.frame_type());
        stream.extend_from_slice(&bytes);
    }
    let mut dec = FrameDecoder::new(1 << 20).with_protocol_version(ProtocolVersion::V2);
    for byte in &stream {
        dec.feed(std::slice::from_ref(byte));
    }
    for f in &frames {
        assert_eq!(dec.next_frame().unwrap().as_ref(), Some(f));
    }
    assert_eq!(dec.next_frame().unwrap(), None);
    for ty in V2_TYPES {
        assert!(ty.is_client_to_server(), "{ty:?}");
        assert_eq!(FrameType::from_code(ty.code()), Some(ty));
    }
}

#[test]
fn proto_v2_known_bytes() {
    let ep = wire(&Frame::EpisodeOpen(
        wshard_ingest_proto::EpisodeOpen::new("e", "v").with_metadata_json("{}"),
    ));
    assert_eq!(
        ep,
        [13, 0, 0, 0, 0x08, 1, 0, b'e', 1, 0, b'v', 2, 0, 0, 0, b'{', b'}']
    );
    let ev = wire(&Frame::Event(Event::binary(0x0102, "l", vec![9, 8])));
    assert_eq!(
        ev,
        [19, 0, 0, 0, 0x0A, 2, 1, 0, 0, 0, 0, 0, 0, 2, 1, 0, b'l', 2, 0, 0, 0, 9, 8]
    );
    assert_eq!(
        wire(&Frame::EpisodeClose {
            outcome: Outcome::Completed
        }),
        [2, 0, 0, 0, 0x0B, 0]
    );
    let acc = wire(&Frame::Accepted {
        what: AcceptedWhat::Event,
        up_to_seq: 3,
    });
    assert_eq!(acc, [10, 0, 0, 0, 0x82, 10, 3, 0, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn proto_v2_stream_open_is_open_with_the_stream_in_place_of_env_id() {
    // STREAM_OPEN's fields after `stream` are OPEN's after `env_id`, byte for byte.
    let stream = sample_stream_open();
    let (_, s) = payload_of(&Frame::StreamOpen(Box::new(stream.clone())));
    let open = OpenEpisode {
        episode_id: stream.episode_id.clone(),
        env_id: stream.stream().to_owned(),
        ..stream.schema.clone()
    };
    let (_, o) = payload_of(&Frame::Open(open));
    assert_eq!(s, o);
    // env_id is not on the wire: a parsed STREAM_OPEN has it empty.
    let mut with_env = stream.clone();
    with_env.schema.env_id = "ignored".into();
    let Frame::StreamOpen(back) = parse(&wire(&Frame::StreamOpen(Box::new(with_env)))).unwrap()
    else {
        unreachable!()
    };
    assert_eq!(*back, stream);
    assert_eq!(back.stream(), "joints");
}

/// The field a payload cut at `cut` bytes is reported truncated at.
fn truncated_field(ty: u8, payload: &[u8], cut: usize) -> String {
    match parse_err(ty, &payload[..cut]) {
        ProtoError::Truncated { field, .. } => field,
        other => panic!("0x{ty:02x} cut {cut}: expected Truncated, got {other}"),
    }
}

#[test]
fn proto_v2_every_truncated_field_is_named() {
    let cases: [(Frame, &[&str]); 4] = [
        (
            Frame::EpisodeOpen(wshard_ingest_proto::EpisodeOpen::new("ep", "env")),
            &["episode_id", "env_id", "metadata_json"],
        ),
        (
            Frame::StreamOpen(Box::new(sample_stream_open())),
            &[
                "episode_id",
                "stream",
                "timebase_kind",
                "tick_hz",
                "durability",
                "channel_count",
                "channels[0].name",
                "channels[0].lane",
                "channels[0].dtype",
                "channels[0].ndim",
                "channels[0].dims",
                "channels[0].codec",
                "channels[0].codec_level",
                "channels[0].modality",
                "channels[1].name",
                "channels[2].modality",
                "metadata_json",
            ],
        ),
        (
            Frame::Event(Event::text(1, "label", "data")),
            &["t_ns", "kind", "label", "data"],
        ),
        (
            Frame::EpisodeClose {
                outcome: Outcome::Completed,
            },
            &["outcome"],
        ),
    ];
    for (frame, want) in cases {
        let (ty, p) = payload_of(&frame);
        let named: BTreeSet<String> = (0..p.len())
            .map(|cut| truncated_field(ty, &p, cut))
            .collect();
        for field in want {
            assert!(
                named.contains(*field),
                "{:?}: {field} in {named:?}",
                frame.frame_type()
            );
        }
    }
    let e = parse_err(0x0A, &[0; 9]);
    assert_eq!(
        e.to_string(),
        "EVENT: field label truncated: needs 2 bytes, 0 left"
    );
    // data announces more bytes than the frame holds
    let (_, mut p) = payload_of(&Frame::Event(Event::binary(1, "", vec![1, 2, 3])));
    p.pop();
    assert_eq!(
        parse_err(0x0A, &p).to_string(),
        "EVENT: field data truncated: needs 3 bytes, 2 left"
    );
}

#[test]
fn proto_v2_trailing_bytes_and_bad_utf8_are_named() {
    for f in every_v2_frame() {
        let (ty, mut p) = payload_of(&f);
        p.push(0);
        assert!(
            matches!(
                parse_err(ty, &p),
                ProtoError::TrailingBytes { extra: 1, .. }
            ),
            "{:?}",
            f.frame_type()
        );
    }
    let utf8 = |ty: u8, p: &[u8]| match parse_err(ty, p) {
        ProtoError::BadUtf8 { frame, field } => format!("{frame} {field}"),
        other => panic!("expected BadUtf8, got {other}"),
    };
    let (_, mut p) = payload_of(&Frame::StreamOpen(Box::new(sample_stream_open())));
    p[2 + "ep-7".len() + 2] = 0xFF; // first byte of `stream`
    assert_eq!(utf8(0x09, &p), "STREAM_OPEN stream");
    let (_, mut p) = payload_of(&Frame::StreamOpen(Box::new(sample_stream_open())));
    p[2] = 0xFF; // first byte of `episode_id`
    assert_eq!(utf8(0x09, &p), "STREAM_OPEN episode_id");
    let (_, mut p) = payload_of(&Frame::EpisodeOpen(wshard_ingest_proto::EpisodeOpen::new(
        "e", "v",
    )));
    p[2 + 1 + 2] = 0xFF; // env_id
    assert_eq!(utf8(0x08, &p), "EPISODE_OPEN env_id");
    let (_, mut p) = payload_of(&Frame::Event(Event::text(0, "x", "y")));
    p[8 + 1 + 2] = 0xFF; // label
    assert_eq!(utf8(0x0A, &p), "EVENT label");
    // The data of an EVENT is bytes on the wire: not UTF-8 parses (its kind is checked by
    // `Event::validate`).
    let (_, mut p) = payload_of(&Frame::Event(Event::text(0, "x", "y")));
    let last = p.len() - 1;
    p[last] = 0xFF;
    assert!(parse(&raw_frame(0x0A, &p)).is_ok());
}

fn bad_value(e: &ProtoError) -> (String, u64, String) {
    match e {
        ProtoError::BadValue {
            field,
            value,
            frame,
            ..
        } => (frame.to_string(), *value, field.clone()),
        other => panic!("expected BadValue, got {other}"),
    }
}

#[test]
fn proto_v2_bad_enum_values_are_named() {
    let (_, mut p) = payload_of(&Frame::Event(Event::text(0, "x", "y")));
    p[8] = 3;
    let e = parse_err(0x0A, &p);
    assert_eq!(bad_value(&e), ("EVENT".into(), 3, "kind".into()));
    assert_eq!(
        e.to_string(),
        "EVENT: field kind has value 3, expected 0 (text), 1 (json) or 2 (binary)"
    );
    assert_eq!(
        bad_value(&parse_err(0x0B, &[2])),
        ("EPISODE_CLOSE".into(), 2, "outcome".into())
    );
    let stream = sample_stream_open();
    let (_, p) = payload_of(&Frame::StreamOpen(Box::new(stream.clone())));
    let kind_at = 2 + stream.episode_id.len() + 2 + stream.stream().len();
    for (at, v, field) in [
        (kind_at, 2, "timebase_kind"),
        (kind_at + 9, 7, "durability"),
        (kind_at + 14 + "joints".len(), 2, "channels[0].lane"),
    ] {
        let mut q = p.clone();
        q[at] = v;
        assert_eq!(
            bad_value(&parse_err(0x09, &q)),
            ("STREAM_OPEN".into(), u64::from(v), field.into())
        );
    }
    for what in [0u8, 1, 3, 4, 6, 12, 0x82] {
        let mut q = vec![what];
        q.extend_from_slice(&[0; 8]);
        let e = parse_err(0x82, &q);
        assert_eq!(
            bad_value(&e),
            ("ACCEPTED".into(), u64::from(what), "what".into())
        );
        assert!(e.to_string().ends_with(AcceptedWhat::EXPECTED), "{e}");
    }
}

#[test]
fn proto_v2_accepted_what_and_event_kind_codes() {
    let codes: Vec<u8> = AcceptedWhat::ALL.iter().map(|w| w.code()).collect();
    assert_eq!(codes, [2, 5, 7, 8, 9, 10, 11]);
    for w in AcceptedWhat::ALL {
        assert_eq!(AcceptedWhat::from_code(w.code()), Some(w));
        assert_eq!(w.frame_type().code(), w.code());
        assert!(AcceptedWhat::EXPECTED.contains(&format!(
            "{} ({})",
            w.code(),
            w.frame_type().name()
        )));
    }
    let kinds: Vec<(u8, &str)> = EventKind::ALL
        .iter()
        .map(|k| (k.code(), k.as_str()))
        .collect();
    assert_eq!(kinds, [(0, "text"), (1, "json"), (2, "binary")]);
    assert_eq!(EventKind::from_code(3), None);
}

#[test]
fn proto_v2_version_negotiation() {
    assert_eq!(PROTOCOL_VERSION, 1);
    assert_eq!(NEWEST_PROTOCOL_VERSION, 2);
    assert_eq!(ProtocolVersion::NEWEST.code(), NEWEST_PROTOCOL_VERSION);
    // HELLO_OK answers min(HELLO's, 2); 0 is no version at all.
    let cases = [
        (0, None),
        (1, Some(1)),
        (2, Some(2)),
        (3, Some(2)),
        (u16::MAX, Some(2)),
    ];
    for (asked, answered) in cases {
        assert_eq!(
            ProtocolVersion::negotiate(asked).map(ProtocolVersion::code),
            answered,
            "HELLO {asked}"
        );
    }
    assert_eq!(ProtocolVersion::from_code(3), None);
    assert_eq!(ProtocolVersion::default(), ProtocolVersion::V1);
    for code in 0u8..=0xFF {
        let Some(ty) = FrameType::from_code(code) else {
            continue;
        };
        assert!(ProtocolVersion::V2.knows(ty), "{ty:?}");
        let v2_only =
            V2_TYPES.contains(&ty) || matches!(ty, FrameType::Trigger | FrameType::Triggered);
        assert_eq!(ProtocolVersion::V1.knows(ty), !v2_only, "{ty:?}");
    }
}

#[test]
fn proto_v2_frames_are_unknown_to_a_v1_connection() {
    for ty in V2_TYPES {
        // Decided from the type byte, before the body is buffered, as for any unknown type.
        let head = [100, 0, 0, 0, ty.code()];
        let e = check_version(&head, 1 << 20, ProtocolVersion::V1).unwrap_err();
        assert!(e.is_fatal());
        assert_eq!(e.error_code(), ErrorCode::UnknownFrame);
        assert_eq!(
            e.to_string(),
            format!(
                "unknown frame type 0x{:02x} for protocol version 1 ({} needs version 2, \
                 asked for in HELLO)",
                ty.code(),
                ty.name()
            )
        );
        assert_eq!(
            check_version(&head, 1 << 20, ProtocolVersion::V2),
            Ok(FrameStatus::Incomplete { need: 104 })
        );
        assert_eq!(
            check(&head, 1 << 20),
            Ok(FrameStatus::Incomplete { need: 104 })
        );
    }
    // A decoder is version 1 until told: what a v1 server answers, and it stays failed.
    let mut stream = wire(&Frame::Hello {
        version: PROTOCOL_VERSION,
        client_name: "old".into(),
    });
    stream.extend_from_slice(&wire(&every_v2_frame()[0]));
    stream.extend_from_slice(&wire(&Frame::Flush));
    let mut dec = FrameDecoder::new(1 << 20);
    assert_eq!(dec.protocol_version(), ProtocolVersion::V1);
    dec.feed(&stream);
    assert!(matches!(dec.next_frame(), Ok(Some(Frame::Hello { .. }))));
    for _ in 0..2 {
        let e = dec.next_frame().unwrap_err();
        assert!(
            matches!(
                e,
                ProtoError::FrameNotInVersion {
                    frame_type: 0x08,
                    ..
                }
            ),
            "{e}"
        );
    }
}

#[test]
fn proto_v2_decoder_switches_version_after_hello() {
    // HELLO{2} and the first request in one read: the server sets the version it answered
    // before it asks for the next frame.
    let mut stream = wire(&Frame::Hello {
        version: NEWEST_PROTOCOL_VERSION,
        client_name: "new".into(),
    });
    for f in every_v2_frame().iter().take(6) {
        encode(f, &mut stream).unwrap();
    }
    let mut dec = FrameDecoder::new(1 << 20);
    dec.feed(&stream);
    let Some(Frame::Hello { version, .. }) = dec.next_frame().unwrap() else {
        panic!("HELLO first")
    };
    dec.set_protocol_version(ProtocolVersion::negotiate(version).unwrap());
    for f in every_v2_frame().iter().take(6) {
        assert_eq!(dec.next_frame().unwrap().as_ref(), Some(f));
    }
}

fn arb_text(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(any::<char>(), 0..max).prop_map(|v| v.into_iter().collect())
}

fn arb_v2_frame() -> impl Strategy<Value = Frame> {
    prop_oneof![
        (arb_text(12), arb_text(12), arb_text(20)).prop_map(
            |(episode_id, env_id, metadata_json)| {
                Frame::EpisodeOpen(wshard_ingest_proto::EpisodeOpen {
                    episode_id,
                    env_id,
                    metadata_json,
                })
            }
        ),
        (arb_text(12), arb_text(12), -1e12f64..1e12, 0usize..3).prop_map(|(ep, name, hz, n)| {
            let mut s = sample_stream_open();
            s.episode_id = ep;
            s.schema.episode_id = name;
            s.schema.timebase = wshard_ingest_proto::TimebaseSpec::Ticks { tick_hz: hz };
            s.schema.channels.truncate(n);
            Frame::StreamOpen(Box::new(s))
        }),
        (
            any::<i64>(),
            0usize..3,
            arb_text(10),
            proptest::collection::vec(any::<u8>(), 0..50)
        )
            .prop_map(|(t_ns, k, label, data)| Frame::Event(Event {
                t_ns,
                kind: EventKind::ALL[k],
                label,
                data,
            })),
        any::<bool>().prop_map(|a| Frame::EpisodeClose {
            outcome: if a {
                Outcome::Aborted
            } else {
                Outcome::Completed
            }
        }),
        (0usize..AcceptedWhat::ALL.len(), any::<u64>()).prop_map(|(w, up_to_seq)| {
            Frame::Accepted {
                what: AcceptedWhat::ALL[w],
                up_to_seq,
            }
        }),
    ]
}

proptest! {
    #[test]
    fn proto_v2_prop_frames_roundtrip(frames in proptest::collection::vec(arb_v2_frame(), 1..6), chunk in 1usize..64) {
        let mut stream = Vec::new();
        for f in &frames {
            encode(f, &mut stream).unwrap();
        }
        let mut dec = FrameDecoder::new(u32::MAX).with_protocol_version(ProtocolVersion::V2);
        let mut got = Vec::new();
        for piece in stream.chunks(chunk) {
            dec.feed(piece);
            while let Some(f) = dec.next_frame().unwrap() {
                got.push(f);
            }
        }
        prop_assert_eq!(got, frames);
    }

    #[test]
    fn proto_v2_prop_garbage_never_panics(ty in 0x08u8..=0x0B, body in proptest::collection::vec(any::<u8>(), 0..200)) {
        match parse(&raw_frame(ty, &body)) {
            Ok(Frame::StreamOpen(s)) => {
                let _ = s.validate(&Default::default());
                let _ = s.schema.schema_difference(&s.schema);
            }
            Ok(Frame::EpisodeOpen(e)) => { let _ = e.validate(&Default::default()); }
            Ok(Frame::Event(e)) => { let _ = e.validate(64); }
            Ok(_) => {}
            Err(e) => prop_assert!(!e.is_fatal()),
        }
    }
}
