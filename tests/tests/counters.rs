//! `COUNTERS` (protocol version 2) against the real daemon: a stream's producer counters
//! in `status` (JSON and text) and the metrics, gone with the stream; bad frames refused
//! with an `ERROR` naming the counter while the recording carries on untouched; the
//! per-stream limit; `NOT_OPEN` without a stream; `UNKNOWN_FRAME` on a version 1
//! connection.

use std::process::{Command, Output};

use serde_json::Value;
use wshard_client::Client;
use wshard_e2e::multi::{check_stream, connect_v2, episode_close, owner, producer, stream_spec};
use wshard_e2e::raw::{raw_frame, RawConn, Recv};
use wshard_e2e::{bins, data, Daemon, DaemonOptions};
use wshard_ingest_proto::{
    Counters, Durability, EpisodeOpen, ErrorCode, Frame, Outcome, StreamOpen, TimebaseSpec,
    MAX_COUNTERS_PER_STREAM,
};

const COUNTERS: u8 = 0x0C;

fn wshard(d: &Daemon, args: &[&str]) -> Output {
    Command::new(bins::wshard())
        .args(args)
        .arg("--control")
        .arg(d.root().join("wshardd-control.sock"))
        .env_remove("WSHARDD_CONFIG")
        .output()
        .expect("cannot run wshard")
}

fn stdout_ok(d: &Daemon, args: &[&str]) -> String {
    let o = wshard(d, args);
    let text = wshard_e2e::check::output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    String::from_utf8(o.stdout).expect("utf-8")
}

fn status(d: &Daemon) -> Value {
    let v: Value = serde_json::from_str(&stdout_ok(d, &["status", "--json"])).expect("status JSON");
    v["result"].clone()
}

/// The open episode (or stream) `id` of a `status` result.
fn open_episode<'a>(status: &'a Value, id: &str) -> Option<&'a Value> {
    status["episodes"]
        .as_array()
        .expect("episodes")
        .iter()
        .find(|e| e["episode"] == id)
}

/// A `COUNTERS` payload by hand: `count`, then `(name, value)` entries.
fn payload(count: u16, entries: &[(&[u8], u64)]) -> Vec<u8> {
    let mut p = count.to_le_bytes().to_vec();
    for (name, value) in entries {
        p.extend_from_slice(&u16::try_from(name.len()).expect("name").to_le_bytes());
        p.extend_from_slice(name);
        p.extend_from_slice(&value.to_le_bytes());
    }
    p
}

