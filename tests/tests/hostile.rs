//! Hostile clients against the real daemon: a slowloris beside a full-rate recorder, 500
//! simultaneous connections, an episode opened and never written, a flood of refused
//! batches, and headers announcing large frames followed by silence. Each checks that the
//! other clients are served, that memory stays bounded and that nothing accepted is lost.
//!
//! The tests take a file-wide lock and run one at a time: two of them compare throughput
//! or memory before and after, which a neighbouring test's daemon would disturb.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use nix::sys::resource::{getrlimit, setrlimit, Resource};
use wshard::episode::{DType, Lane};
use wshard_e2e::abuse::{self, assert_contains};
use wshard_e2e::check::{self, check_episode};
use wshard_e2e::raw::{timestep_frame, RawConn, Recv};
use wshard_e2e::{data, Daemon, DaemonOptions, Rng, TIMEOUT};
use wshard_ingest_proto::{
    encode_to_vec, push_step_record, ChannelSpec, ErrorCode, Frame, Outcome, TimestepBatch,
    PROTOCOL_VERSION,
};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

// ---------------------------------------------------------------------------------------------
// Helpers.

/// Raise this process's soft `RLIMIT_NOFILE` to at least `want` (the daemons it spawns
/// inherit it); panics when the hard limit does not allow it.
fn raise_nofile(want: u64) {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    if soft < want {
        assert!(
            hard >= want,
            "RLIMIT_NOFILE hard limit {hard} < {want}: cannot hold the connections"
        );
        setrlimit(Resource::RLIMIT_NOFILE, want, hard).unwrap();
    }
}

/// A line of `/proc/PID/status` as a number (`VmRSS` in KiB, `Threads`).
fn proc_status(d: &Daemon, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", d.pid())).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc/PID/status"))
}

fn rss_mib(d: &Daemon) -> f64 {
    proc_status(d, "VmRSS") as f64 / 1024.0
}

fn open_fds(d: &Daemon) -> usize {
    std::fs::read_dir(format!("/proc/{}/fd", d.pid()))
        .unwrap()
        .count()
}

/// Start a daemon whose `[limits]` table also holds `extra` (keys `DaemonOptions` lacks).
fn start_with_limits(opts: DaemonOptions, extra: &str) -> Daemon {
    let mut d = Daemon::new(opts);
    let text = d.options().to_toml(&d.data_dir(), &d.socket());
    let patched = text.replacen("[limits]\n", &format!("[limits]\n{extra}\n"), 1);
    assert_ne!(patched, text, "no [limits] table in the config");
    d.write_config_text(&patched);
    d.spawn();
    d.wait_ready();
    d
}

/// Wait until the daemon takes a new connection (slots free up as closed connections'
/// threads finish).
fn wait_accepting(d: &Daemon) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let mut c = RawConn::connect(&d.socket());
        let _ = c.send_bytes(&hello_bytes("probe"));
        match c.recv_skip_durable() {
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

/// Wait until the daemon's thread count holds still for 150 ms (connections that just
/// closed have finished).
fn settle(d: &Daemon) {
    let deadline = Instant::now() + TIMEOUT;
    let mut last = (proc_status(d, "Threads"), Instant::now());
    while last.1.elapsed() < Duration::from_millis(150) {
        assert!(Instant::now() < deadline, "daemon threads never settle");
        std::thread::sleep(Duration::from_millis(10));
        let now = proc_status(d, "Threads");
        if now != last.0 {
            last = (now, Instant::now());
        }
    }
}

fn hello_bytes(name: &str) -> Vec<u8> {
    encode_to_vec(&Frame::Hello {
        version: PROTOCOL_VERSION,
        client_name: name.into(),
    })
    .unwrap()
}

/// Nothing but `DURABLE`s for `quiet`: the connection is open and the daemon silent.
fn expect_quiet(c: &mut RawConn, quiet: Duration) {
    let until = Instant::now() + quiet;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match c.recv(left) {
            Recv::Timeout => return,
            Recv::Frame(Frame::Durable { .. }) => {}
            other => panic!("expected a quiet open connection, got {other:?}"),
        }
    }
}

