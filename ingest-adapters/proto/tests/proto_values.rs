//! One code per mistake, the error list against docs/PROTOCOL.md, the value checks of
//! timesteps (`bool` elements, `t_ns` order) and the episode id limit.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use wshard::episode::{DType, Lane};
use wshard_ingest_proto::{
    parse, ChannelSpec, ErrorCode, Frame, FrameDecoder, ProtoError, SchemaLimits, StepValues,
    TimestepBatch, TimestepRef, DEFAULT_MAX_EPISODE_ID_BYTES, MAX_EPISODE_ID_BYTES,
};

const PROTOCOL_MD: &str = include_str!("../../../docs/PROTOCOL.md");

/// A `TIMESTEP_BATCH` frame of `count` whose records are `records` bytes of zeros.
fn batch_bytes(count: u32, records: usize) -> Vec<u8> {
    let mut payload = count.to_le_bytes().to_vec();
    payload.resize(4 + records, 0);
    raw_frame(0x04, &payload)
}

#[test]
fn proto_batch_count_not_matching_its_bytes_is_always_payload_size() {
    let count = 4u32;
    let rec = 21 + STEP_BYTES;
    for len in 0..=(count as usize * rec + 2 * rec) {
        if len == count as usize * rec {
            continue;
        }
        let wire = batch_bytes(count, len);
        // Whether the parser or the schema check finds it, the code is the same.
        let e = match parse(&wire) {
            Err(e) => e,
            Ok(Frame::TimestepBatch(b)) => b.validate(STEP_BYTES).unwrap_err(),
            Ok(other) => panic!("{other:?}"),
        };
        assert_eq!(e.error_code(), ErrorCode::PayloadSize, "{len} bytes: {e}");
        assert!(!e.is_fatal(), "{e}");
        // The same through a decoder receiving batches directly.
        let mut dec = FrameDecoder::new(1 << 20).direct_batches(0);
        dec.feed(&wire[..9]);
        let _ = dec.buffer_mut();
        dec.feed(&wire[9..]);
        let e = match dec.next_frame() {
            Err(e) => e,
            Ok(Some(Frame::TimestepBatch(b))) => b.validate(STEP_BYTES).unwrap_err(),
            other => panic!("{other:?}"),
        };
        assert_eq!(e.error_code(), ErrorCode::PayloadSize, "{len} bytes: {e}");
    }
    let e = parse(&batch_bytes(3, 40)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "TIMESTEP_BATCH (count 3): steps are 40 bytes, less than the 3 x 21 bytes of their \
         record headers alone"
    );
    // A count of 0 does not parse at all: that one stays MALFORMED_FRAME.
    let e = parse(&batch_bytes(0, 21)).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::MalformedFrame);
}

/// The rows of the table `| code | name | connection |` in docs/PROTOCOL.md.
fn doc_error_rows() -> Vec<(u16, String, String)> {
    PROTOCOL_MD
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l
                .trim()
                .trim_matches('|')
                .split('|')
                .map(str::trim)
                .collect();
            let [code, name, connection] = cells[..] else {
                return None;
            };
            let code = code.parse::<u16>().ok()?;
            (name.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
                .then(|| (code, name.to_owned(), connection.to_owned()))
        })
        .collect()
}

#[test]
fn proto_error_codes_in_protocol_md_are_the_codes() {
    let rows = doc_error_rows();
    let want: Vec<(u16, String)> = ErrorCode::ALL
        .iter()
        .map(|c| (c.code(), c.name().to_owned()))
        .collect();
    let got: Vec<(u16, String)> = rows.iter().map(|(c, n, _)| (*c, n.clone())).collect();
    assert_eq!(got, want, "docs/PROTOCOL.md ERROR table");
    for (code, name, connection) in &rows {
        let closes = ErrorCode::from_u16(*code).unwrap().closes_connection();
        assert_eq!(
            connection.starts_with("closed"),
            closes,
            "{name}: the table says `{connection}`"
        );
    }
    // Codes are 1..=N without holes, and every place that states the range says N.
    let last = ErrorCode::ALL.len();
    for (i, c) in ErrorCode::ALL.iter().enumerate() {
        assert_eq!(usize::from(c.code()), i + 1);
    }
    assert_eq!(ErrorCode::EXPECTED, format!("an error code 1..={last}"));
    let stated: Vec<&str> = PROTOCOL_MD
        .match_indices("ERROR.code` outside 1..=")
        .map(|(at, m)| {
            let rest = &PROTOCOL_MD[at + m.len()..];
            &rest[..rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len())]
        })
        .collect();
    assert_eq!(
        stated,
        [last.to_string()],
        "docs/PROTOCOL.md states the range"
    );
}

