//! `EVENT` (protocol version 2) against the real daemon: a json event's value stored as
//! sent (integers past 64 bits keep their digits), the limits of json data named in the
//! refusal, every accepted event readable from the events file, and the owner's events
//! between its `EPISODE_CLOSE` and the episode's finalization.

use std::path::Path;

use wshard::episode_dir::events::EventData;
use wshard::episode_dir::index::EpisodeStatus;
use wshard::episode_dir::names::events_file_name;
use wshard_e2e::multi::{
    episode_close, event, owner, producer, read_events, stream_spec, wait_index_final,
};
use wshard_e2e::raw::RawConn;
use wshard_e2e::{data, Daemon, DaemonOptions, TIMEOUT};
use wshard_ingest_proto::{
    AcceptedWhat, Durability, ErrorCode, Event, Frame, Outcome, MAX_EVENT_JSON_DEPTH,
};

/// The lines of episode `id`'s events file, as text.
fn event_lines(data_dir: &Path, id: &str) -> Vec<String> {
    let path = data_dir.join(id).join(events_file_name(id));
    let text = std::fs::read_to_string(&path).expect("events file");
    text.lines().map(str::to_owned).collect()
}

/// Send a json `EVENT` of `text`; the `ACCEPTED` seq, or the `ERROR` code and message.
fn json_event(c: &mut RawConn, t_ns: i64, text: &str) -> Result<u64, (ErrorCode, String)> {
    c.send(&Frame::Event(Event::json(t_ns, "value", text)));
    match c.recv_skip_durable() {
        wshard_e2e::raw::Recv::Frame(Frame::Accepted {
            what: AcceptedWhat::Event,
            up_to_seq,
        }) => Ok(up_to_seq),
        wshard_e2e::raw::Recv::Frame(Frame::Error { code, message }) => Err((code, message)),
        other => panic!("EVENT answered with {other:?}"),
    }
}