/// Record `n` timesteps of the standard schema with the Rust client, in batches of 100,
/// as episode `id`; returns the time from the first push to the last `DURABLE`.
fn record_timed(d: &Daemon, id: &str, n: u64) -> Duration {
    let ch = data::channels();
    let mut client = d.client(id);
    let mut w = client
        .open_episode(data::open_spec(id, &ch, wshard_client::Durability::Ack))
        .unwrap();
    let t = Instant::now();
    let mut left = n;
    while left > 0 {
        let k = left.min(100);
        data::push_steps(&mut w, &ch, k).unwrap();
        left -= k;
    }
    w.flush().unwrap();
    let took = t.elapsed();
    assert_eq!(w.close(Outcome::Completed).unwrap().timesteps, n);
    took
}

/// A `TIMESTEP_BATCH` of generator steps with these seqs (in this order).
fn batch_frame(seqs: &[u64], channels: &[ChannelSpec]) -> Vec<u8> {
    let mut records = Vec::new();
    for &seq in seqs {
        push_step_record(
            &mut records,
            seq,
            data::t_ns(seq),
            data::reward(seq),
            data::done(seq),
            &[&data::packed_payload(seq, channels)],
        );
    }
    let count = u32::try_from(seqs.len()).unwrap();
    encode_to_vec(&Frame::TimestepBatch(
        TimestepBatch::from_records(count, records).unwrap(),
    ))
    .unwrap()
}

// ---------------------------------------------------------------------------------------------
// Slowloris.

/// One byte every 100-300 ms (seeded), from the first byte of the handshake on.
fn dribble(c: &mut RawConn, bytes: &[u8], rng: &mut Rng) {
    for b in bytes {
        c.send_bytes(std::slice::from_ref(b)).unwrap();
        std::thread::sleep(Duration::from_millis(rng.range(100, 300)));
    }
}

/// A slowloris client: HELLO and one TIMESTEP dribbled a byte at a time, then FLUSH and
/// CLOSE. The frames are processed once whole (there is no read timeout: the HELLO, at most
/// 3 s, is within limits.handshake_timeout_ms, and then an episode is open, which no
/// deadline cuts): DURABLE 1, ACCEPTED{CLOSE, 1}.
fn slowloris(socket: &Path, id: &str, seed: u64, done: &AtomicUsize) {
    let ch = vec![ChannelSpec::new("b", Lane::Signal, DType::U8, vec![])];
    let mut rng = Rng::new(seed);
    let mut c = RawConn::connect(socket);
    dribble(&mut c, &hello_bytes("s"), &mut rng);
    match c.recv_skip_durable() {
        Recv::Frame(Frame::HelloOk { .. }) => {}
        other => panic!("{id}: expected HELLO_OK after a dribbled HELLO, got {other:?}"),
    }
    c.open(&abuse::with_channels(id, ch.clone()));
    dribble(
        &mut c,
        &encode_to_vec(&timestep_frame(0, &ch)).unwrap(),
        &mut rng,
    );
    c.flush_until(1);
    c.close(Outcome::Completed, 1);
    done.fetch_add(1, Ordering::AcqRel);
}