/// Every mention of a code by name and number in prose, "`NAME` (N)", "`NAME` (code N)"
/// or "`ERROR{NAME}` (code N)", in `doc`: (name, number, line).
fn doc_code_mentions(doc: &str) -> Vec<(String, u16, usize)> {
    let mut out = Vec::new();
    for (line_no, line) in doc.lines().enumerate() {
        for (at, _) in line.match_indices("` (") {
            let Some(open) = line[..at].rfind('`') else {
                continue;
            };
            let quoted = &line[open + 1..at];
            let name = quoted
                .strip_prefix("ERROR{")
                .and_then(|n| n.strip_suffix('}'))
                .unwrap_or(quoted);
            let rest = &line[at + 3..];
            let rest = rest.strip_prefix("code ").unwrap_or(rest);
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            let named =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c == '_');
            if named && !digits.is_empty() && rest[digits.len()..].starts_with(')') {
                out.push((name.to_owned(), digits.parse().unwrap(), line_no + 1));
            }
        }
    }
    out
}

#[test]
fn proto_error_code_mentions_in_the_docs_are_the_codes() {
    let docs = [
        ("docs/PROTOCOL.md", PROTOCOL_MD),
        ("docs/CONTROL.md", include_str!("../../../docs/CONTROL.md")),
    ];
    let mut seen = 0;
    let mut wrong = Vec::new();
    for (file, doc) in docs {
        for (name, number, line) in doc_code_mentions(doc) {
            let code = ErrorCode::ALL.iter().find(|c| c.name() == name);
            let Some(code) = code else {
                // A frame or field name in backquotes followed by a number is not a code.
                continue;
            };
            if number != code.code() {
                wrong.push(format!(
                    "{file}:{line}: `{name}` is code {}, the text says {number}",
                    code.code()
                ));
            }
            seen += 1;
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The scan finds the mentions it is there for (TIMEOUT, BAD_SHM, STOPPED, ...).
    assert!(
        seen >= 8,
        "only {seen} mentions found: the pattern no longer matches the docs"
    );
}

#[test]
fn proto_error_codes_past_18_parse() {
    for code in ErrorCode::ALL {
        let mut payload = code.code().to_le_bytes().to_vec();
        payload.extend_from_slice(&[2, 0, b'h', b'i']);
        assert_eq!(
            parse(&raw_frame(0x84, &payload)).unwrap(),
            Frame::Error {
                code,
                message: "hi".into()
            }
        );
    }
}

fn step(seq: u64, t_ns: i64, payload: &[u8]) -> TimestepRef<'_> {
    TimestepRef {
        seq,
        t_ns,
        reward: 0.0,
        done: false,
        payload,
    }
}

/// u8 [2] | bool [3] | f32 | bool (scalar): 2 + 3 + 4 + 1 = 10 bytes per step.
fn bool_channels() -> Vec<ChannelSpec> {
    vec![
        ChannelSpec::new("raw", Lane::Signal, DType::U8, vec![2]),
        ChannelSpec::new("contacts", Lane::Signal, DType::Bool, vec![3]),
        ChannelSpec::new("force", Lane::Signal, DType::F32, vec![]),
        ChannelSpec::new("grip", Lane::Action, DType::Bool, vec![]),
    ]
}

#[test]
fn proto_bool_elements_must_be_0_or_1() {
    let values = StepValues::new(&bool_channels()).unwrap();
    // Any byte in non-bool channels is fine.
    let ok = [0xFF, 0xFF, 1, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF, 1];
    let _ = values.check([step(0, 0, &ok)]).unwrap();
    for (at, channel, element) in [(2, "contacts", 0), (4, "contacts", 2), (9, "grip", 0)] {
        for bad in [2u8, 0x80, 0xFF] {
            let mut p = ok;
            p[at] = bad;
            let e = values.check([step(0, 0, &ok), step(1, 0, &p)]).unwrap_err();
            assert_eq!(e.error_code(), ErrorCode::MalformedFrame, "{e}");
            assert!(!e.is_fatal());
            assert_eq!(
                e.to_string(),
                format!(
                    "TIMESTEP: field seq 1 channel {channel} element {element} has value {bad}, \
                     expected 0 or 1 (dtype bool)"
                )
            );
        }
    }
}

#[test]
fn proto_timestamps_must_not_decrease_across_and_within_batches() {
    let p = [0u8; 10];
    let mut values = StepValues::new(&bool_channels()).unwrap();
    // Equal timestamps are allowed, within a batch and across batches.
    let mark = values
        .check([step(0, 100, &p), step(1, 100, &p), step(2, 150, &p)])
        .unwrap();
    values.commit(mark);
    assert_eq!(values.last(), Some((2, 150)));
    let mark = values.check([step(3, 150, &p)]).unwrap();
    values.commit(mark);
    // Within a batch.
    let e = values
        .check([step(4, 200, &p), step(5, 199, &p)])
        .unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::TimestampOrder);
    assert_eq!(e.error_code().code(), 22);
    assert!(!e.is_fatal() && !e.error_code().closes_connection());
    assert_eq!(
        e.to_string(),
        "TIMESTEP seq 5: t_ns 199 is below t_ns 200 of seq 4 (t_ns must not decrease \
         within an episode; equal is allowed)"
    );
    // Across batches: against the last step committed, not the refused batch.
    let e = values.check([step(4, 149, &p)]).unwrap_err();
    assert_eq!(
        e,
        ProtoError::TimestampOrder {
            seq: 4,
            t_ns: 149,
            prev_seq: 3,
            prev_t_ns: 150
        }
    );
    // A batch checked but not committed leaves no trace.
    let _ = values.check([step(4, 1_000, &p)]).unwrap();
    let _ = values.check([step(4, 151, &p)]).unwrap();
    // Negative and extreme timestamps order as integers.
    let mut values = StepValues::new(&bool_channels()).unwrap();
    let mark = values
        .check([
            step(0, i64::MIN, &p),
            step(1, -1, &p),
            step(2, i64::MAX, &p),
        ])
        .unwrap();
    values.commit(mark);
    assert!(values.check([step(3, i64::MAX - 1, &p)]).is_err());
}