/// `depth` arrays nested around `0`.
fn nested(depth: usize) -> String {
    format!("{}0{}", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn proto_events_json_is_stored_as_sent() {
    let d = Daemon::start(DaemonOptions::default());
    let mut o = owner(&d.socket(), "big");
    let sent = [
        (
            r#"{"big": 18446744073709551617}"#,
            r#"{"big":18446744073709551617}"#,
        ),
        ("12345678901234567890123", "12345678901234567890123"),
        ("-9223372036854775809", "-9223372036854775809"),
        (
            " { \"b\" : [ 1.50 , 2E3 ] ,\n\t\"a\" : \"x  y\" } ",
            r#"{"b":[1.50,2E3],"a":"x  y"}"#,
        ),
    ];
    for (seq, (text, _)) in (0u64..).zip(sent) {
        assert_eq!(json_event(&mut o, 10, text), Ok(seq), "{text}");
    }
    assert_eq!(episode_close(&mut o), 0);
    let lines = event_lines(&d.data_dir(), "big");
    assert_eq!(lines.len(), sent.len());
    for (line, (text, stored)) in lines.iter().zip(sent) {
        let want = format!("{{\"data\":{stored},\"kind\":\"json\",\"label\":\"value\",");
        assert!(line.starts_with(&want), "{text:?} stored as {line}");
    }
    // The reader reads every line (numbers past 64 bits as the nearest double).
    let events = read_events(&d.data_dir(), "big").expect("events readable");
    assert_eq!(events.len(), sent.len());
    assert_eq!(
        events[3].data,
        EventData::Json(serde_json::json!({"a": "x  y", "b": [1.5, 2000.0]}))
    );
}

#[test]
fn proto_events_json_limits_are_named_and_accepted_events_stay_readable() {
    let d = Daemon::start(DaemonOptions::default());
    let mut o = owner(&d.socket(), "limits");
    let mut seq = 0;
    for depth in [1, MAX_EVENT_JSON_DEPTH] {
        assert_eq!(
            json_event(&mut o, 1, &nested(depth)),
            Ok(seq),
            "depth {depth}"
        );
        seq += 1;
    }
    for depth in [MAX_EVENT_JSON_DEPTH + 1, 127, 200] {
        let (code, msg) = json_event(&mut o, 1, &nested(depth)).expect_err("too deep");
        assert_eq!(code, ErrorCode::Limit, "{msg}");
        assert_eq!(
            msg,
            format!(
                "EVENT: field data of kind json nests arrays and objects {depth} deep (past \
                 the limit at byte {MAX_EVENT_JSON_DEPTH}); an event's JSON may nest at most \
                 {MAX_EVENT_JSON_DEPTH} deep (MAX_EVENT_JSON_DEPTH)"
            )
        );
    }
    for number in ["1e400", "-1e400", &format!("[{}]", "9".repeat(400))] {
        let (code, msg) = json_event(&mut o, 1, number).expect_err("out of range");
        assert_eq!(code, ErrorCode::Limit, "{msg}");
        assert!(
            msg.starts_with("EVENT: field data of kind json has the number "),
            "{msg}"
        );
        assert!(
            msg.contains(
                "out of the range of a 64-bit float (magnitude at most 1.7976931348623157e308)"
            ),
            "{msg}"
        );
    }
    let (_, msg) = json_event(&mut o, 1, "1e400").expect_err("out of range");
    assert!(msg.contains("the number 1e400 at byte 0"), "{msg}");
    // The largest double is within the range.
    assert_eq!(json_event(&mut o, 1, "1.7976931348623157e308"), Ok(seq));
    seq += 1;
    // Text that is not JSON stays MALFORMED_FRAME.
    let (code, msg) = json_event(&mut o, 1, "{nope").expect_err("not JSON");
    assert_eq!(code, ErrorCode::MalformedFrame);
    assert!(
        msg.starts_with("EVENT: field data of kind json is not valid JSON ("),
        "{msg}"
    );
    assert_eq!(event(&mut o, 2, "after", "ok"), seq);
    assert_eq!(episode_close(&mut o), 0);
    // Every event acknowledged is read back.
    let events = read_events(&d.data_dir(), "limits").expect("events readable");
    assert_eq!(events.len() as u64, seq + 1);
}

#[test]
fn proto_events_of_the_owner_until_the_episode_is_finalized() {
    let d = Daemon::start(DaemonOptions::default());
    let dd = d.data_dir();
    let ch = data::small_channels();
    let mut o = owner(&d.socket(), "closing");
    let mut p = producer(
        &d.socket(),
        &stream_spec("closing", "s", &ch, 100.0, Durability::Ack),
    );
    p.timesteps(&ch, 0..3);
    assert_eq!(episode_close(&mut o), 1, "the stream still records");
    // Closed, not finalized: the owner's events are taken, and the producer's.
    assert_eq!(event(&mut o, data::t_ns(3), "owner", "after close"), 0);
    assert_eq!(
        event(&mut p, data::t_ns(4), "producer", "still recording"),
        1
    );
    p.close(Outcome::Completed, 3);
    let ix = wait_index_final(&dd, "closing", TIMEOUT).expect("finalized");
    assert_eq!(ix.status, EpisodeStatus::Complete);
    // Finalized: no more.
    o.send(&Frame::Event(Event::text(
        data::t_ns(5),
        "late",
        "too late",
    )));
    let msg = o.expect_error(ErrorCode::NotOpen);
    assert_eq!(
        msg,
        "EVENT: episode `closing` is finalized (closed, and every stream ended): it takes no \
         more events"
    );
    let events = read_events(&dd, "closing").expect("events");
    let labels: Vec<&str> = events.iter().map(|e| e.label.as_str()).collect();
    assert_eq!(labels, ["owner", "producer"]);
    assert_eq!(events[1].source, "s");
}