#[test]
fn hostile_slowloris_beside_a_full_rate_client() {
    let _serial = serial();
    let d = Daemon::start(DaemonOptions::default());
    // About a second of work at this machine's pace (the slowloris clients take ~7 s).
    let warm = record_timed(&d, "warmup", 5_000);
    let n = ((5_000.0 / warm.as_secs_f64()) as u64).clamp(5_000, 200_000);
    let base = record_timed(&d, "baseline", n);
    let done = AtomicUsize::new(0);
    let loaded = std::thread::scope(|s| {
        let socket = d.socket();
        let mut slow = Vec::new();
        for k in 0..3u64 {
            let (socket, done) = (socket.clone(), &done);
            slow.push(s.spawn(move || slowloris(&socket, &format!("slow-{k}"), 40 + k, done)));
        }
        // Let them start dribbling, then record at full rate beside them.
        std::thread::sleep(Duration::from_millis(300));
        let loaded = record_timed(&d, "beside-slowloris", n);
        assert_eq!(
            done.load(Ordering::Acquire),
            0,
            "the slowloris clients finished before the measurement did"
        );
        for h in slow {
            h.join().unwrap();
        }
        loaded
    });
    let rate = |t: Duration| n as f64 / t.as_secs_f64();
    println!(
        "full-rate client, {n} steps: {:.0} steps/s alone, {:.0} steps/s beside 3 slowloris clients",
        rate(base),
        rate(loaded)
    );
    assert!(
        rate(loaded) >= 0.5 * rate(base),
        "throughput collapsed beside the slowloris clients: {:.0} -> {:.0} steps/s",
        rate(base),
        rate(loaded)
    );
    let ch = vec![ChannelSpec::new("b", Lane::Signal, DType::U8, vec![])];
    for k in 0..3 {
        let st = check_episode(&d.data_dir(), &format!("slow-{k}"), &ch).unwrap();
        assert_eq!((st.status.as_str(), st.timesteps), ("complete", 1));
    }
    for id in ["baseline", "beside-slowloris"] {
        let st = check_episode(&d.data_dir(), id, &data::channels()).unwrap();
        assert_eq!((st.status.as_str(), st.timesteps), ("complete", n));
    }
}

// ---------------------------------------------------------------------------------------------
// Many connections.

/// Connect `n` sockets at once, then HELLO on each; returns what each got first.
fn connect_many(d: &Daemon, n: usize) -> (Vec<RawConn>, Vec<Recv>) {
    let mut conns: Vec<RawConn> = (0..n).map(|_| RawConn::connect(&d.socket())).collect();
    let hello = hello_bytes("many");
    for c in &mut conns {
        // A refused connection may already be closed: the write may fail.
        let _ = c.send_bytes(&hello);
    }
    let first = conns.iter_mut().map(RawConn::recv_skip_durable).collect();
    (conns, first)
}