#[test]
fn counters_status_and_metrics_show_them_per_stream() {
    let d = Daemon::start(DaemonOptions::default());
    let ep = "run-c";
    let ch = data::small_channels();
    let mut o = Client::connect_v2(d.socket(), "owner").expect("owner");
    let multi = o
        .open_multistream_episode(EpisodeOpen::new(ep, data::ENV_ID))
        .expect("EPISODE_OPEN");
    let mut pc = Client::connect_v2(d.socket(), "cam-producer").expect("producer");
    let mut spec = StreamOpen::new(ep, "cam", TimebaseSpec::Ticks { tick_hz: 30.0 });
    for c in &ch {
        spec = spec.channel(c.clone());
    }
    let mut w = pc.join_stream(spec).expect("STREAM_OPEN");
    for seq in 0..5u64 {
        let p = data::step_payloads(seq, &ch);
        let refs: Vec<&[u8]> = p.iter().map(Vec::as_slice).collect();
        w.push(data::t_ns(seq), 0.0, false, &refs).expect("push");
    }
    w.send_counters(&[("received", 10), ("dropped", 2)])
        .expect("COUNTERS");
    w.send_counters(&[("received", 12), ("late_1", u64::MAX)])
        .expect("COUNTERS");
    // The daemon reads frames in order: once the FLUSH is answered it took the counters.
    w.flush().expect("flush");

    // A single-stream episode on a version 2 connection has them too.
    let mut sc = Client::connect_v2(d.socket(), "single").expect("single");
    let mut sw = sc
        .open_episode(data::open_spec("single-c", &ch, Durability::Ack))
        .expect("OPEN");
    sw.send_counters(&[("frames", 3)]).expect("COUNTERS");
    sw.flush().expect("flush");

    let st = status(&d);
    let cam = open_episode(&st, "run-c/cam").expect("stream in status");
    assert_eq!(
        cam["producer_counters"],
        serde_json::json!({"dropped": 2, "late_1": u64::MAX, "received": 12}),
        "{cam}"
    );
    let single = open_episode(&st, "single-c").expect("episode in status");
    assert_eq!(
        single["producer_counters"],
        serde_json::json!({"frames": 3})
    );

    let text = stdout_ok(&d, &["status"]);
    assert!(text.contains("producer counters:"), "{text}");
    let row = text
        .lines()
        .find(|l| l.starts_with("run-c/cam") && l.contains("late_1"))
        .unwrap_or_else(|| panic!("no late_1 row:\n{text}"));
    assert!(row.ends_with(&u64::MAX.to_string()), "{row}");

    let metrics = stdout_ok(&d, &["metrics"]);
    for line in [
        "wshardd_producer_counter{episode=\"run-c\",stream=\"cam\",counter=\"received\"} 12",
        "wshardd_producer_counter{episode=\"run-c\",stream=\"cam\",counter=\"dropped\"} 2",
        "wshardd_producer_counter{episode=\"single-c\",stream=\"\",counter=\"frames\"} 3",
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "{line} not in:\n{metrics}"
        );
    }
    assert!(
        metrics.contains("# TYPE wshardd_producer_counter gauge"),
        "{metrics}"
    );

    // Gone with the stream.
    w.close(Outcome::Completed).expect("close");
    sw.close(Outcome::Completed).expect("close");
    let st = status(&d);
    assert!(open_episode(&st, "run-c/cam").is_none(), "{st}");
    let metrics = stdout_ok(&d, &["metrics"]);
    assert!(!metrics.contains("wshardd_producer_counter"), "{metrics}");
    multi.close(Outcome::Completed).expect("EPISODE_CLOSE");
}

#[test]
fn counters_bad_frames_refused_and_recording_untouched() {
    let d = Daemon::start(DaemonOptions::default());
    let ep = "run-bad";
    let ch = data::small_channels();
    let mut o = owner(&d.socket(), ep);
    let mut p = producer(
        &d.socket(),
        &stream_spec(ep, "joints", &ch, 100.0, Durability::Ack),
    );
    p.timesteps(&ch, 0..3);
    let long = "a".repeat(33);
    let cases: Vec<(Vec<u8>, &[&str])> = vec![
        (
            payload(1, &[(b"Bad-Name", 1)]),
            &["COUNTERS: counter 0 \"Bad-Name\"", "'B' at byte 0"],
        ),
        (
            payload(2, &[(b"rx", 1), (long.as_bytes(), 2)]),
            &["counter 1", "is 33 bytes (must be 1..=32 bytes)"],
        ),
        (
            payload(2, &[(b"rx", 1), (b"rx", 2)]),
            &["counter 1 \"rx\" appears twice"],
        ),
        (payload(33, &[]), &["field count has value 33"]),
        (
            payload(1, &[(b"rx", 1)])[..8].to_vec(),
            &["field counters[0].value truncated"],
        ),
        (
            payload(1, &[(&[0xC3, 0x28], 1)]),
            &["field counters[0].name is not valid UTF-8"],
        ),
    ];
    for (bytes, needles) in &cases {
        p.send_bytes(&raw_frame(COUNTERS, bytes)).expect("send");
        let msg = p.expect_error(ErrorCode::MalformedFrame);
        for n in *needles {
            assert!(msg.contains(n), "{n:?} not in {msg:?}");
        }
    }
    // Nothing of the refused frames was kept.
    let st = status(&d);
    assert_eq!(
        open_episode(&st, "run-bad/joints").expect("stream")["producer_counters"],
        serde_json::json!({})
    );
    // The stream carries on, its seqs unmoved.
    p.timesteps(&ch, 3..6);
    p.send(&Frame::Counters(Counters::new([("ok", 1)])));
    p.flush_until(6);
    let st = status(&d);
    assert_eq!(
        open_episode(&st, "run-bad/joints").expect("stream")["producer_counters"],
        serde_json::json!({"ok": 1})
    );
    p.close(Outcome::Completed, 6);
    assert_eq!(episode_close(&mut o), 0);
    check_stream(&d.data_dir(), ep, "joints", &ch).expect("stream data intact");
}

