//! A trigger window's post-window when its producer stops sending: the real daemon and a
//! real client process (`flight_producer`). A producer that stays connected but silent
//! never reaches `t + post` in `t_ns`; once the wall clock passes the trigger's arrival +
//! `post` + `flight.post_grace_ms`, the window is finalized with what the ring holds
//! (the writer seals its open chunk) and says its post-window was cut short. A producer
//! SIGKILLed during the post-window ends its stream: the window holds every acknowledged
//! step too.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wshard_e2e::flight::*;
use wshard_e2e::{bins, data, Daemon, DaemonOptions};

/// `flight.post_grace_ms` of these tests.
const GRACE_MS: u64 = 300;
/// The trigger's post-window: never reached in `t_ns` (the producer is silent).
const POST_MS: i64 = 2_000;
const PRE_MS: i64 = 500;
/// The window is in place well within this after the trigger (its deadline is
/// `POST_MS + GRACE_MS` away; a debug build on a shared machine is slow).
const DEADLINE_SLACK: Duration = Duration::from_secs(30);
/// Not a multiple of the chunk size: the last steps are in the open chunk when the producer
/// goes silent (the deadline has the writer seal it).
const STEPS: u64 = 203;

fn daemon() -> Daemon {
    let mut o = DaemonOptions::default().rotation(8);
    // No chunk is sealed for its age while the test runs: only the deadline seals it.
    o.max_seconds = 3_600;
    o.extra_toml = format!("[flight]\npost_grace_ms = {GRACE_MS}\n");
    Daemon::start(o)
}

struct Producer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Producer {
    fn spawn(d: &Daemon, episode: &str) -> Self {
        let mut child = Command::new(bins::binary("flight_producer"))
            .arg(d.socket())
            .arg(episode)
            .arg(STEPS.to_string())
            .arg("60")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("flight_producer");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Self {
            child,
            stdin,
            stdout,
        }
    }

    /// The next `durable N` line's N.
    fn durable(&mut self) -> u64 {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("producer output");
        line.trim()
            .strip_prefix("durable ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("producer said {line:?}"))
    }

    fn more(&mut self, k: u64) -> u64 {
        let stdin = self.stdin.as_mut().expect("stdin");
        writeln!(stdin, "more {k}").expect("write");
        stdin.flush().expect("flush");
        self.durable()
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn flight_status(d: &Daemon) -> Value {
    let v = control(d, &json!({"verb": "status"}));
    assert_eq!(v["ok"], json!(true), "{v}");
    v["result"]["flight"].clone()
}

#[test]
fn flight_silent_producer_window_is_cut_short_at_its_deadline() {
    let d = daemon();
    let ch = data::channels();
    let mut p = Producer::spawn(&d, "silent");
    assert_eq!(p.durable(), STEPS);
    let asked = Instant::now();
    let r = trigger_ok(
        &d,
        json!({"verb":"trigger","pre_ms":PRE_MS,"post_ms":POST_MS}),
    );
    let w = r["episode"].as_str().expect("w").to_owned();
    // Pending until the deadline, which status names.
    let pending = &flight_status(&d)["triggers"]["pending"];
    assert_eq!(pending[0]["episode"], w.as_str(), "{pending}");
    assert!(
        pending[0]["post_deadline_unix_ns"].as_u64().is_some(),
        "{pending}"
    );
    let index = wait_window(&d, &w);
    let took = asked.elapsed();
    assert!(
        took >= Duration::from_millis(u64::try_from(POST_MS).unwrap_or(0)),
        "finalized before its deadline: {took:?}"
    );
    assert!(
        took < DEADLINE_SLACK,
        "not finalized at its deadline (the open chunk was never sealed?): {took:?}"
    );
    // Exactly the acknowledged steps within [t - pre, last sent].
    let t = data::t_ns(STEPS - 1);
    check_exact(
        &window_stream(&d, &w, "silent"),
        &ch,
        first_at(t - PRE_MS * NS_PER_MS)..=STEPS - 1,
    );
    verify(&d.data_dir().join(&w));
    // The window says its post-window was cut short, and where.
    let entry = &index.metadata["window"][0];
    assert_eq!(
        entry[wshard_recorder::flight::CUT_SHORT_KEY],
        json!(t),
        "{entry}"
    );
    let m = manifest_of(&d.data_dir().join(&w).join("streams/silent"), "silent");
    assert_eq!(m.extra[wshard_recorder::flight::CUT_SHORT_KEY], json!(t));
    let st = flight_status(&d);
    assert_eq!(st["triggers"]["cut_short"], 1, "{st}");
    assert_eq!(st["triggers"]["persisted"], 1, "{st}");
    let eps = control(&d, &json!({"verb": "episodes"}));
    let listed = eps["result"]["episodes"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["episode"] == w.as_str()).cloned())
        .expect("window listed");
    assert_eq!(listed["cut_short"]["silent"], json!(t), "{listed}");
    // The stream resumes: its ring records as always.
    assert_eq!(p.more(50), STEPS + 50);
    let st = flight_status(&d);
    assert_eq!(
        st["streams"][0]["latest_t_ns"],
        json!(data::t_ns(STEPS + 49)),
        "{st}"
    );
    assert_eq!(st["streams"][0]["pinned_by"], 0, "{st}");
    drop(p.stdin.take());
    let out = p.child.wait().expect("producer exit");
    assert!(out.success());
    verify(&d.data_dir().join("silent"));
}

#[test]
fn flight_producer_sigkilled_during_the_post_window_leaves_a_verified_window() {
    let d = daemon();
    let ch = data::channels();
    let mut p = Producer::spawn(&d, "killed");
    assert_eq!(p.durable(), STEPS);
    let r = trigger_ok(
        &d,
        json!({"verb":"trigger","pre_ms":PRE_MS,"post_ms":POST_MS}),
    );
    let w = r["episode"].as_str().expect("w").to_owned();
    // Part of the post-window, acknowledged, then the producer dies.
    assert_eq!(p.more(30), STEPS + 30);
    p.child.kill().expect("SIGKILL");
    let _ = p.child.wait();
    wait_window(&d, &w);
    let t = data::t_ns(STEPS - 1);
    check_exact(
        &window_stream(&d, &w, "killed"),
        &ch,
        first_at(t - PRE_MS * NS_PER_MS)..=STEPS + 29,
    );
    verify(&d.data_dir().join(&w));
    verify(&d.data_dir().join("killed"));
}
