//! Protocol version 2 rules: stream names, the checks of EPISODE_OPEN and STREAM_OPEN, the
//! event data checks and size limit, the schema difference of a reused stream name, the
//! new error codes.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use wshard::episode::{DType, Lane};
use wshard_ingest_proto::{
    validate_stream_name, ChannelSpec, CodecChoice, Durability, EpisodeOpen, ErrorCode, Event,
    EventKind, ProtoError, SchemaLimits, TimebaseSpec, DEFAULT_MAX_EVENT_BYTES,
    MAX_STREAM_NAME_BYTES,
};

fn limits() -> SchemaLimits {
    SchemaLimits {
        max_channels: 256,
        max_frame_bytes: 1 << 20,
        max_episode_id_bytes: 128,
    }
}

#[test]
fn proto_v2_error_codes_24_to_26() {
    let new: Vec<(u16, &str, bool)> = ErrorCode::ALL[23..]
        .iter()
        .map(|c| (c.code(), c.name(), c.closes_connection()))
        .collect();
    assert_eq!(
        new,
        [
            (24, "UNKNOWN_EPISODE", false),
            (25, "EPISODE_CLOSED", false),
            (26, "STREAM_EXISTS", false),
        ]
    );
    assert_eq!(ErrorCode::from_u16(26), Some(ErrorCode::StreamExists));
    assert_eq!(ErrorCode::from_u16(27), None);
    assert_eq!(ErrorCode::EXPECTED, "an error code 1..=26");
}

#[test]
fn proto_v2_stream_name_rules() {
    assert_eq!(MAX_STREAM_NAME_BYTES, 64);
    for good in ["joints", "cam.wrist_0", "A-9", "x", &"s".repeat(64)] {
        validate_stream_name(good).unwrap();
    }
    let cases = [
        ("", "is empty (must be 1..=64 bytes)"),
        (&"s".repeat(65), "is 65 bytes (must be 1..=64 bytes)"),
        (".hidden", "starts with '.'"),
        ("cam/rgb", "contains '/' (allowed: A-Z a-z 0-9 . _ -)"),
        ("é", "contains 'é' (allowed: A-Z a-z 0-9 . _ -)"),
    ];
    for (name, reason) in cases {
        let e = validate_stream_name(name).unwrap_err();
        assert_eq!(e.error_code(), ErrorCode::BadEpisodeId, "{name:?}");
        assert_eq!(
            e.to_string(),
            format!("STREAM_OPEN: stream name {name:?} {reason}")
        );
    }
}

#[test]
fn proto_v2_stream_open_checks_name_the_stream_and_field() {
    sample_stream_open().validate(&limits()).unwrap();
    // the episode id: the id rules with the server's limit
    let mut s = sample_stream_open();
    s.episode_id = "x".repeat(129);
    let e = s.validate(&limits()).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::BadEpisodeId);
    assert_eq!(
        e.to_string(),
        format!(
            "STREAM_OPEN: episode_id {:?} is 129 bytes (must be 1..=128 bytes)",
            s.episode_id
        )
    );
    // the stream name
    let mut s = sample_stream_open();
    s.schema.episode_id = "a b".into();
    let e = s.validate(&limits()).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::BadEpisodeId);
    assert!(e.to_string().contains("stream name \"a b\""), "{e}");
    // the schema, as OPEN's, naming the stream
    let mut s = sample_stream_open();
    s.schema.channels[1].shape = vec![3, 0];
    let e = s.validate(&limits()).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::BadSchema);
    assert_eq!(
        e.to_string(),
        "STREAM_OPEN: stream \"joints\": channels[1] \"gripper\": dims[1] is 0 (each must be \
         >= 1), shape [3, 0]"
    );
    let mut s = sample_stream_open();
    s.schema.channels.clear();
    assert_eq!(
        s.validate(&limits()).unwrap_err().to_string(),
        "STREAM_OPEN: stream \"joints\": channel_count 0 must be 1..=256"
    );
    let mut s = sample_stream_open();
    s.schema.timebase = TimebaseSpec::Ticks { tick_hz: 0.0 };
    assert!(s
        .validate(&limits())
        .unwrap_err()
        .to_string()
        .starts_with("STREAM_OPEN: stream \"joints\": tick_hz 0 must be finite and > 0"));
    let s = sample_stream_open().with_metadata_json("[1]");
    let e = s.validate(&limits()).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::BadSchema);
    assert_eq!(
        e.to_string(),
        "STREAM_OPEN: stream \"joints\": metadata_json is not a JSON object"
    );
}

