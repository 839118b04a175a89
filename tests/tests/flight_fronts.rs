//! The flight trigger's producer front ends against the real daemon: the `TRIGGER` frame
//! (answered by `TRIGGERED` or an `ERROR` starting `TRIGGER:`), an `EVENT` labelled
//! `trigger`, and the Rust client's `trigger()`; windows bit-exact to the step, bad input
//! refused with typed errors while the stream records on.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wshard::episode::Episode;
use wshard::episode_dir::events::EventData;
use wshard::manifest::read_episode_chunked;
use wshard_client::{Client, ClientError, FlightMode, FlightTrigger};
use wshard_e2e::flight::{
    check_steps_at, control, daemon, first_at, last_at, open_flight_version, verify, wait_window,
    window_stream, NS_PER_MS, WINDOW_TIMEOUT,
};
use wshard_e2e::multi::read_events;
use wshard_e2e::raw::{RawConn, Recv};
use wshard_e2e::{data, Daemon};
use wshard_ingest_proto::{
    is_trigger_refusal, AcceptedWhat, ChannelSpec, Durability, EpisodeOpen, ErrorCode, Event,
    Frame, Outcome, Trigger, Triggered,
};

const V2: u16 = 2;

/// A version 2 raw connection recording `id` in flight mode.
fn open_flight(d: &Daemon, id: &str, flight: &Value) -> RawConn {
    let (c, spoken) = open_flight_version(d, id, flight, V2);
    assert_eq!(spoken, V2);
    c
}

/// Check that `ep` holds exactly timesteps `seqs` of the generator, bit for bit.
fn check_exact(ep: &Episode, channels: &[ChannelSpec], seqs: std::ops::RangeInclusive<u64>) {
    check_steps_at(ep, channels, seqs, data::t_ns);
}

fn reasons(d: &Daemon, w: &str) -> Vec<String> {
    read_events(&d.data_dir(), w)
        .expect("events")
        .into_iter()
        .filter(|e| e.label == "trigger")
        .map(|e| match e.data {
            EventData::Text(t) => t,
            other => panic!("reason event {other:?}"),
        })
        .collect()
}

fn trigger_frame(pre_ms: i64, post_ms: i64, reason: &str, streams: &[&str]) -> Frame {
    Frame::Trigger(Trigger {
        pre_ns: pre_ms * NS_PER_MS,
        post_ns: post_ms * NS_PER_MS,
        reason: reason.to_owned(),
        streams: streams.iter().map(|s| (*s).to_owned()).collect(),
        at_ns: None,
    })
}

fn expect_triggered(c: &mut RawConn) -> Triggered {
    match c.recv_skip_durable() {
        Recv::Frame(Frame::Triggered(t)) => t,
        other => panic!("expected TRIGGERED, got {other:?}"),
    }
}

/// Expect the refusal of a `TRIGGER`: `code`, a message starting `TRIGGER:`.
fn expect_refusal(c: &mut RawConn, code: ErrorCode) -> String {
    let m = c.expect_error(code);
    assert!(is_trigger_refusal(&m), "{m}");
    m
}

/// The window episodes (`flight-*`) in the data directory.
fn windows(d: &Daemon) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(d.data_dir())
        .expect("data dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("flight-"))
        .collect();
    out.sort();
    out
}

#[test]
fn flight_trigger_frame_names_the_window_at_once_and_holds_exactly_its_steps() {
    let d = daemon();
    let ch = data::channels();
    let mut c = open_flight(&d, "cam", &json!({"ring_seconds": 2}));
    c.timesteps(&ch, 0..200);
    c.flush_until(200);
    c.send(&trigger_frame(300, 200, "teleop button", &[]));
    let r = expect_triggered(&mut c);
    assert!(!r.merged);
    let t = data::t_ns(199);
    assert_eq!(r.window_start_ns, t - 300 * NS_PER_MS);
    assert_eq!(r.window_end_ns, t + 200 * NS_PER_MS);
    // A second trigger while the post-window records: the same episode, merged.
    c.send(&trigger_frame(100, 50, "again", &["cam"]));
    let again = expect_triggered(&mut c);
    assert!(again.merged);
    assert_eq!(again.episode, r.episode);
    c.timesteps(&ch, 200..400);
    c.flush_until(400);
    let index = wait_window(&d, &r.episode);
    assert_eq!(index.streams.len(), 1);
    check_exact(
        &window_stream(&d, &r.episode, "cam"),
        &ch,
        first_at(t - 300 * NS_PER_MS)..=last_at(t + 200 * NS_PER_MS),
    );
    assert_eq!(reasons(&d, &r.episode), ["teleop button", "again"]);
    c.close(Outcome::Completed, 400);
    verify(&d.data_dir().join(&r.episode));
    verify(&d.data_dir().join("cam"));
}