#[test]
fn proto_value_checks_take_a_batch_s_steps() {
    let payloads: Vec<[u8; 10]> = (0..4u8)
        .map(|i| [i, i, 1, 0, 1, 0, 0, 0, 0, i % 2])
        .collect();
    let batch = TimestepBatch::from_steps(
        payloads
            .iter()
            .enumerate()
            .map(|(i, p)| step(i as u64, 10 * i as i64, p)),
    )
    .unwrap();
    let mut values = StepValues::new(&bool_channels()).unwrap();
    let mark = values.check(batch.steps(10).unwrap()).unwrap();
    assert_eq!(values.last(), None);
    values.commit(mark);
    assert_eq!(values.last(), Some((3, 30)));
}

#[test]
fn proto_episode_id_limit_is_the_servers() {
    let with_id = |len: usize| {
        let mut o = sample_open();
        o.episode_id = "e".repeat(len);
        o
    };
    let limits = |max: usize| SchemaLimits {
        max_episode_id_bytes: max,
        ..SchemaLimits::default()
    };
    assert_eq!(MAX_EPISODE_ID_BYTES, 200);
    assert_eq!(DEFAULT_MAX_EPISODE_ID_BYTES, 128);
    // A server configured for 200 takes a 150-byte id; one configured for 128 does not.
    with_id(150).validate(&limits(200)).unwrap();
    with_id(200).validate(&limits(200)).unwrap();
    with_id(150).validate(&SchemaLimits::default()).unwrap();
    let e = with_id(150).validate(&limits(128)).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::BadEpisodeId);
    assert!(
        e.to_string()
            .contains("is 150 bytes (must be 1..=128 bytes)"),
        "{e}"
    );
    // Never more than the ceiling, whatever is asked.
    let e = with_id(201).validate(&limits(1000)).unwrap_err();
    assert!(
        e.to_string()
            .contains("is 201 bytes (must be 1..=200 bytes)"),
        "{e}"
    );
    let e = with_id(0).validate(&limits(16)).unwrap_err();
    assert!(
        e.to_string().contains("is empty (must be 1..=16 bytes)"),
        "{e}"
    );
}
