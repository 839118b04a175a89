//! The control socket against the real daemon: `wshard status / episodes / close / metrics`,
//! the Prometheus text and its TCP endpoint, hostile control requests, and the stricter
//! allowlist of the mutating verb.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use wshard_client::{ClientError, Durability, ErrorCode, Outcome};
use wshard_e2e::check::{check_episode, read_manifest};
use wshard_e2e::control_cli::{control_socket, json_ok, text, wshard};
use wshard_e2e::{bins, data, Daemon, DaemonOptions, TIMEOUT};

fn find<'a>(list: &'a Value, id: &str) -> &'a Value {
    list.as_array()
        .and_then(|a| a.iter().find(|e| e["episode"] == id))
        .unwrap_or_else(|| panic!("episode {id} not in {list}"))
}

/// One raw request line (or bytes) on the control socket; the reply as JSON.
fn raw_request(d: &Daemon, bytes: &[u8]) -> Value {
    let mut s = UnixStream::connect(control_socket(d)).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    s.write_all(bytes).unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    serde_json::from_str(reply.trim()).unwrap_or_else(|e| panic!("reply {reply:?}: {e}"))
}

#[test]
fn control_status_shows_open_episode_with_moving_counters() {
    let d = Daemon::start(DaemonOptions::default());
    let ch = data::channels();
    let mut client = d.client("e2e/status");
    let mut w = client
        .open_episode(data::open_spec("live-1", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 200).unwrap();
    w.flush().unwrap();
    // Found through the config file, like an operator would.
    let o = Command::new(bins::wshard())
        .args(["status", "--json", "--config"])
        .arg(d.config_path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let first: Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &first["result"];
    assert_eq!(r["daemon"]["pid"], d.pid().as_raw(), "{r}");
    assert_eq!(r["daemon"]["counters"]["episodes_opened"], 1, "{r}");
    // The client's connection, and the readiness probe's.
    assert!(
        r["daemon"]["counters"]["connections_accepted"]
            .as_u64()
            .is_some_and(|n| n >= 1),
        "{r}"
    );
    assert_eq!(r["daemon"]["counters"]["connections_refused"], 0, "{r}");
    let e = find(&r["episodes"], "live-1");
    assert_eq!(e["received"], 200, "{e}");
    assert_eq!(e["durable"], 200, "{e}");
    assert_eq!(e["durability"], "ack", "{e}");
    assert_eq!(e["transport"], "socket", "{e}");
    assert_eq!(e["client"], "e2e/status", "{e}");
    assert_eq!(e["peer_uid"], nix::unistd::getuid().as_raw(), "{e}");
    assert!(e["bytes"].as_u64().unwrap() > 0, "{e}");
    assert!(e["timesteps_per_s"].as_f64().unwrap() > 0.0, "{e}");
    assert!(e["bytes_per_s"].as_f64().unwrap() > 0.0, "{e}");

    data::push_steps(&mut w, &ch, 300).unwrap();
    w.flush().unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    let r = json_ok(&d, &["status", "--json"]);
    let e = find(&r["episodes"], "live-1");
    assert_eq!(e["received"], 500, "{e}");
    assert_eq!(e["durable"], 500, "{e}");

    let o = wshard(&d, &["status"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("open episodes: 1"), "{out}");
    assert!(out.contains("live-1") && out.contains("steps/s"), "{out}");
    println!("{out}");
    w.close(Outcome::Completed).unwrap();
}

#[test]
fn control_episodes_lists_open_and_finished() {
    let d = Daemon::start(DaemonOptions::default());
    d.record_ok("done-1", 50);
    let ch = data::channels();
    let mut client = d.client("e2e/episodes");
    let mut w = client
        .open_episode(data::open_spec("live-2", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 10).unwrap();
    w.flush().unwrap();
    let r = json_ok(&d, &["episodes", "--json"]);
    let done = find(&r["episodes"], "done-1");
    assert_eq!(
        (
            &done["status"],
            &done["open"],
            &done["timesteps"],
            &done["chunks"]
        ),
        (
            &Value::from("complete"),
            &Value::Bool(false),
            &Value::from(50),
            &Value::from(1)
        ),
        "{done}"
    );
    assert!(done["bytes"].as_u64().unwrap() > 0, "{done}");
    let live = find(&r["episodes"], "live-2");
    assert_eq!(
        (&live["status"], &live["open"], &live["timesteps"]),
        (
            &Value::from("recording"),
            &Value::Bool(true),
            &Value::from(10)
        ),
        "{live}"
    );
    let o = wshard(&d, &["episodes"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("done-1") && out.contains("complete"), "{out}");
    assert!(
        out.contains("live-2") && out.contains("recording (open)"),
        "{out}"
    );
    w.close(Outcome::Completed).unwrap();
}

#[test]
fn control_close_interrupts_and_client_can_open_again() {
    let d = Daemon::start(DaemonOptions::default().rotation(64));
    let ch = data::channels();
    let mut client = d.client("e2e/close");
    let mut w = client
        .open_episode(data::open_spec("stop-me", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 150).unwrap();
    w.flush().unwrap();
    assert_eq!(w.durable_seq(), 150);

    let r = json_ok(&d, &["close", "stop-me", "--json"]);
    let uid = nix::unistd::getuid().as_raw();
    assert_eq!(r["status"], "interrupted", "{r}");
    assert_eq!(r["timesteps"], 150, "{r}");
    assert_eq!(
        r["reason"],
        format!("closed by operator (uid {uid})"),
        "{r}"
    );

    // The client learns it on its next call.
    let deadline = Instant::now() + TIMEOUT;
    let err = loop {
        match data::push_steps(&mut w, &ch, 1).and_then(|_| w.flush()) {
            Err(e) => break e,
            Ok(_) => assert!(Instant::now() < deadline, "no ERROR after close"),
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    match &err {
        ClientError::Server { code, message } => {
            assert_eq!(*code, ErrorCode::Stopped, "{message}");
            assert_eq!(*code as u16, 20);
            assert!(
                message.contains("stop-me") && message.contains("closed by operator"),
                "{message}"
            );
        }
        other => panic!("expected ERROR STOPPED, got {other}"),
    }
    drop(w);
    // Everything acknowledged DURABLE is there, and the episode is final.
    let st = check_episode(&d.data_dir(), "stop-me", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("interrupted", 150));
    let m = read_manifest(&d.data_dir(), "stop-me").unwrap();
    assert_eq!(
        m.extra.get("reason").and_then(Value::as_str),
        Some(format!("closed by operator (uid {uid})").as_str())
    );

    // Same connection, new episode.
    let mut w = client
        .open_episode(data::open_spec("after-stop", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 20).unwrap();
    assert_eq!(w.close(Outcome::Completed).unwrap().timesteps, 20);
    let st = check_episode(&d.data_dir(), "after-stop", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 20));

    let r = json_ok(&d, &["status", "--json"]);
    assert_eq!(r["daemon"]["counters"]["episodes_stopped"], 1, "{r}");
    let r = json_ok(&d, &["episodes", "--json"]);
    assert_eq!(find(&r["episodes"], "stop-me")["status"], "interrupted");
}

#[test]
fn control_close_unknown_episode_exits_1() {
    let d = Daemon::start(DaemonOptions::default());
    let o = wshard(&d, &["close", "no-such-episode"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("UNKNOWN_EPISODE") && err.contains("no-such-episode"),
        "{err}"
    );
    // A finished episode is not open either, and the message says what it is.
    d.record_ok("finished", 5);
    let o = wshard(&d, &["close", "finished", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["error"]["code"], "UNKNOWN_EPISODE", "{v}");
    assert_eq!(v["error"]["on_disk_status"], "complete", "{v}");
}

#[test]
fn control_no_daemon_is_a_clear_error() {
    let d = Daemon::new(DaemonOptions::default());
    let o = wshard(&d, &["status"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("cannot connect to the control socket") && err.contains("is wshardd running?"),
        "{err}"
    );
}

/// One sample line: name, labels, value.
type Sample = (String, Vec<(String, String)>, f64);

/// Check a Prometheus text exposition: HELP and TYPE before a family's samples, every
/// sample `name{labels} value` of a declared family with well-formed labels. Returns the
/// samples as `(name, labels, value)`.
fn parse_exposition(text: &str) -> Vec<Sample> {
    let mut typed: Vec<String> = Vec::new();
    let mut helped: Vec<String> = Vec::new();
    let mut samples = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap();
            assert!(!helped.contains(&name.to_owned()), "HELP twice: {line}");
            helped.push(name.to_owned());
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut p = rest.split(' ');
            let (name, kind) = (p.next().unwrap(), p.next().unwrap());
            assert!(["counter", "gauge"].contains(&kind), "{line}");
            assert_eq!(
                helped.last().map(String::as_str),
                Some(name),
                "TYPE without HELP: {line}"
            );
            assert!(
                !kind.eq("counter") || name.ends_with("_total"),
                "counter name: {line}"
            );
            typed.push(name.to_owned());
            continue;
        }
        assert!(
            !line.starts_with('#') && !line.is_empty(),
            "stray line {line:?}"
        );
        let (series, value) = line.rsplit_once(' ').unwrap();
        let value: f64 = match value {
            "NaN" => f64::NAN,
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v
                .parse()
                .unwrap_or_else(|e| panic!("value in {line:?}: {e}")),
        };
        let (name, labels) = match series.split_once('{') {
            None => (series, Vec::new()),
            Some((name, rest)) => (name, parse_labels(rest.strip_suffix('}').unwrap())),
        };
        assert!(name.starts_with("wshardd_"), "{line}");
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "metric name {name:?}"
        );
        assert_eq!(
            typed.last().map(String::as_str),
            Some(name),
            "sample outside its family: {line}"
        );
        samples.push((name.to_owned(), labels, value));
    }
    samples
}

fn parse_labels(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while chars.peek().is_some() {
        let key: String = chars.by_ref().take_while(|&c| c != '=').collect();
        assert!(
            !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "label {key:?} in {s}"
        );
        assert_eq!(chars.next(), Some('"'), "label value unquoted in {s}");
        let mut value = String::new();
        loop {
            match chars.next() {
                Some('\\') => match chars.next() {
                    Some('\\') => value.push('\\'),
                    Some('"') => value.push('"'),
                    Some('n') => value.push('\n'),
                    other => panic!("bad escape {other:?} in {s}"),
                },
                Some('"') => break,
                Some(c) => value.push(c),
                None => panic!("unterminated label value in {s}"),
            }
        }
        out.push((key, value));
        match chars.next() {
            None | Some(',') => {}
            Some(c) => panic!("unexpected {c:?} after a label in {s}"),
        }
    }
    out
}

fn value_of(samples: &[Sample], name: &str, episode: Option<&str>) -> f64 {
    samples
        .iter()
        .find(|(n, l, _)| {
            n == name && episode.map_or(true, |id| l.iter().any(|(k, v)| k == "episode" && v == id))
        })
        .unwrap_or_else(|| panic!("no sample {name} {episode:?}"))
        .2
}

#[test]
fn control_metrics_text_parses() {
    let d = Daemon::start(DaemonOptions::default());
    d.record_ok("m-done", 30);
    let ch = data::channels();
    let mut client = d.client("e2e/metrics");
    let mut w = client
        .open_episode(data::open_spec("m-1", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 100).unwrap();
    w.flush().unwrap();
    let o = wshard(&d, &["metrics"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let body = String::from_utf8(o.stdout).unwrap();
    let s = parse_exposition(&body);
    assert_eq!(value_of(&s, "wshardd_episodes_open", None), 1.0, "{body}");
    assert_eq!(
        value_of(&s, "wshardd_episodes_opened_total", None),
        2.0,
        "{body}"
    );
    assert_eq!(
        value_of(&s, "wshardd_episodes_finalized_total", None),
        1.0,
        "{body}"
    );
    assert_eq!(
        value_of(&s, "wshardd_episode_received_timesteps_total", Some("m-1")),
        100.0
    );
    assert_eq!(
        value_of(&s, "wshardd_episode_durable_timesteps_total", Some("m-1")),
        100.0
    );
    assert!(value_of(&s, "wshardd_episode_received_bytes_total", Some("m-1")) > 0.0);
    assert!(value_of(&s, "wshardd_episode_timesteps_per_second", Some("m-1")) > 0.0);
    assert!(value_of(&s, "wshardd_uptime_seconds", None) > 0.0);
    assert!(body.contains("wshardd_build_info{version=\""), "{body}");
    w.close(Outcome::Completed).unwrap();
}

fn http_get(addr: &str, request: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn control_tcp_metrics_endpoint() {
    // A free port: bound and released (another process could take it meanwhile; unlikely).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let opts = DaemonOptions {
        extra_toml: format!("[control]\nmetrics_listen = {addr:?}\n"),
        ..DaemonOptions::default()
    };
    let d = Daemon::start(opts);
    d.record_ok("tcp-1", 10);
    let r = http_get(&addr, "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let (head, body) = r.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4"),
        "{head}"
    );
    let s = parse_exposition(body);
    assert_eq!(
        value_of(&s, "wshardd_episodes_finalized_total", None),
        1.0,
        "{body}"
    );
    let r = http_get(&addr, "GET /other HTTP/1.1\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 404 "), "{r}");
    let r = http_get(&addr, "POST /metrics HTTP/1.1\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 405 "), "{r}");
    let r = http_get(
        &addr,
        &format!("GET /{} HTTP/1.1\r\n\r\n", "x".repeat(20_000)),
    );
    assert!(r.starts_with("HTTP/1.1 431 "), "{r}");
}

#[test]
fn control_hostile_requests_get_typed_errors() {
    let d = Daemon::start(DaemonOptions::default());
    // A client that connects and says nothing does not hold anyone up.
    let _silent = UnixStream::connect(control_socket(&d)).unwrap();
    let t = Instant::now();
    json_ok(&d, &["status", "--json"]);
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "status took {:?}",
        t.elapsed()
    );

    let v = raw_request(&d, b"hello\n");
    assert_eq!(v["error"]["code"], "BAD_REQUEST", "{v}");
    let v = raw_request(&d, &vec![b'x'; 100_000]);
    assert_eq!(v["error"]["code"], "REQUEST_TOO_LARGE", "{v}");
    let v = raw_request(&d, b"{\"verb\":\"reboot\"}\n");
    assert_eq!(
        (&v["error"]["code"], &v["verb"]),
        (&Value::from("UNKNOWN_VERB"), &Value::from("reboot")),
        "{v}"
    );
    let v = raw_request(&d, b"{\"version\":9,\"verb\":\"status\"}\n");
    assert_eq!(v["error"]["code"], "UNSUPPORTED_VERSION", "{v}");
    let v = raw_request(&d, b"{\"verb\":\"close\"}\n");
    assert_eq!(v["error"]["code"], "BAD_REQUEST", "{v}");
    let v = raw_request(&d, b"{\"verb\":\"status\"}\n");
    assert_eq!(v["ok"], Value::Bool(true), "{v}");
    // Many connections at once, most silent: answered or refused BUSY, never stuck.
    let crowd: Vec<UnixStream> = (0..40)
        .map(|_| UnixStream::connect(control_socket(&d)).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    drop(crowd);
    d.record_ok("still-serving", 20);
    json_ok(&d, &["episodes", "--json"]);
}

#[test]
fn control_close_refused_for_non_admin_peer() {
    if let Err(why) =
        wshard_e2e::privileged::require_root("control_close_refused_for_non_admin_peer")
    {
        println!("skipped: {why}");
        return;
    }
    let opts = DaemonOptions {
        extra_toml: "[control]\nmode = \"0666\"\n".into(),
        ..DaemonOptions::default()
    };
    let d = Daemon::start(opts);
    // Let uid 65534 reach the socket inside the test's private directory.
    std::fs::set_permissions(
        d.root(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let ch = data::channels();
    let mut client = d.client("e2e/admin");
    let mut w = client
        .open_episode(data::open_spec("guarded", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 10).unwrap();
    w.flush().unwrap();
    let as_nobody = |args: &[&str]| {
        Command::new(bins::wshard())
            .args(args)
            .arg("--control")
            .arg(control_socket(&d))
            .uid(65534)
            .gid(65534)
            .output()
            .expect("cannot run wshard as uid 65534")
    };
    let o = as_nobody(&["close", "guarded", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["error"]["code"], "PERMISSION_DENIED", "{v}");
    assert_eq!(v["error"]["uid"], 65534, "{v}");
    assert_eq!(v["verb"], "close", "{v}");
    // Reading is allowed (no ingest allowlist is set).
    let o = as_nobody(&["status", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // The episode was not touched.
    data::push_steps(&mut w, &ch, 10).unwrap();
    assert_eq!(w.close(Outcome::Completed).unwrap().timesteps, 20);
    assert!(
        d.wait_log("control: permission denied", 1, TIMEOUT),
        "{}",
        d.log()
    );
}

/// Timesteps a client sent before it learned of the stop are dropped without an ERROR, its
/// FLUSH is answered with the final DURABLE and its CLOSE with the final count, and a new
/// OPEN works: the race between an operator's `close` and a busy client leaves nothing
/// pending on the connection.
#[test]
fn control_close_late_frames_are_dropped_and_close_is_accepted() {
    use wshard_e2e::abuse::small;
    use wshard_e2e::raw::RawConn;
    use wshard_ingest_proto::{AcceptedWhat, Frame};
    let d = Daemon::start(DaemonOptions::default());
    let ch = data::small_channels();
    let mut c = RawConn::hello(&d.socket());
    c.open(&small("raw-stop"));
    c.timesteps(&ch, 0..10);
    assert_eq!(c.flush_until(10), 10);
    let r = json_ok(&d, &["close", "raw-stop", "--json"]);
    assert_eq!(r["timesteps"], 10, "{r}");
    let msg = c.expect_error(ErrorCode::Stopped);
    assert!(msg.contains("raw-stop"), "{msg}");
    // Sent "before it knew": no NOT_OPEN for these; FLUSH is answered all the same.
    c.timesteps(&ch, 10..15);
    c.expect_silence(Duration::from_millis(300));
    assert_eq!(c.flush_until(10), 10);
    c.send(&Frame::Close {
        outcome: Outcome::Completed,
    });
    assert_eq!(c.expect_accepted(AcceptedWhat::Close), 10);
    // Now idle: a stray timestep is NOT_OPEN again, and a new episode opens.
    c.timesteps(&ch, 0..1);
    c.expect_error(ErrorCode::NotOpen);
    c.open(&small("raw-after"));
    c.timesteps(&ch, 0..3);
    c.close(Outcome::Completed, 3);
    let st = check_episode(&d.data_dir(), "raw-stop", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("interrupted", 10));
}
