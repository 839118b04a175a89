//! `wshard bridge ...` against a bridge socket served by the test itself (one JSON
//! request line per connection, one JSON reply line): the requests are the documented
//! JSON, replies are printed as text or raw (`--json`), and every failure path says what
//! went wrong with the right exit code: no socket, a stale socket, a garbage reply, no
//! reply in time, an error reply. (The happy path against the real Python bridge is a ROS
//! test.)
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread::JoinHandle;

use serde_json::{json, Value};

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn bridge(socket: &Path, args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_wshard"))
        .arg("bridge")
        .args(args)
        .arg("--bridge-socket")
        .arg(socket)
        .env_remove("WSHARD_BRIDGE_SOCKET")
        .output()
        .expect("run wshard");
    Run {
        code: out.status.code().expect("exit code"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// What the test's bridge does with one connection.
enum Serve {
    /// Answer this line (a newline is added).
    Reply(String),
    /// Answer nothing and hold the connection until the client gives up.
    Silence,
}

/// Bind `path`, accept one connection, read its request line, then do `serve`; the
/// thread returns the request line.
fn serve_once(path: &Path, serve: Serve) -> JoinHandle<String> {
    let listener = UnixListener::bind(path).unwrap();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let mut stream = stream;
        match serve {
            Serve::Reply(reply) => {
                stream.write_all(reply.as_bytes()).unwrap();
                stream.write_all(b"\n").unwrap();
            }
            Serve::Silence => {
                // Until the client closes its end (its timeout).
                let mut rest = Vec::new();
                let _ = reader.read_to_end(&mut rest);
            }
        }
        line
    })
}

fn socket_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("bridge.sock")
}

fn request_of(h: JoinHandle<String>) -> Value {
    let line = h.join().unwrap();
    assert!(line.ends_with('\n'), "one line: {line:?}");
    serde_json::from_str(&line).unwrap()
}