#[test]
fn counters_per_stream_limit_and_not_open() {
    let d = Daemon::start(DaemonOptions::default());
    let ch = data::small_channels();
    // Without a stream or episode: NOT_OPEN, the connection stays.
    let mut c = connect_v2(&d.socket());
    c.send(&Frame::Counters(Counters::new([("rx", 1)])));
    let msg = c.expect_error(ErrorCode::NotOpen);
    assert!(msg.starts_with("COUNTERS without an open stream"), "{msg}");
    // The owner of a multi-stream episode records no stream: NOT_OPEN too.
    let mut o = owner(&d.socket(), "lim");
    o.send(&Frame::Counters(Counters::new([("rx", 1)])));
    o.expect_error(ErrorCode::NotOpen);

    let mut p = producer(
        &d.socket(),
        &stream_spec("lim", "s", &ch, 100.0, Durability::Ack),
    );
    let names: Vec<String> = (0..MAX_COUNTERS_PER_STREAM)
        .map(|i| format!("c{i:03}"))
        .collect();
    for chunk in names.chunks(32) {
        p.send(&Frame::Counters(Counters::new(
            chunk.iter().map(|n| (n.as_str(), 5)),
        )));
    }
    // Known names may still change; one new name more is refused whole.
    p.send(&Frame::Counters(Counters::new([("c000", 6), ("zzz", 1)])));
    let msg = p.expect_error(ErrorCode::Limit);
    assert!(msg.contains("\"zzz\""), "{msg}");
    assert!(msg.contains("at most 256"), "{msg}");
    p.send(&Frame::Counters(Counters::new([("c000", 7)])));
    p.timesteps(&ch, 0..2);
    p.flush_until(2);
    let st = status(&d);
    let kept = &open_episode(&st, "lim/s").expect("stream")["producer_counters"];
    assert_eq!(kept.as_object().map(serde_json::Map::len), Some(256));
    assert_eq!(kept["c000"], 7);
    assert!(kept.get("zzz").is_none());
    p.close(Outcome::Completed, 2);
    assert_eq!(episode_close(&mut o), 0);
    check_stream(&d.data_dir(), "lim", "s", &ch).expect("stream data intact");
}

#[test]
fn counters_limit_message_names_the_counter_that_crosses_it() {
    let d = Daemon::start(DaemonOptions::default());
    let ch = data::small_channels();
    let mut o = owner(&d.socket(), "cross");
    let mut p = producer(
        &d.socket(),
        &stream_spec("cross", "s", &ch, 100.0, Durability::Ack),
    );
    // 250 names kept: the 7th of 10 new names would be name 257.
    let kept: Vec<String> = (0..250).map(|i| format!("c{i:03}")).collect();
    for chunk in kept.chunks(32) {
        p.send(&Frame::Counters(Counters::new(
            chunk.iter().map(|n| (n.as_str(), 1)),
        )));
    }
    let new: Vec<String> = (0..10).map(|i| format!("m{i:03}")).collect();
    p.send(&Frame::Counters(Counters::new(
        new.iter().map(|n| (n.as_str(), 1)),
    )));
    let msg = p.expect_error(ErrorCode::Limit);
    assert!(
        msg.contains("counter \"m006\" would be name 257 of this stream"),
        "{msg}"
    );
    assert!(msg.contains("10 new names"), "{msg}");
    // Refused whole: none of the ten is kept; the 250 stay, and 6 new names still fit.
    p.send(&Frame::Counters(Counters::new(
        new[..6].iter().map(|n| (n.as_str(), 2)),
    )));
    p.timesteps(&ch, 0..1);
    p.flush_until(1);
    let st = status(&d);
    let kept_now = &open_episode(&st, "cross/s").expect("stream")["producer_counters"];
    assert_eq!(kept_now.as_object().map(serde_json::Map::len), Some(256));
    assert!(kept_now.get("m006").is_none());
    p.close(Outcome::Completed, 1);
    assert_eq!(episode_close(&mut o), 0);
}