#[test]
fn hostile_500_connections() {
    let _serial = serial();
    raise_nofile(4096);
    // Default limits.max_connections (64): the 65th and later are refused and closed (the
    // per-uid limit raised to match: every connection here is this test's uid).
    let d = start_with_limits(DaemonOptions::default(), "max_connections_per_uid = 64");
    settle(&d); // the readiness probe's connection thread has ended
    let (fds0, threads0) = (open_fds(&d), proc_status(&d, "Threads"));
    let (mut conns, first) = connect_many(&d, 500);
    for (i, got) in first.iter().enumerate() {
        match got {
            Recv::Frame(Frame::HelloOk { .. }) => {
                assert!(i < 64, "connection {i} accepted beyond max_connections 64")
            }
            Recv::Frame(Frame::Error { code, message }) => {
                assert!(i >= 64, "connection {i} refused below the limit: {message}");
                assert_eq!(*code, ErrorCode::Overloaded, "{message}");
                assert_contains(message, &["max_connections (64)"]);
            }
            other => panic!("connection {i}: {other:?}"),
        }
    }
    for c in &mut conns[64..] {
        c.expect_closed();
    }
    // The 64 accepted ones are still served.
    for c in &mut conns[..64] {
        c.send(&Frame::Flush);
        c.expect_error(ErrorCode::NotOpen);
    }
    assert!(d.wait_log("limits.max_connections reached", 436, TIMEOUT));
    drop(conns);
    wait_accepting(&d);
    d.record_ok("after-500", 300);
    // Every connection's thread and descriptors are gone again.
    let deadline = Instant::now() + TIMEOUT;
    while open_fds(&d) > fds0 + 2 || proc_status(&d, "Threads") > threads0 + 2 {
        assert!(
            Instant::now() < deadline,
            "daemon still holds {} fds ({fds0} before) and {} threads ({threads0} before)",
            open_fds(&d),
            proc_status(&d, "Threads")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(d);

    // limits.max_connections = 600: 500 idle connections are all accepted, and a client
    // still records beside them.
    let d = start_with_limits(
        DaemonOptions::default(),
        "max_connections = 600\nmax_connections_per_uid = 600",
    );
    let (conns, first) = connect_many(&d, 500);
    for (i, got) in first.iter().enumerate() {
        assert!(
            matches!(got, Recv::Frame(Frame::HelloOk { .. })),
            "connection {i} with max_connections 600: {got:?}"
        );
    }
    let threads = proc_status(&d, "Threads");
    println!(
        "500 idle connections: daemon {threads} threads, {} fds, {:.1} MiB RSS",
        open_fds(&d),
        rss_mib(&d)
    );
    assert!(threads >= 500, "{threads} threads for 500 connections");
    d.record_ok("beside-500-idle", 300);
    drop(conns);
    wait_accepting(&d);
    d.record_ok("after-500-idle", 50);
}

// ---------------------------------------------------------------------------------------------
// An episode opened and never written.

#[test]
fn hostile_idle_episode_then_sigterm() {
    let _serial = serial();
    let mut d = Daemon::start(DaemonOptions::default());
    let dd = d.data_dir();
    let mut idle = RawConn::hello(&d.socket());
    idle.open(&abuse::small("idle"));
    // Another client records beside it.
    d.record_ok("busy", 500);
    expect_quiet(&mut idle, Duration::from_millis(200));
    d.terminate();
    let t = Instant::now();
    let status = d.wait_exit(TIMEOUT);
    let took = t.elapsed();
    println!("SIGTERM with an idle episode open: {status} after {took:?}");
    assert_eq!(status.code(), Some(0), "log:\n{}", d.log());
    assert!(took < Duration::from_secs(3), "exit took {took:?}");
    let msg = idle.expect_error(ErrorCode::ShuttingDown);
    assert_contains(&msg, &["idle", "interrupted"]);
    idle.expect_closed();
    // Finalized: interrupted, no timesteps, no chunk, nothing left behind.
    let st = check_episode(&dd, "idle", &data::small_channels()).unwrap();
    assert_eq!(
        (st.status.as_str(), st.timesteps, st.chunks),
        ("interrupted", 0, 0)
    );
    assert_eq!(
        st.manifest.extra.get("reason"),
        Some(&serde_json::json!("daemon shutdown"))
    );
    let st = check_episode(&dd, "busy", &data::channels()).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 500));
    for suffix in [".partial", ".wal", ".tmp"] {
        let left = check::episode_files_ending(&dd, suffix);
        assert!(left.is_empty(), "left: {left:?}");
    }
    check::assert_verify_ok(&dd);
    // A restart has nothing to recover and leaves the episode as it is.
    let before = std::fs::read(check::manifest_path(&dd, "idle")).unwrap();
    d.spawn();
    d.wait_ready();
    d.record_ok("after-restart", 20);
    assert_eq!(
        std::fs::read(check::manifest_path(&dd, "idle")).unwrap(),
        before
    );
}

// ---------------------------------------------------------------------------------------------
// A flood of refused batches.

