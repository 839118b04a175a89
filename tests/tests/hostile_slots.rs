//! Connection slots cannot be hoarded, against the real daemon (docs/PROTOCOL.md, "Server
//! timeouts and connection limits"):
//!
//! - connections that never speak are cut at `limits.handshake_timeout_ms` with
//!   `ERROR{TIMEOUT}`, so 64 of them (the default `max_connections`) block new clients only
//!   until then;
//! - a connection without an open episode is cut at `limits.no_episode_timeout_ms`, however
//!   many frames it sends, counted from its HELLO or from the end of its last episode;
//! - one uid holds at most `limits.max_connections_per_uid` connections while another uid
//!   still connects and records (needs root for the second uid; skips otherwise);
//! - a producer with an open episode is never cut, however long it pauses, over the socket
//!   or a shared-memory ring;
//! - a client that does not read its socket gets `ERROR{TIMEOUT}` after the write timeout
//!   and keeps everything acknowledged `DURABLE`;
//! - SIGHUP applies new limits and deadlines to new connections.
//!
//! Each cut is counted in the daemon counters (`wshard status`). The tests run one at a
//! time: they hold many connections and wait on deadlines.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use wshard_client::{Durability, Outcome, Transport};
use wshard_e2e::abuse::{self, assert_contains};
use wshard_e2e::check::{check_episode, wait_final};
use wshard_e2e::privileged::{self, require_root};
use wshard_e2e::raw::{timestep_frame, RawConn, Recv};
use wshard_e2e::{bins, data, Daemon, DaemonOptions, TIMEOUT};
use wshard_ingest_proto::{encode_to_vec, ErrorCode, Frame, PROTOCOL_VERSION};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Start a daemon whose `[limits]` table also holds `limits`. With `open_socket`, anyone
/// may connect (socket 0666 in a 0755 directory), for a second uid.
fn start(opts: DaemonOptions, limits: &str, open_socket: bool) -> Daemon {
    let opts = if open_socket {
        DaemonOptions {
            socket_mode: "0666".into(),
            ..opts
        }
    } else {
        opts
    };
    let mut d = Daemon::new(opts);
    let text = d.options().to_toml(&d.data_dir(), &d.socket());
    let patched = text.replacen("[limits]\n", &format!("[limits]\n{limits}\n"), 1);
    assert_ne!(patched, text, "no [limits] table in the config");
    d.write_config_text(&patched);
    if open_socket {
        std::fs::set_permissions(d.root(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    d.spawn();
    d.wait_ready();
    d
}

/// `wshard status --json`: the result object.
fn status(d: &Daemon) -> Value {
    let o = Command::new(bins::wshard())
        .args(["status", "--json", "--control"])
        .arg(d.root().join("wshardd-control.sock"))
        .env_remove("WSHARDD_CONFIG")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["result"].clone()
}

/// A daemon counter from `wshard status`.
fn counter(d: &Daemon, name: &str) -> u64 {
    let r = status(d);
    r["daemon"]["counters"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("no counter {name} in {r}"))
}

/// Wait until the daemon holds no connection (the readiness probe's has ended).
fn wait_no_connections(d: &Daemon) {
    let deadline = Instant::now() + TIMEOUT;
    while status(d)["daemon"]["connections_active"] != 0 {
        assert!(Instant::now() < deadline, "connections never went to 0");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn hello_frame(name: &str) -> Frame {
    Frame::Hello {
        version: PROTOCOL_VERSION,
        client_name: name.into(),
    }
}

/// Connect and HELLO; the first frame back.
fn hello_reply(d: &Daemon) -> (RawConn, Recv) {
    let mut c = RawConn::connect(&d.socket());
    let _ = c.send_bytes(&encode_to_vec(&hello_frame("probe")).unwrap());
    let got = c.recv_skip_durable();
    (c, got)
}

/// Wait until a new connection completes its HELLO (slots come back as the threads of
/// closed connections end).
fn wait_accepting(d: &Daemon) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        match hello_reply(d).1 {
            Recv::Frame(Frame::HelloOk { .. }) => return,
            Recv::Frame(Frame::Error {
                code: ErrorCode::Overloaded,
                ..
            }) => {}
            other => panic!("probe: {other:?}"),
        }
        assert!(Instant::now() < deadline, "no free connection slot");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Expect `ERROR{TIMEOUT}` naming `parts`, then the end of the stream; returns the message.
fn expect_cut(c: &mut RawConn, parts: &[&str]) -> String {
    let m = c.expect_error(ErrorCode::Timeout);
    assert_contains(&m, parts);
    c.expect_closed();
    m
}

// ---------------------------------------------------------------------------------------------

#[test]
fn hostile_silent_connections_are_cut_at_the_handshake_deadline() {
    let _serial = serial();
    // The per-uid limit as high as max_connections: this is about the handshake deadline.
    let d = start(
        DaemonOptions::default(),
        "handshake_timeout_ms = 3000\nmax_connections_per_uid = 64",
        false,
    );
    wait_no_connections(&d);
    let t0 = Instant::now();
    // 64 connections that never speak take every slot of the default max_connections...
    let mut silent: Vec<RawConn> = (0..64).map(|_| RawConn::connect(&d.socket())).collect();
    match hello_reply(&d).1 {
        Recv::Frame(Frame::Error {
            code: ErrorCode::Overloaded,
            message,
        }) => assert_contains(&message, &["limits.max_connections (64)"]),
        other => panic!("expected OVERLOADED with 64 silent connections, got {other:?}"),
    }
    // ...until the handshake deadline: each gets ERROR{TIMEOUT} naming it, then EOF.
    for c in &mut silent {
        expect_cut(c, &["HELLO", "3000 ms", "limits.handshake_timeout_ms"]);
    }
    assert!(
        t0.elapsed() >= Duration::from_millis(3000),
        "cut before the deadline: {:?}",
        t0.elapsed()
    );
    wait_accepting(&d);
    d.record_ok("after-handshake-deadline", 100);
    assert_eq!(counter(&d, "connections_cut_handshake"), 64);
    assert_eq!(counter(&d, "connections_cut_no_episode"), 0);
    assert!(d.wait_log("closing a connection: no complete HELLO", 64, TIMEOUT));
    // `wshard status` shows the cuts.
    let o = Command::new(bins::wshard())
        .args(["status", "--control"])
        .arg(d.root().join("wshardd-control.sock"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("connections cut 64 no HELLO in time"),
        "{text}"
    );
}

#[test]
fn hostile_connection_without_an_episode_is_cut_at_its_deadline() {
    let _serial = serial();
    let d = start(
        DaemonOptions::default(),
        "no_episode_timeout_ms = 1000",
        false,
    );
    let ch = data::small_channels();
    let parts = [
        "no episode opened",
        "1000 ms",
        "limits.no_episode_timeout_ms",
    ];

    // HELLO, then nothing.
    let mut quiet = RawConn::hello(&d.socket());
    let t = Instant::now();
    expect_cut(&mut quiet, &parts);
    assert!(
        t.elapsed() >= Duration::from_millis(1000),
        "{:?}",
        t.elapsed()
    );

    // Frames that open no episode do not extend the deadline.
    let mut busy = RawConn::hello(&d.socket());
    let t = Instant::now();
    let flush = encode_to_vec(&Frame::Flush).unwrap();
    let message = loop {
        // The daemon may have cut the connection since the last answer: the write may fail.
        let _ = busy.send_bytes(&flush);
        match busy.recv_skip_durable() {
            Recv::Frame(Frame::Error {
                code: ErrorCode::NotOpen,
                ..
            }) => std::thread::sleep(Duration::from_millis(50)),
            Recv::Frame(Frame::Error {
                code: ErrorCode::Timeout,
                message,
            }) => break message,
            other => panic!("expected NOT_OPEN or TIMEOUT, got {other:?}"),
        }
        assert!(t.elapsed() < TIMEOUT, "never cut");
    };
    assert_contains(&message, &parts);
    busy.expect_closed();
    assert!(
        t.elapsed() >= Duration::from_millis(1000),
        "{:?}",
        t.elapsed()
    );

    // After an episode that lasted longer than the deadline: the deadline counts from its
    // end, not from the HELLO; the episode is whole.
    let mut after = RawConn::hello(&d.socket());
    after.open(&abuse::small("before-the-cut"));
    after.timesteps(&ch, 0..20);
    after.flush_until(20);
    after.expect_silence(Duration::from_millis(1500));
    let t = Instant::now();
    after.close(wshard_ingest_proto::Outcome::Completed, 20);
    expect_cut(&mut after, &parts);
    assert!(
        t.elapsed() >= Duration::from_millis(1000),
        "{:?}",
        t.elapsed()
    );
    let st = check_episode(&d.data_dir(), "before-the-cut", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 20));

    assert_eq!(counter(&d, "connections_cut_no_episode"), 3);
    assert!(d.wait_log("closing a connection: no episode opened", 3, TIMEOUT));
    d.record_ok("after-no-episode-deadline", 50);
}

/// Run `access_client` as uid/gid `NOBODY`: its one output line and whether it exited 0.
fn client_as_nobody(d: &Daemon, id: &str, n: u64) -> (String, bool) {
    privileged::client_as_nobody(Path::new(env!("CARGO_BIN_EXE_access_client")), d, id, n)
}

#[test]
fn hostile_one_uid_over_its_limit_is_refused_while_another_uid_records() {
    let test = "hostile_one_uid_over_its_limit_is_refused_while_another_uid_records";
    if let Err(why) = require_root(test) {
        eprintln!("skipping: {why}");
        return;
    }
    let _serial = serial();
    let d = start(
        DaemonOptions::default(),
        "max_connections_per_uid = 3",
        true,
    );
    wait_no_connections(&d);
    // Root holds its 3 (root is limited like every uid)...
    let mut held: Vec<RawConn> = (0..3).map(|_| RawConn::hello(&d.socket())).collect();
    // ...so its 4th is refused, naming the key, the limit and the uid.
    let (mut fourth, got) = hello_reply(&d);
    match got {
        Recv::Frame(Frame::Error {
            code: ErrorCode::Overloaded,
            message,
        }) => assert_contains(&message, &["limits.max_connections_per_uid (3)", "uid 0"]),
        other => panic!("expected OVERLOADED for root's 4th connection, got {other:?}"),
    }
    fourth.expect_closed();
    assert!(d.wait_log("limits.max_connections_per_uid reached", 1, TIMEOUT));
    assert!(counter(&d, "connections_refused") >= 1);
    // Another uid still connects and records meanwhile.
    let (out, ok) = client_as_nobody(&d, "other-uid", 30);
    assert!(ok, "{out}; log:\n{}", d.log());
    assert_eq!(out, "ok 30");
    let st = check_episode(&d.data_dir(), "other-uid", &data::channels()).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 30));
    // Root's connections are still served; when one closes, root may connect again.
    for c in &mut held {
        c.send(&Frame::Flush);
        c.expect_error(ErrorCode::NotOpen);
    }
    held.pop();
    wait_accepting(&d);
    d.record_ok("root-again", 20);
}

#[test]
fn hostile_paused_producers_with_an_open_episode_are_never_cut() {
    let _serial = serial();
    let d = start(
        DaemonOptions::default(),
        "handshake_timeout_ms = 400\nno_episode_timeout_ms = 400",
        false,
    );
    let small = data::small_channels();
    let ch = data::channels();
    // A socket producer and a shared-memory producer, each with an open episode.
    let mut sock = RawConn::hello(&d.socket());
    sock.open(&abuse::small("paused-socket"));
    sock.timesteps(&small, 0..50);
    sock.flush_until(50);
    let mut client = d.client("paused-shm");
    let mut ring = client
        .open_episode_with(
            data::open_spec("paused-shm", &ch, Durability::Ack),
            Transport::shm(),
        )
        .unwrap();
    data::push_steps(&mut ring, &ch, 50).unwrap();
    ring.flush().unwrap();
    // Meanwhile the deadlines do fire for connections without an episode.
    let mut silent = RawConn::connect(&d.socket());
    let mut idle = RawConn::hello(&d.socket());
    expect_cut(&mut silent, &["limits.handshake_timeout_ms"]);
    expect_cut(&mut idle, &["limits.no_episode_timeout_ms"]);
    // The producers pause for more than seven times both deadlines: not a word from the
    // daemon.
    sock.expect_silence(Duration::from_millis(3000));
    // Then carry on, and close: everything is there.
    sock.timesteps(&small, 50..100);
    sock.flush_until(100);
    sock.close(wshard_ingest_proto::Outcome::Completed, 100);
    data::push_steps(&mut ring, &ch, 50).unwrap();
    assert_eq!(ring.close(Outcome::Completed).unwrap().timesteps, 100);
    let st = check_episode(&d.data_dir(), "paused-socket", &small).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 100));
    let st = check_episode(&d.data_dir(), "paused-shm", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 100));
    assert_eq!(counter(&d, "connections_cut_handshake"), 1);
    assert_eq!(counter(&d, "connections_cut_no_episode"), 1);
    assert_eq!(counter(&d, "connections_cut_write"), 0);
}