#[test]
fn proto_v2_stream_open_builder() {
    let s =
        wshard_ingest_proto::StreamOpen::new("ep", "imu", TimebaseSpec::Ticks { tick_hz: 200.0 })
            .channel(ChannelSpec::new("acc", Lane::Signal, DType::F32, vec![10]))
            .with_durability(Durability::Chunk)
            .with_metadata_json("{}");
    assert_eq!(s.stream(), "imu");
    assert_eq!(s.schema.env_id, "");
    assert_eq!(s.schema.durability, Some(Durability::Chunk));
    assert_eq!(
        s.clone().with_server_default_durability().schema.durability,
        None
    );
    s.validate(&limits()).unwrap();
}

#[test]
fn proto_v2_episode_open_checks() {
    EpisodeOpen::new("ep-1", "env").validate(&limits()).unwrap();
    EpisodeOpen::new("ep-1", "")
        .with_metadata_json(r#"{"a":1}"#)
        .validate(&limits())
        .unwrap();
    let e = EpisodeOpen::new(".x", "").validate(&limits()).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::BadEpisodeId);
    assert_eq!(
        e.to_string(),
        "EPISODE_OPEN: episode_id \".x\" starts with '.'"
    );
    let e = EpisodeOpen::new("ep", "")
        .with_metadata_json("nope")
        .validate(&limits())
        .unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::BadSchema);
    assert!(
        e.to_string()
            .starts_with("EPISODE_OPEN: metadata_json is not valid JSON"),
        "{e}"
    );
}

#[test]
fn proto_v2_event_size_limit_names_size_and_key() {
    assert_eq!(DEFAULT_MAX_EVENT_BYTES, 65_536);
    let at_limit = Event::binary(0, "blob", vec![7u8; DEFAULT_MAX_EVENT_BYTES]);
    at_limit.validate(DEFAULT_MAX_EVENT_BYTES).unwrap();
    let over = Event::binary(0, "blob", vec![7u8; DEFAULT_MAX_EVENT_BYTES + 1]);
    let e = over.validate(DEFAULT_MAX_EVENT_BYTES).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::Limit);
    assert!(!e.is_fatal());
    assert_eq!(
        e.to_string(),
        "EVENT: data is 65537 bytes, over limits.max_event_bytes 65536"
    );
    // The size is checked first: data over the limit is not read.
    let e = Event::json(0, "x", "not json").validate(3).unwrap_err();
    assert!(
        matches!(e, ProtoError::EventTooLarge { size: 8, max: 3 }),
        "{e}"
    );
    Event::binary(0, "", Vec::new()).validate(0).unwrap();
}

#[test]
fn proto_v2_event_data_must_be_its_kind() {
    let text = |data: &[u8]| Event {
        t_ns: 0,
        kind: EventKind::Text,
        label: "l".into(),
        data: data.to_vec(),
    };
    text("grasp the cube".as_bytes()).validate(100).unwrap();
    let e = text(&[b'a', 0xFF]).validate(100).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::MalformedFrame);
    assert!(!e.is_fatal());
    assert!(
        e.to_string()
            .starts_with("EVENT: field data of kind text is not valid UTF-8"),
        "{e}"
    );
    for good in [
        "{}",
        "[1,2]",
        "\"s\"",
        "3.5",
        "null",
        " {\"a\": {\"b\": [true]}} ",
    ] {
        Event::json(0, "j", good).validate(100).unwrap();
    }
    for bad in ["", "{", "{} {}", "nan", "'x'"] {
        let e = Event::json(0, "j", bad).validate(100).unwrap_err();
        assert_eq!(e.error_code(), ErrorCode::MalformedFrame, "{bad:?}");
        assert!(
            e.to_string()
                .starts_with("EVENT: field data of kind json is not valid JSON"),
            "{e}"
        );
    }
    Event::binary(0, "b", vec![0xFF, 0, 0xFE])
        .validate(100)
        .unwrap();
}

