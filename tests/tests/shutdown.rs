//! Signals: SIGTERM finalizes open episodes as `interrupted` and exits 0; a second SIGTERM
//! exits at once and recovery covers it; SIGHUP reloads the config without stopping.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use wshard_client::{ClientError, Durability, ErrorCode, Transport};
use wshard_e2e::check::{self, check_episode};
use wshard_e2e::raw::{timestep_frame, RawConn};
use wshard_e2e::workload::{self, Workload};
use wshard_e2e::{data, Daemon, DaemonOptions, TIMEOUT};
use wshard_ingest_proto::encode;

fn endless(prefix: &str, seed: u64) -> Workload {
    Workload {
        prefix: prefix.into(),
        durability: Durability::Ack,
        episode_len: (u64::MAX / 2, u64::MAX / 2),
        batch: (1, 40),
        sync_every: 4,
        seed,
        transport: Transport::Socket,
    }
}

/// Wait (bounded) until `n` chunk files exist under the data dir.
fn wait_chunks(d: &Daemon, n: usize) {
    let deadline = Instant::now() + TIMEOUT;
    while check::episode_files_ending(&d.data_dir(), ".wshard")
        .iter()
        .filter(|p| p.to_string_lossy().contains("_chunk_"))
        .count()
        < n
    {
        assert!(
            Instant::now() < deadline,
            "no {n} chunks within {TIMEOUT:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn assert_no_leftovers(d: &Daemon) {
    for suffix in [".partial", ".wal", ".tmp"] {
        let left = check::episode_files_ending(&d.data_dir(), suffix);
        assert!(left.is_empty(), "left: {left:?}");
    }
}

#[test]
fn shutdown_sigterm_finalizes_interrupted() {
    let mut d = Daemon::start(DaemonOptions::default().rotation(200));
    let dd = d.data_dir();
    let stop = AtomicBool::new(false);
    let (logs, ended) = std::thread::scope(|s| {
        let socket = d.socket();
        let stop = &stop;
        let h = s.spawn(move || workload::run(&socket, &endless("term", 7), stop));
        wait_chunks(&d, 2);
        d.terminate();
        let t = Instant::now();
        let status = d.wait_exit(TIMEOUT);
        assert_eq!(
            status.code(),
            Some(0),
            "exit after SIGTERM; log:\n{}",
            d.log()
        );
        println!("SIGTERM: exited 0 after {:?}", t.elapsed());
        h.join().unwrap()
    });
    // The client learns it: SHUTTING_DOWN, or the connection closing under it.
    match &ended.error {
        Some(ClientError::Server { code, message }) => {
            assert_eq!(*code, ErrorCode::ShuttingDown, "{message}");
            assert!(message.contains("term-e0"), "{message}");
        }
        Some(ClientError::Closed | ClientError::Io(_)) => {}
        other => panic!("client ended with {other:?}"),
    }
    assert!(d.log().contains("wshardd stopped"));
    assert!(!d.socket().exists(), "socket file left behind");
    let [log] = logs.as_slice() else {
        panic!("expected one episode, got {logs:?}")
    };
    assert!(log.acked > 0);
    let st = workload::check_logged(&dd, log, &["interrupted"])
        .unwrap()
        .unwrap();
    assert_eq!(
        st.manifest.extra.get("reason"),
        Some(&serde_json::json!("daemon shutdown"))
    );
    assert_no_leftovers(&d);
    check::assert_verify_ok(&dd);
    // A restart finds nothing to recover and leaves the episode alone.
    let before = std::fs::read(check::manifest_path(&dd, &log.id)).unwrap();
    d.restart();
    assert!(!d.log().contains("recovery:"), "log:\n{}", d.log());
    assert_eq!(
        std::fs::read(check::manifest_path(&dd, &log.id)).unwrap(),
        before
    );
    d.record_ok("after-restart", 100);
}

#[test]
fn shutdown_second_sigterm_exits_at_once() {
    // One big open chunk per episode: finalizing it on SIGTERM takes a while.
    let opts = DaemonOptions {
        max_bytes: 1 << 30,
        max_seconds: 86_400,
        ..DaemonOptions::default().rotation(1_000_000)
    };
    let mut d = Daemon::start(opts);
    let dd = d.data_dir();
    let ch = data::channels();
    let mut clients = Vec::new();
    let mut acked = Vec::new();
    for (id, n) in [("slow-a", 12_000u64), ("slow-b", 12_000)] {
        let mut client = d.client(id);
        let mut w = client
            .open_episode(data::open_spec(id, &ch, Durability::Ack))
            .unwrap();
        while w.next_seq() < n {
            let k = 1000.min(n - w.next_seq());
            data::push_steps(&mut w, &ch, k).unwrap();
        }
        acked.push((id, w.flush().unwrap()));
        std::mem::forget(w); // keep the episode open: no CLOSE
        clients.push(client); // and no EOF
    }
    d.terminate();
    // Two signals sent before the first is delivered would merge into one.
    d.wait_delivered(Signal::SIGTERM);
    let t = Instant::now();
    d.terminate();
    let status = d.wait_exit(Duration::from_secs(3));
    let immediate = !d.log().contains("wshardd stopped");
    println!(
        "second SIGTERM: exit {:?} after {:?}, graceful shutdown {}",
        status.code(),
        t.elapsed(),
        if immediate {
            "cut short"
        } else {
            "had finished"
        }
    );
    assert!(
        immediate,
        "the graceful shutdown finished before the second SIGTERM"
    );
    assert_eq!(status.code(), Some(1));
    drop(clients);
    // Recovery covers what the cut-short shutdown left.
    d.spawn();
    d.wait_ready();
    for (id, n) in acked {
        let st = check_episode(&dd, id, &ch).unwrap();
        assert!(
            ["recovered", "interrupted"].contains(&st.status.as_str()),
            "{id}: {}",
            st.status
        );
        assert_eq!(st.timesteps, n, "{id}");
    }
    assert_no_leftovers(&d);
    check::assert_verify_ok(&dd);
    d.record_ok("after-double-term", 100);
}

#[test]
fn shutdown_with_a_client_that_never_reads() {
    let mut d = Daemon::start(DaemonOptions::default());
    let ch = data::small_channels();
    let mut c = RawConn::hello(&d.socket());
    c.open(&data::open_spec("deaf", &ch, Durability::Ack));
    c.timesteps(&ch, 0..100);
    assert_eq!(c.flush_until(100), 100);
    // Then only refused frames (a wrong seq): one ERROR each, never read by the client.
    let mut flood = Vec::new();
    for _ in 0..20_000 {
        encode(&timestep_frame(7, &ch), &mut flood).unwrap();
    }
    std::thread::scope(|s| {
        s.spawn(move || {
            let _ = c.send_bytes(&flood); // fails once the daemon drops the connection
        });
        let deadline = Instant::now() + TIMEOUT;
        while !d.blocked_sending() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        println!(
            "daemon blocked writing to the client: {}",
            d.blocked_sending()
        );
        d.terminate();
        let t = Instant::now();
        let status = d.wait_exit(Duration::from_secs(20));
        println!(
            "SIGTERM with a deaf client: exit {:?} after {:?}",
            status.code(),
            t.elapsed()
        );
        assert_eq!(status.code(), Some(0));
    });
    let st = check_episode(&d.data_dir(), "deaf", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("interrupted", 100));
    d.spawn();
    d.wait_ready();
    d.record_ok("after-deaf", 50);
}

#[test]
fn shutdown_sighup_reloads_config() {
    let opts = DaemonOptions::default().rotation(1000);
    let mut d = Daemon::start(opts.clone());
    let dd = d.data_dir();
    d.record_ok("before-hup", 300);
    assert_eq!(
        check::read_manifest(&dd, "before-hup")
            .unwrap()
            .chunks
            .len(),
        1
    );

    // Rotation is applied on SIGHUP; limits.max_channels needs a restart (ignored).
    d.set_options(DaemonOptions {
        max_channels: 4,
        ..opts.clone().rotation(100)
    });
    d.hangup();
    assert!(
        d.wait_log("configuration reloaded", 1, TIMEOUT),
        "no reload logged; log:\n{}",
        d.log()
    );
    let log = d.log();
    let line = log
        .lines()
        .find(|l| l.contains("configuration reloaded"))
        .unwrap();
    assert!(line.contains("rotation.max_timesteps"), "{line}");
    assert!(line.contains("limits.max_channels"), "{line}");
    assert!(d.is_running());
    // New episodes chunk at 100; five channels still allowed (max_channels not applied).
    d.record_ok("after-hup", 300);
    assert_eq!(
        check::read_manifest(&dd, "after-hup").unwrap().chunks.len(),
        3
    );

    // An invalid config is refused and nothing changes.
    d.write_config_text("this is = not [ a config");
    d.hangup();
    assert!(
        d.wait_log("config not reloaded", 1, TIMEOUT),
        "no refusal logged; log:\n{}",
        d.log()
    );
    assert!(d.is_running());
    d.record_ok("after-bad-hup", 250);
    assert_eq!(
        check::read_manifest(&dd, "after-bad-hup")
            .unwrap()
            .chunks
            .len(),
        3
    );

    d.terminate();
    assert_eq!(d.wait_exit(TIMEOUT).code(), Some(0));
    check::assert_verify_ok(&dd);
}