#[test]
fn hostile_client_that_does_not_read_gets_a_timeout_error_and_keeps_what_was_durable() {
    let _serial = serial();
    let d = Daemon::start(DaemonOptions::default());
    let small = data::small_channels();
    let mut c = RawConn::hello(&d.socket());
    c.open(&abuse::small("deaf"));
    // TIMESTEP + FLUSH pairs, each worth a DURABLE, from another thread; this one does not
    // read. The daemon's writes block once the socket is full; after the write timeout it
    // gives up on the client (and the stream: the sender then fails).
    let mut writer = c.stream_clone();
    let sender = std::thread::spawn(move || {
        let flush = encode_to_vec(&Frame::Flush).unwrap();
        for seq in 0..100_000u64 {
            let mut pair = encode_to_vec(&timestep_frame(seq, &small)).unwrap();
            pair.extend_from_slice(&flush);
            if writer.write_all(&pair).is_err() {
                return seq;
            }
        }
        panic!("the daemon never stopped reading a client that does not read");
    });
    let m = wait_final(&d.data_dir(), "deaf", 3 * TIMEOUT).unwrap();
    let sent = sender.join().unwrap();
    // Everything the daemon sent is still readable: the DURABLEs, then the ERROR, then EOF.
    let mut frames = Vec::new();
    loop {
        match c.recv(TIMEOUT) {
            Recv::Frame(f) => frames.push(f),
            Recv::Closed => break,
            Recv::Timeout => panic!("neither a frame nor EOF after {} frames", frames.len()),
        }
    }
    let durable = c.durable();
    println!(
        "client sent {sent} steps without reading; read {} frames afterwards, DURABLE {durable}, \
         episode {:?} with {} timesteps",
        frames.len(),
        m.status,
        m.total_timesteps
    );
    match frames.last() {
        Some(Frame::Error {
            code: ErrorCode::Timeout,
            message,
        }) => assert_contains(
            message,
            &["did not read its socket", "5000 ms", "write timeout"],
        ),
        other => panic!("expected ERROR TIMEOUT last, got {other:?}"),
    }
    assert!(durable > 0, "no DURABLE before the daemon gave up");
    // Nothing acknowledged is lost: finalized interrupted with at least every DURABLE step.
    let st = check_episode(&d.data_dir(), "deaf", &data::small_channels()).unwrap();
    assert_eq!(st.status, "interrupted");
    assert!(
        st.timesteps >= durable,
        "{} timesteps kept, {durable} were DURABLE",
        st.timesteps
    );
    let reason = st.manifest.extra.get("reason").cloned().unwrap_or_default();
    assert!(
        reason.as_str().is_some_and(|r| r.contains("did not read")),
        "reason {reason}"
    );
    assert_eq!(counter(&d, "connections_cut_write"), 1);
    assert!(d.wait_log("the client has not read its socket", 1, TIMEOUT));
    d.record_ok("after-deaf", 50);
}