#[test]
fn counters_on_a_version_1_connection_are_unknown_frame() {
    let d = Daemon::start(DaemonOptions::default());
    let ch = data::small_channels();
    let mut c = RawConn::hello(&d.socket());
    c.open(&data::open_spec("v1-c", &ch, Durability::Ack));
    c.timesteps(&ch, 0..3);
    c.flush_until(3);
    c.send_bytes(&raw_frame(COUNTERS, &payload(1, &[(b"rx", 1)])))
        .expect("send");
    match c.recv_skip_durable() {
        Recv::Frame(Frame::Error { code, message }) => {
            assert_eq!(code, ErrorCode::UnknownFrame, "{message}");
            assert!(message.contains("COUNTERS needs version 2"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    c.expect_closed();
    // What was acknowledged stays: the episode ends interrupted with its 3 timesteps.
    let m = wshard_e2e::check::wait_final(&d.data_dir(), "v1-c", wshard_e2e::TIMEOUT)
        .expect("finalized");
    assert_eq!(m.total_timesteps, 3);
}

#[test]
fn counters_rust_client_checks_before_sending() {
    use wshard_client::ClientError;
    let d = Daemon::start(DaemonOptions::default());
    let ch = data::small_channels();
    let mut c = Client::connect_v2(d.socket(), "checks").expect("connect");
    let mut w = c
        .open_episode(data::open_spec("chk", &ch, Durability::Ack))
        .expect("OPEN");
    let too_many: Vec<String> = (0..33).map(|i| format!("n{i}")).collect();
    let too_many: Vec<(&str, u64)> = too_many.iter().map(|n| (n.as_str(), 1)).collect();
    for (bad, needle) in [
        (vec![("Rx", 1)], "counter 0 \"Rx\" has 'R' at byte 0"),
        (vec![("rx", 1), ("rx", 2)], "counter 1 \"rx\" appears twice"),
        (too_many, "field count has value 33"),
    ] {
        match w.send_counters(&bad) {
            Err(ClientError::Counters(e)) => {
                assert!(e.to_string().contains(needle), "{e}");
            }
            other => panic!("{other:?}"),
        }
    }
    // Nothing was sent: the episode records on.
    let p = data::step_payloads(0, &ch);
    let refs: Vec<&[u8]> = p.iter().map(Vec::as_slice).collect();
    w.push(data::t_ns(0), 0.0, false, &refs).expect("push");
    w.send_counters(&[("rx", 1)]).expect("COUNTERS");
    assert_eq!(w.close(Outcome::Completed).expect("close").timesteps, 1);

    let mut v1 = Client::connect(d.socket(), "v1").expect("connect");
    let mut w1 = v1
        .open_episode(data::open_spec("chk-v1", &ch, Durability::Ack))
        .expect("OPEN");
    match w1.send_counters(&[("rx", 1)]) {
        Err(ClientError::NeedsVersion { frame, needs, .. }) => {
            assert_eq!((frame, needs), ("COUNTERS", 2));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(w1.close(Outcome::Completed).expect("close").timesteps, 0);
}