#[test]
fn cli_bridge_requests_are_the_documented_json() {
    let dir = tempfile::tempdir().unwrap();
    let sock = socket_in(&dir);
    let ok = |result: Value| Serve::Reply(json!({"ok": true, "result": result}).to_string());
    let cases: Vec<(Vec<&str>, Value, Value, &str)> = vec![
        (
            vec![
                "start",
                "ep1",
                "--env-id",
                "lab",
                "--metadata",
                r#"{"robot":"r2"}"#,
            ],
            json!({"cmd": "start", "episode_id": "ep1", "env_id": "lab", "metadata": {"robot": "r2"}}),
            json!({"state": "recording", "episode": "ep1", "last_error": null}),
            "bridge: recording episode `ep1`\n\nstate    recording\nepisode  ep1",
        ),
        (
            vec!["start", "ep2"],
            json!({"cmd": "start", "episode_id": "ep2", "env_id": ""}),
            json!({"state": "recording", "episode": "ep2", "last_error": null}),
            "bridge: recording episode `ep2`\n\nstate    recording\nepisode  ep2",
        ),
        (
            vec!["stop"],
            json!({"cmd": "stop"}),
            json!({"episode": "ep1", "outcome": "completed", "streams_left": 0}),
            "bridge: episode stopped (completed)\n\nepisode       ep1\noutcome       completed\nstreams left  0",
        ),
        (
            vec!["abort"],
            json!({"cmd": "abort"}),
            json!({"episode": "ep1", "outcome": "aborted", "streams_left": 0}),
            "bridge: episode aborted (data kept)\n\nepisode       ep1\noutcome       aborted\nstreams left  0",
        ),
        (
            vec![
                "annotate", "--label", "grasp", "--text", "clean", "--at-ns", "-5",
            ],
            json!({"cmd": "annotate", "label": "grasp", "text": "clean", "at_ns": -5}),
            json!({"seq": 0}),
            "bridge: annotation `grasp` added\n  seq: 0",
        ),
        (
            vec![
                "annotate",
                "--label",
                "score",
                "--json-data",
                r#"{"v":[1,2]}"#,
            ],
            json!({"cmd": "annotate", "label": "score", "json": {"v": [1, 2]}}),
            json!({}),
            "bridge: annotation `score` added",
        ),
    ];
    for (args, want, result, text) in cases {
        let h = serve_once(&sock, ok(result));
        let r = bridge(&sock, &args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        assert_eq!(request_of(h), want, "{args:?}");
        assert_eq!(r.stdout.trim_end(), text, "{args:?}");
        std::fs::remove_file(&sock).unwrap();
    }
    // --json prints the reply as the bridge sent it.
    let reply = json!({"ok": true, "result": {"state": "idle"}});
    let h = serve_once(&sock, Serve::Reply(reply.to_string()));
    let r = bridge(&sock, &["status", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(request_of(h), json!({"cmd": "status"}));
    assert_eq!(serde_json::from_str::<Value>(&r.stdout).unwrap(), reply);
}

#[test]
fn cli_bridge_status_shows_topics_and_streams() {
    let dir = tempfile::tempdir().unwrap();
    let sock = socket_in(&dir);
    let result = json!({
        "state": "recording", "episode": "run-7", "last_error": null,
        "topics": {"/joint_states": {"received": 1000, "recorded": 998, "dropped": 1, "late": 1,
                                     "idle": 0, "drop_reasons": {"queue_full": 1}, "last_error": null},
                   "/camera/rgb": {"received": 30, "recorded": 29, "dropped": 1, "late": 0, "idle": 0,
                                   "drop_reasons": {"error": 1},
                                   "last_error": "/camera/rgb: field data: shape changed"}},
        "streams": {"joints": {"topics": ["/joint_states"], "joined": true, "pushed": 998,
                               "durable": 990, "durable_lag_ms": 4.5}},
        "events": {"/instruction": {"received": 2, "recorded": 2, "dropped": 0}}
    });
    let h = serve_once(
        &sock,
        Serve::Reply(json!({"ok": true, "result": result}).to_string()),
    );
    let r = bridge(&sock, &["status"]);
    h.join().unwrap();
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = &r.stdout;
    assert!(
        out.starts_with("state    recording\nepisode  run-7\n"),
        "{out}"
    );
    let row = |first: &str| {
        out.lines()
            .find(|l| l.starts_with(first))
            .unwrap_or_else(|| panic!("no {first} row:\n{out}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        row("/joint_states"),
        ["/joint_states", "1000", "998", "1", "1", "0"]
    );
    assert!(
        row("/camera/rgb").join(" ").ends_with("shape changed"),
        "{out}"
    );
    assert_eq!(
        row("joints"),
        ["joints", "true", "998", "990", "4.5", "/joint_states"]
    );
    assert_eq!(row("/instruction"), ["/instruction", "2", "2", "0"]);
}

/// The counters the bridge sends in `status`, `stop` and `abort` replies.
fn counters() -> (Value, Value) {
    (
        json!({"/joint_states": {"received": 1200, "recorded": 1198, "dropped": 2, "late": 0,
                                 "idle": 0, "drop_reasons": {"error": 2, "queue_full": 0,
                                 "unmatched": 0, "failed": 0}, "last_error": null}}),
        json!({"/instruction": {"received": 3, "recorded": 3, "dropped": 0}}),
    )
}

/// Text output: the replies' objects as lines and tables, never as JSON.
fn assert_no_json(args: &[&str], out: &str) {
    assert!(!out.contains('{') && !out.contains('"'), "{args:?}:\n{out}");
}

#[test]
fn cli_bridge_start_stop_and_abort_print_lines_and_tables_not_json() {
    let dir = tempfile::tempdir().unwrap();
    let sock = socket_in(&dir);
    let (topics, events) = counters();
    // `start` answers with the status; `stop` and `abort` with the episode's summary.
    let status = json!({"state": "recording", "episode": "ep1", "last_error": null,
        "topics": topics, "events": events,
        "streams": {"joint_states": {"topics": ["/joint_states"], "joined": false, "pushed": 0,
                                     "durable": 0, "durable_lag_ms": 0.0, "queued": 0}}});
    let summary = |outcome: &str| {
        json!({"episode": "ep1", "outcome": outcome, "streams_left": 0, "topics": topics,
            "events": events,
            "streams": {"joint_states": {"joined": true, "timesteps": 1198, "durable": 1198},
                        "camera": {"joined": true, "error": "connection lost"}}})
    };
    for (args, result) in [
        (vec!["start", "ep1"], status),
        (vec!["stop"], summary("completed")),
        (vec!["abort"], summary("aborted")),
    ] {
        let h = serve_once(
            &sock,
            Serve::Reply(json!({"ok": true, "result": result}).to_string()),
        );
        let r = bridge(&sock, &args);
        h.join().unwrap();
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        assert_no_json(&args, &r.stdout);
        let words = |first: &str| {
            r.stdout
                .lines()
                .find(|l| l.starts_with(first))
                .unwrap_or_else(|| panic!("{args:?}: no {first} line:\n{}", r.stdout))
                .split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            words("/joint_states")[..6],
            ["/joint_states", "1200", "1198", "2", "0", "0"]
        );
        assert_eq!(words("/instruction"), ["/instruction", "3", "3", "0"]);
        if args[0] == "start" {
            assert_eq!(words("state"), ["state", "recording"]);
        } else {
            assert_eq!(
                words("outcome")[1],
                if args[0] == "stop" {
                    "completed"
                } else {
                    "aborted"
                }
            );
            assert_eq!(words("streams left"), ["streams", "left", "0"]);
            assert_eq!(
                words("joint_states"),
                ["joint_states", "true", "1198", "1198"]
            );
            assert_eq!(
                words("camera"),
                ["camera", "true", "-", "-", "connection", "lost"]
            );
        }
        std::fs::remove_file(&sock).unwrap();
    }
    // An annotation's result, nested or not, as `key: value` lines.
    let h = serve_once(
        &sock,
        Serve::Reply(
            json!({"ok": true, "result": {"seq": 4, "file": {"name": "a.json"}}}).to_string(),
        ),
    );
    let r = bridge(&sock, &["annotate", "--label", "x"]);
    h.join().unwrap();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "bridge: annotation `x` added\n  file.name: a.json\n  seq: 4\n"
    );
}

#[test]
fn cli_bridge_status_lag_is_rounded_and_a_dash_when_not_measured() {
    let dir = tempfile::tempdir().unwrap();
    let sock = socket_in(&dir);
    let result = json!({"state": "failed", "episode": "run-7", "last_error": "connection lost",
        "streams": {"joints": {"topics": ["/joint_states"], "joined": true, "pushed": 60,
                               "durable": 40, "durable_lag_ms": 11534.302586},
                    "imu": {"topics": ["/imu"], "joined": true, "pushed": 9, "durable": 9,
                            "durable_lag_ms": null}}});
    let h = serve_once(
        &sock,
        Serve::Reply(json!({"ok": true, "result": result}).to_string()),
    );
    let r = bridge(&sock, &["status"]);
    h.join().unwrap();
    assert_eq!(r.code, 0, "{}", r.stderr);
    let row = |first: &str| {
        r.stdout
            .lines()
            .find(|l| l.starts_with(first))
            .unwrap_or_else(|| panic!("no {first} row:\n{}", r.stdout))
            .split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        row("joints"),
        ["joints", "true", "60", "40", "11534.3", "/joint_states"]
    );
    assert_eq!(row("imu"), ["imu", "true", "9", "9", "-", "/imu"]);
}

#[test]
fn cli_bridge_error_reply_shows_code_and_message() {
    let dir = tempfile::tempdir().unwrap();
    let sock = socket_in(&dir);
    for (code, exit) in [
        ("NOT_RECORDING", 1),
        ("ALREADY_RECORDING", 1),
        ("FAILED", 1),
        ("DAEMON", 1),
        ("BAD_REQUEST", 2),
    ] {
        let reply =
            json!({"ok": false, "error": {"code": code, "message": "no episode is recording"}});
        let h = serve_once(&sock, Serve::Reply(reply.to_string()));
        let r = bridge(&sock, &["stop", "--json"]);
        h.join().unwrap();
        assert_eq!(r.code, exit, "{code}: {}", r.stderr);
        assert_eq!(
            r.stderr.trim_end(),
            format!("wshard bridge stop: {code}: no episode is recording")
        );
        // With --json the reply is printed too.
        assert_eq!(serde_json::from_str::<Value>(&r.stdout).unwrap(), reply);
        std::fs::remove_file(&sock).unwrap();
    }
}

#[test]
fn cli_bridge_no_socket_or_stale_socket() {
    let dir = tempfile::tempdir().unwrap();
    let sock = socket_in(&dir);
    let r = bridge(&sock, &["status"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("there is no socket file"), "{}", r.stderr);
    assert!(
        r.stderr.contains(&sock.display().to_string()),
        "{}",
        r.stderr
    );
    // A socket file nothing listens on.
    drop(UnixListener::bind(&sock).unwrap());
    let r = bridge(&sock, &["status"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("nothing listens on it"), "{}", r.stderr);
    // The environment names the socket when --bridge-socket does not.
    let out = Command::new(env!("CARGO_BIN_EXE_wshard"))
        .args(["bridge", "status"])
        .env("WSHARD_BRIDGE_SOCKET", dir.path().join("env.sock"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("env.sock: there is no socket file"));
}

#[test]
fn cli_bridge_garbage_reply() {
    let dir = tempfile::tempdir().unwrap();
    let sock = socket_in(&dir);
    for (reply, needle) in [
        ("hello bridge", "not JSON"),
        ("[1,2]", "expected an object with a boolean \"ok\""),
        (
            r#"{"ok":"yes"}"#,
            "expected an object with a boolean \"ok\"",
        ),
    ] {
        let h = serve_once(&sock, Serve::Reply(reply.to_owned()));
        let r = bridge(&sock, &["status"]);
        h.join().unwrap();
        assert_eq!(r.code, 2, "{reply}: {}", r.stderr);
        assert!(
            r.stderr.contains("the reply is not the bridge's JSON"),
            "{}",
            r.stderr
        );
        assert!(r.stderr.contains(needle), "{needle}: {}", r.stderr);
        std::fs::remove_file(&sock).unwrap();
    }
    // Closed without a reply.
    let listener = UnixListener::bind(&sock).unwrap();
    let h = std::thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        let mut line = String::new();
        BufReader::new(&s).read_line(&mut line).unwrap();
    });
    let r = bridge(&sock, &["stop"]);
    h.join().unwrap();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("closed the connection without a reply"),
        "{}",
        r.stderr
    );
}

#[test]
fn cli_bridge_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let sock = socket_in(&dir);
    let h = serve_once(&sock, Serve::Silence);
    let r = bridge(&sock, &["stop", "--timeout-ms", "300"]);
    assert_eq!(request_of(h), json!({"cmd": "stop"}));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("no reply within 300 ms"), "{}", r.stderr);
}

#[test]
fn cli_bridge_bad_arguments_are_refused_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    // No socket exists: a connection attempt would say so; these fail before.
    let sock = socket_in(&dir);
    let r = bridge(&sock, &["start", "ep", "--metadata", "[1]"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("--metadata must be a JSON object"),
        "{}",
        r.stderr
    );
    let r = bridge(&sock, &["start", "ep", "--metadata", "{"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--metadata is not JSON"), "{}", r.stderr);
    let r = bridge(&sock, &["annotate", "--label", "x", "--json-data", "nope"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--json-data is not JSON"), "{}", r.stderr);
    let r = bridge(
        &sock,
        &[
            "annotate",
            "--label",
            "x",
            "--text",
            "a",
            "--json-data",
            "1",
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("cannot be used with"), "{}", r.stderr);
}