#[test]
fn hostile_sighup_applies_the_connection_limits_to_new_connections() {
    let _serial = serial();
    let d = start(
        DaemonOptions::default(),
        "max_connections_per_uid = 2",
        false,
    );
    wait_no_connections(&d);
    let mut held: Vec<RawConn> = (0..2).map(|_| RawConn::hello(&d.socket())).collect();
    match hello_reply(&d).1 {
        Recv::Frame(Frame::Error {
            code: ErrorCode::Overloaded,
            message,
        }) => assert_contains(&message, &["limits.max_connections_per_uid (2)"]),
        other => panic!("expected OVERLOADED for the 3rd connection, got {other:?}"),
    }
    // SIGHUP: a third connection per uid, and a short handshake deadline.
    let text = d.options().to_toml(&d.data_dir(), &d.socket()).replacen(
        "[limits]\n",
        "[limits]\nmax_connections_per_uid = 3\nhandshake_timeout_ms = 300\n",
        1,
    );
    d.write_config_text(&text);
    d.hangup();
    assert!(
        d.wait_log("configuration reloaded", 1, TIMEOUT),
        "{}",
        d.log()
    );
    assert!(
        d.log().contains("limits.max_connections_per_uid")
            && d.log().contains("limits.handshake_timeout_ms"),
        "the reload names the applied keys: {}",
        d.log()
    );
    let mut silent = RawConn::connect(&d.socket());
    expect_cut(&mut silent, &["300 ms", "limits.handshake_timeout_ms"]);
    wait_accepting(&d);
    // The connections accepted before the reload are still served.
    for c in &mut held {
        c.send(&Frame::Flush);
        c.expect_error(ErrorCode::NotOpen);
    }
}