#[test]
fn hostile_flood_of_bad_seqs() {
    let _serial = serial();
    let d = Daemon::start(DaemonOptions::default());
    let ch = data::small_channels();
    let mut c = RawConn::hello(&d.socket());
    c.open(&abuse::small("flood"));
    c.timesteps(&ch, 0..10);
    c.flush_until(10);
    // Every batch is refused with SEQUENCE: a gap, a repeat, a gap inside the batch.
    let gap: Vec<u64> = (1_000..1_050).collect();
    let repeat: Vec<u64> = (0..50).collect();
    let mut inner: Vec<u64> = (10..60).collect();
    inner[25] = 99;
    let frames = [
        batch_frame(&gap, &ch),
        batch_frame(&repeat, &ch),
        batch_frame(&inner, &ch),
    ];
    let mut burst = Vec::new();
    for k in 0..99 {
        burst.extend_from_slice(&frames[k % 3]);
    }
    let mut flood = |rounds: usize| {
        for _ in 0..rounds {
            c.send_bytes(&burst).unwrap();
            for k in 0..99 {
                let msg = c.expect_error(ErrorCode::Sequence);
                let want = match k % 3 {
                    0 => "seq 1000: expected seq 10",
                    1 => "seq 0: expected seq 10",
                    _ => "seq 99: expected seq 35",
                };
                assert_contains(&msg, &[want]);
            }
        }
    };
    flood(3); // warm up: buffers and allocator arenas reach their working size
    let rss0 = rss_mib(&d);
    let t = Instant::now();
    // 19,800 batches, 35 MiB: a leak of even 500 bytes per refused frame would show.
    flood(200);
    let rss1 = rss_mib(&d);
    println!(
        "19800 refused batches ({:.1} MiB) in {:?}: daemon RSS {rss0:.1} -> {rss1:.1} MiB",
        (200 * burst.len()) as f64 / (1 << 20) as f64,
        t.elapsed()
    );
    assert!(
        rss1 - rss0 < 8.0,
        "daemon RSS grew {rss0:.1} -> {rss1:.1} MiB over refused frames"
    );
    // The episode carries on where it was, and another client records meanwhile.
    d.record_ok("beside-flood", 100);
    c.timesteps(&ch, 10..20);
    c.flush_until(20);
    c.close(Outcome::Completed, 20);
    let st = check_episode(&d.data_dir(), "flood", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 20));
}

// ---------------------------------------------------------------------------------------------
// Large frames announced, then silence.

#[test]
fn hostile_large_frame_header_then_stall() {
    let _serial = serial();
    let d = Daemon::start(DaemonOptions::default()); // max_frame_bytes 64 MiB
    let ch = data::small_channels();
    d.record_ok("warmup", 100);
    // One connection will finish its frame: a valid batch of 100,000 steps (3.7 MB).
    let n = 100_000u64;
    let seqs: Vec<u64> = (0..n).collect();
    let big = batch_frame(&seqs, &ch);
    let announce_32mib = {
        let mut h = (32u32 << 20).to_le_bytes().to_vec();
        h.push(0x04);
        h.extend_from_slice(&1_000u32.to_le_bytes()); // count
        h
    };
    let mut stalled: Vec<RawConn> = (0..8)
        .map(|i| {
            let mut c = RawConn::hello(&d.socket());
            c.open(&abuse::small(&format!("stall-{i}")));
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let rss0 = rss_mib(&d);
    for (i, c) in stalled.iter_mut().enumerate() {
        if i == 0 {
            c.send_bytes(&big[..9]).unwrap();
        } else {
            c.send_bytes(&announce_32mib).unwrap();
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let rss1 = rss_mib(&d);
    println!(
        "7 x 32 MiB + 1 x 3.7 MB announced, then silence: daemon RSS {rss0:.1} -> {rss1:.1} MiB"
    );
    assert!(
        rss1 - rss0 < 16.0,
        "daemon RSS grew {rss0:.1} -> {rss1:.1} MiB for frames announced but not sent"
    );
    // Others are served meanwhile, promptly.
    let t = Instant::now();
    d.record_ok("beside-stalled", 500);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    // The stalled connections are kept (an open episode has no deadline), silent.
    for c in &mut stalled {
        expect_quiet(c, Duration::from_millis(50));
    }
    // The large frame, finished, is processed.
    stalled[0].send_bytes(&big[9..]).unwrap();
    stalled[0].flush_until(n);
    stalled[0].close(Outcome::Completed, n);
    let m = check::wait_final(&d.data_dir(), "stall-0", TIMEOUT).unwrap();
    assert_eq!(
        (m.status.as_deref(), m.total_timesteps),
        (Some("complete"), n)
    );
    // The others hang up mid-frame: interrupted, nothing recorded, daemon fine.
    drop(stalled);
    for i in 1..8 {
        let m = check::wait_final(&d.data_dir(), &format!("stall-{i}"), TIMEOUT).unwrap();
        assert_eq!(
            (m.status.as_deref(), m.total_timesteps),
            (Some("interrupted"), 0)
        );
    }
    d.record_ok("after-stall", 50);
}
