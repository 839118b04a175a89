//! `crash_keep_sigkill_*`: the real daemon killed (SIGKILL) at random moments while an
//! operator marks and releases episodes (`wshard keep`) as fast as it can. After each
//! restart: every mark whose `keep` was answered is there, every release answered removed
//! its mark (unless a later request was in flight), `.keep/` holds only empty marks of the
//! episodes asked for, the episodes themselves are whole, and recovery left `.keep` alone.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use wshard_e2e::check::check_episode;
use wshard_e2e::rng::Rng;
use wshard_e2e::{data, Daemon, DaemonOptions};

/// Episodes recorded once, then kept and released over and over.
const EPISODES: [&str; 3] = ["kk-a", "kk-b", "kk-c"];
/// Kill rounds (`WSHARD_E2E_KEEP_ROUNDS` overrides).
const DEFAULT_ROUNDS: u64 = 8;
/// The longest wait before a kill (a keep request takes a few fsyncs: tens of ms).
const MAX_DELAY_MS: u64 = 600;
/// How long one request may take before the requester gives up on it.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// One request line on the control socket; the reply, `None` when there is none.
fn try_request(socket: &Path, line: &str) -> Option<Value> {
    let mut s = UnixStream::connect(socket).ok()?;
    s.set_read_timeout(Some(REQUEST_TIMEOUT)).ok()?;
    s.write_all(line.as_bytes()).ok()?;
    s.shutdown(std::net::Shutdown::Write).ok()?;
    let mut reply = String::new();
    s.read_to_string(&mut reply).ok()?;
    serde_json::from_str(reply.trim()).ok()
}

fn request(socket: &Path, line: &str) -> Value {
    try_request(socket, line).unwrap_or_else(|| panic!("no reply to {line}"))
}

/// One `keep` request; `Some(kept)` when answered `ok`.
fn keep(socket: &Path, episode: &str, release: bool) -> Option<bool> {
    let line = format!("{{\"verb\":\"keep\",\"episode\":\"{episode}\",\"release\":{release}}}\n");
    let v = try_request(socket, &line)?;
    (v["ok"] == Value::Bool(true)).then(|| v["result"]["kept"] == Value::Bool(true))
}

/// Per episode: the state of its last answered request, and whether a request was sent
/// after it without an answer (in flight at the kill).
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    answered: Option<bool>,
    in_flight: bool,
}

fn marks(data_dir: &Path) -> BTreeMap<String, u64> {
    let Ok(rd) = std::fs::read_dir(data_dir.join(".keep")) else {
        return BTreeMap::new();
    };
    rd.map(|e| {
        let e = e.unwrap();
        (
            e.file_name().to_string_lossy().into_owned(),
            e.metadata().unwrap().len(),
        )
    })
    .collect()
}

#[test]
fn crash_keep_sigkill_answered_marks_survive_and_nothing_else_appears() {
    let rounds = std::env::var("WSHARD_E2E_KEEP_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_ROUNDS);
    let mut d = Daemon::start(DaemonOptions::default());
    for id in EPISODES {
        d.record_ok(id, 20);
    }
    let socket: PathBuf = d.root().join("wshardd-control.sock");
    let mut rng = Rng::new(0x6b65_6570);
    let seen: Arc<Mutex<BTreeMap<&'static str, Seen>>> = Arc::default();
    let answered = Arc::new(AtomicU64::new(0));
    for round in 0..rounds {
        // The control socket answers (it may come up after the ingest socket).
        let deadline = std::time::Instant::now() + REQUEST_TIMEOUT;
        while try_request(&socket, "{\"verb\":\"status\"}\n").is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "round {round}: no control socket"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let requester = {
            let (stop, seen, socket) = (stop.clone(), seen.clone(), socket.clone());
            let answered = answered.clone();
            let seed = rng.next_u64();
            std::thread::spawn(move || {
                let mut rng = Rng::new(seed);
                while !stop.load(Ordering::Acquire) {
                    let id = EPISODES[usize::try_from(rng.next_u64() % 3).unwrap()];
                    let release = rng.next_u64() % 2 == 0;
                    seen.lock().unwrap().entry(id).or_default().in_flight = true;
                    let answer = keep(&socket, id, release);
                    let mut s = seen.lock().unwrap();
                    let e = s.entry(id).or_default();
                    if let Some(kept) = answer {
                        answered.fetch_add(1, Ordering::Relaxed);
                        *e = Seen {
                            answered: Some(kept),
                            in_flight: false,
                        };
                    } else {
                        // No answer: the daemon died under it; its effect is unknown.
                        return;
                    }
                }
            })
        };
        std::thread::sleep(Duration::from_millis(1 + rng.next_u64() % MAX_DELAY_MS));
        d.kill9();
        stop.store(true, Ordering::Release);
        requester.join().unwrap();
        d.spawn();
        d.wait_ready();
        let on_disk = marks(&d.data_dir());
        let mut s = seen.lock().unwrap();
        for (id, len) in &on_disk {
            assert!(
                EPISODES.contains(&id.as_str()),
                "round {round}: stray mark {id}"
            );
            assert_eq!(*len, 0, "round {round}: mark {id} is not empty");
        }
        for (id, e) in s.iter_mut() {
            let there = on_disk.contains_key(*id);
            if let (Some(kept), false) = (e.answered, e.in_flight) {
                assert_eq!(there, kept, "round {round}: {id}: answered kept={kept}");
            }
            // What the disk says is the state from now on.
            *e = Seen {
                answered: Some(there),
                in_flight: false,
            };
        }
        drop(s);
        let status = request(&socket, "{\"verb\":\"status\"}\n");
        let left = &status["result"]["daemon"]["recovery_left_alone"];
        assert!(
            left.as_array()
                .is_some_and(|a| a.iter().all(|x| x["directory"] != ".keep")),
            "round {round}: recovery reported .keep: {left}"
        );
        let kept = &status["result"]["daemon"]["kept_episodes"];
        assert_eq!(
            kept.as_array().map(Vec::len),
            Some(on_disk.len()),
            "round {round}: {kept}"
        );
        for id in EPISODES {
            let st = check_episode(&d.data_dir(), id, &data::channels()).unwrap();
            assert_eq!((st.status.as_str(), st.timesteps), ("complete", 20), "{id}");
        }
    }
    let n = answered.load(Ordering::Relaxed);
    assert!(
        n >= rounds,
        "only {n} keep requests answered in {rounds} rounds"
    );
    println!("{n} keep requests answered in {rounds} rounds");
}