#[test]
fn flight_trigger_frame_event_labelled_trigger_fires_a_window() {
    let d = daemon();
    let ch = data::channels();
    let mut c = open_flight(&d, "evcam", &json!(true));
    c.timesteps(&ch, 0..100);
    c.flush_until(100);
    let t = data::t_ns(60);
    let data = json!({"pre_ms": 200, "post_ms": 100, "reason": "operator took over"});
    c.send(&Frame::Event(Event::json(t, "trigger", data.to_string())));
    assert_eq!(c.expect_accepted(AcceptedWhat::Event), 0);
    // A refused trigger does not refuse its event: it is recorded, answered, counted.
    let bad = json!({"pre_ms": -5});
    c.send(&Frame::Event(Event::json(t, "trigger", bad.to_string())));
    assert_eq!(c.expect_accepted(AcceptedWhat::Event), 1);
    let status = control(&d, &json!({"verb":"status"}));
    assert_eq!(
        status["result"]["flight"]["triggers"]["event_refused"],
        json!(1),
        "{status}"
    );
    c.timesteps(&ch, 100..200);
    c.flush_until(200);
    let start = Instant::now();
    let w = loop {
        if let Some(w) = windows(&d).into_iter().next() {
            break w;
        }
        assert!(start.elapsed() < WINDOW_TIMEOUT, "no window: {}", d.log());
        std::thread::sleep(Duration::from_millis(20));
    };
    wait_window(&d, &w);
    check_exact(
        &window_stream(&d, &w, "evcam"),
        &ch,
        first_at(t - 200 * NS_PER_MS)..=last_at(t + 100 * NS_PER_MS),
    );
    assert_eq!(reasons(&d, &w), ["operator took over"]);
    assert_eq!(windows(&d).len(), 1, "the refused trigger made a window");
    // Both events are in the recording episode, as sent.
    let own = read_events(&d.data_dir(), "evcam").expect("events");
    assert_eq!(own.len(), 2);
    c.close(Outcome::Completed, 200);
    verify(&d.data_dir().join(&w));
}

#[test]
fn flight_trigger_frame_bad_input_typed_errors_and_the_stream_records_on() {
    let d = daemon();
    let ch = data::channels();
    // No flight stream at all: an idle connection is told so.
    let (mut idle, _) = RawConn::hello_version(&d.socket(), V2);
    idle.send(&trigger_frame(10, 10, "x", &[]));
    let m = expect_refusal(&mut idle, ErrorCode::NotOpen);
    assert!(m.contains("flight mode"), "{m}");
    let mut c = open_flight(&d, "badcam", &json!(true));
    c.timesteps(&ch, 0..50);
    c.flush_until(50);
    c.send(&trigger_frame(-1, 10, "x", &[]));
    let m = expect_refusal(&mut c, ErrorCode::Limit);
    assert!(m.contains("pre_ns"), "{m}");
    c.send(&trigger_frame(10, 4_000_000, "x", &[]));
    let m = expect_refusal(&mut c, ErrorCode::Limit);
    assert!(m.contains("post_ns"), "{m}");
    c.send(&trigger_frame(10, 10, "x", &["nosuch/stream"]));
    let m = expect_refusal(&mut c, ErrorCode::UnknownEpisode);
    assert!(m.contains("nosuch/stream"), "{m}");
    // A version 1 connection does not know the frame.
    let mut v1 = RawConn::hello(&d.socket());
    v1.send(&trigger_frame(10, 10, "x", &[]));
    let m = v1.expect_error(ErrorCode::UnknownFrame);
    assert!(
        m.contains("TRIGGER") || m.contains("0x0d") || m.contains("13"),
        "{m}"
    );
    // The stream records on, and nothing was made.
    c.timesteps(&ch, 50..100);
    c.flush_until(100);
    c.close(Outcome::Completed, 100);
    assert!(windows(&d).is_empty());
    let ep = read_episode_chunked(&d.data_dir().join("badcam").join("badcam_manifest.wshard"))
        .expect("episode");
    check_exact(&ep, &ch, 0..=99);
}