type Change = dyn Fn(&mut wshard_ingest_proto::OpenEpisode);

#[test]
fn proto_v2_schema_difference_names_the_first_field() {
    let base = sample_stream_open().schema;
    assert_eq!(base.schema_difference(&base), None);
    // Ids, env_id and metadata are not schema.
    let mut other = base.clone();
    other.env_id = "x".into();
    other.metadata_json = "{}".into();
    assert_eq!(base.schema_difference(&other), None);
    let mut cases: Vec<(Box<Change>, &str)> = vec![
        (
            Box::new(|o| o.timebase = TimebaseSpec::Ticks { tick_hz: 1000.0 }),
            "timebase_kind",
        ),
        (
            Box::new(|o| o.timebase = TimebaseSpec::TimestampsNs { nominal_hz: 999.0 }),
            "tick_hz",
        ),
        (Box::new(|o| o.durability = None), "durability"),
        (Box::new(|o| o.channels.truncate(2)), "channel_count"),
        (
            Box::new(|o| o.channels[0].name = "q".into()),
            "channels[0].name",
        ),
        (
            Box::new(|o| o.channels[1].lane = Lane::Signal),
            "channels[1].lane",
        ),
        (
            Box::new(|o| o.channels[2].dtype = DType::U16),
            "channels[2].dtype",
        ),
        (
            Box::new(|o| o.channels[0].shape = vec![6]),
            "channels[0].shape",
        ),
        (
            Box::new(|o| o.channels[2].codec = CodecChoice::None),
            "channels[2].codec",
        ),
        (
            Box::new(|o| o.channels[1].codec = CodecChoice::Zstd { level: 3 }),
            "channels[1].codec_level",
        ),
        (
            Box::new(|o| o.channels[2].modality = None),
            "channels[2].modality",
        ),
    ];
    for (change, field) in cases.drain(..) {
        let mut other = base.clone();
        change(&mut other);
        let d = base.schema_difference(&other).unwrap();
        assert_eq!(d.field, field);
    }
    let mut other = base.clone();
    other.channels[0].shape = vec![6];
    assert_eq!(
        base.schema_difference(&other).unwrap().to_string(),
        "channels[0].shape is [6], the stream was opened with [7]"
    );
}

#[test]
fn proto_v2_event_refusals_are_told_by_their_message() {
    use wshard_ingest_proto::{is_event_refusal, parse, Frame};
    let errors = [
        Event::binary(0, "", vec![0; 5]).validate(4).unwrap_err(),
        Event::json(0, "", "{").validate(100).unwrap_err(),
        parse(&raw_frame(0x0A, &[0; 9])).unwrap_err(),
        parse(&raw_frame(
            0x0A,
            &[0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0],
        ))
        .unwrap_err(),
    ];
    for e in errors {
        assert!(is_event_refusal(&e.to_string()), "{e}");
        let Frame::Error { message, .. } = e.to_error_frame() else {
            unreachable!()
        };
        assert!(is_event_refusal(&message));
    }
    for other in [
        "TIMESTEP_BATCH seq 3: expected seq 2",
        "EVENTS are off",
        "EVENT_X",
        "EVENT",
        "event: lower case",
        "STREAM_OPEN: EVENT: no",
    ] {
        assert!(!is_event_refusal(other), "{other}");
    }
    assert!(is_event_refusal(
        "EVENT NOT_OPEN: no episode on this connection"
    ));
}