#[test]
fn flight_client_trigger_from_the_writer_and_from_a_second_connection() {
    let d = daemon();
    let ch = data::channels();
    let mut client = Client::connect_v2(d.socket(), "flight-producer").expect("connect");
    let spec = data::open_spec("clcam", &ch, Durability::Ack).flight_ring(Some(2), None);
    let mut w = client.open_episode(spec).expect("open in flight mode");
    data::push_steps(&mut w, &ch, 150).expect("push");
    assert!(w.flush().expect("flush") >= 150);
    let window = w
        .trigger(&FlightTrigger::new(
            Duration::from_millis(100),
            Duration::from_millis(50),
            "grasp failed",
        ))
        .expect("trigger");
    assert!(!window.merged);
    let t = data::t_ns(149);
    assert_eq!(window.window_start_ns, t - 100 * NS_PER_MS);
    // Bad input: the server's typed refusal, the episode carries on.
    let mut bad = FlightTrigger::new(Duration::ZERO, Duration::ZERO, "bad");
    bad.pre_ns = -1;
    match w.trigger(&bad) {
        Err(ClientError::Server { code, message }) => {
            assert_eq!(code, ErrorCode::Limit);
            assert!(
                message.starts_with("TRIGGER:") && message.contains("pre_ns"),
                "{message}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let unknown = FlightTrigger::new(Duration::ZERO, Duration::ZERO, "x").streams(["ghost"]);
    match w.trigger(&unknown) {
        Err(ClientError::Server { code, message }) => {
            assert_eq!(code, ErrorCode::UnknownEpisode);
            assert!(message.contains("ghost"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    // The teleop button's own process: another connection, recording nothing.
    let mut button = Client::connect_v2(d.socket(), "teleop-button").expect("connect");
    let merged = button
        .trigger(&FlightTrigger::new(Duration::ZERO, Duration::from_millis(50), "button").at_ns(t))
        .expect("trigger from a second connection");
    assert!(merged.merged);
    assert_eq!(merged.episode, window.episode);
    data::push_steps(&mut w, &ch, 30).expect("push after the refusals");
    w.flush().expect("flush");
    wait_window(&d, &window.episode);
    check_exact(
        &window_stream(&d, &window.episode, "clcam"),
        &ch,
        first_at(t - 100 * NS_PER_MS)..=last_at(t + 50 * NS_PER_MS),
    );
    assert_eq!(reasons(&d, &window.episode), ["grasp failed", "button"]);
    w.close(Outcome::Completed).expect("close");
    // A version 1 connection: typed, nothing sent.
    let mut v1 = d.client("v1");
    match v1.trigger(&FlightTrigger::default()) {
        Err(ClientError::NeedsVersion { frame, .. }) => assert_eq!(frame, "TRIGGER"),
        other => panic!("expected NeedsVersion, got {other:?}"),
    }
}

#[test]
fn flight_client_trigger_from_the_owner_of_a_multistream_episode() {
    let d = daemon();
    let ch = data::channels();
    let mut owner = Client::connect_v2(d.socket(), "owner").expect("connect");
    let mut ep = owner
        .open_multistream_episode(EpisodeOpen::new("ms", "env").flight_ring(Some(2), None))
        .expect("episode in flight mode");
    let spec = wshard_e2e::multi::stream_spec("ms", "arm", &ch, 100.0, Durability::Ack);
    let mut c = wshard_e2e::multi::producer(&d.socket(), &spec);
    c.timesteps(&ch, 0..100);
    c.flush_until(100);
    let window = ep
        .trigger(
            &FlightTrigger::new(Duration::from_millis(100), Duration::ZERO, "owner")
                .streams(["ms/arm"]),
        )
        .expect("trigger");
    assert!(!window.merged);
    c.timesteps(&ch, 100..120);
    c.flush_until(120);
    wait_window(&d, &window.episode);
    let t = data::t_ns(99);
    check_exact(
        &window_stream(&d, &window.episode, "arm"),
        &ch,
        first_at(t - 100 * NS_PER_MS)..=99,
    );
    // A stream of the episode that is not there: typed, the episode carries on.
    match ep.trigger(&FlightTrigger::default().streams(["ms/ghost"])) {
        Err(ClientError::Server { code, message }) => {
            assert_eq!(code, ErrorCode::UnknownEpisode);
            assert!(message.contains("ms/ghost"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    c.close(Outcome::Completed, 120);
    ep.close(Outcome::Completed).expect("close");
    verify(&d.data_dir().join(&window.episode));
}
