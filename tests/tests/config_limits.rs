//! `[limits]` keys doing what they say, against the real daemon: `max_episode_id_bytes` up
//! to 200 lets such ids through OPEN (and recovery after a crash); `max_episode_wire_bytes`
//! counts the timestep record bytes received (not bytes on disk); its old name
//! `max_episode_bytes` still works, with a warning from `--check-config` and at startup.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::process::Command;

use wshard_client::{ClientError, Durability, ErrorCode, Outcome};
use wshard_e2e::abuse::{assert_contains, small};
use wshard_e2e::check::check_episode;
use wshard_e2e::raw::{RawConn, Recv};
use wshard_e2e::shm::records;
use wshard_e2e::{bins, data, Daemon, DaemonOptions, TIMEOUT};
use wshard_ingest_proto::{Frame, TimestepBatch};

/// A daemon whose config has `lines` added to its `[limits]` table; not started.
fn with_limits(lines: &str) -> Daemon {
    let d = Daemon::new(DaemonOptions::default());
    let text = d.options().to_toml(&d.data_dir(), &d.socket()).replacen(
        "[limits]\n",
        &format!("[limits]\n{lines}\n"),
        1,
    );
    d.write_config_text(&text);
    d
}

fn started(mut d: Daemon) -> Daemon {
    d.spawn();
    d.wait_ready();
    d
}

#[test]
fn config_max_episode_id_bytes_above_128_takes_effect() {
    let d = started(with_limits("max_episode_id_bytes = 200"));
    let ch = data::small_channels();
    let id150 = "e".repeat(150);
    // Over a raw socket and with the Rust client.
    let mut c = RawConn::hello(&d.socket());
    c.open(&small(&id150));
    c.timesteps(&ch, 0..10);
    assert_eq!(c.flush_until(10), 10);
    let id200 = "f".repeat(200);
    let mut client = d.client("config/ids");
    let mut w = client
        .open_episode(data::open_spec(&id200, &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 5).unwrap();
    assert_eq!(w.close(Outcome::Completed).unwrap().timesteps, 5);
    // 201 bytes is past the limit.
    match client.open_episode(data::open_spec(&"g".repeat(201), &ch, Durability::Ack)) {
        Err(ClientError::Schema(e)) => {
            assert_contains(&e.to_string(), &["is 201 bytes (must be 1..=200 bytes)"]);
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a 201-byte id was accepted"),
    }
    // What was acknowledged under the long id survives a crash: recovery takes it too.
    let mut d = d;
    d.kill9();
    drop(c);
    d.spawn();
    d.wait_ready();
    let st = check_episode(&d.data_dir(), &id150, &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("recovered", 10));
    let st = check_episode(&d.data_dir(), &id200, &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 5));
    // With the default limit the same id is refused, naming the limit.
    let d = Daemon::start(DaemonOptions::default());
    let mut c = RawConn::hello(&d.socket());
    c.send(&Frame::Open(small(&id150)));
    let msg = c.expect_error(ErrorCode::BadEpisodeId);
    assert_contains(&msg, &["is 150 bytes", "1..=128"]);
}

/// Steps of 37 record bytes (21 + 16) in batches of 1000 until one is refused; returns the
/// steps accepted and the LIMIT message.
fn fill(d: &Daemon, id: &str) -> (u64, String) {
    let ch = data::small_channels();
    let mut c = RawConn::hello(&d.socket());
    c.open(&small(id));
    let mut seq = 0u64;
    loop {
        let n = 1000u64;
        let frame = Frame::TimestepBatch(
            TimestepBatch::from_records(1000, records(&ch, seq..seq + n)).unwrap(),
        );
        c.send(&frame);
        c.send(&Frame::Flush);
        // The FLUSH is answered either way: DURABLE covering the batch, or (after the
        // LIMIT refusing it) covering what came before.
        let mut refused = None;
        loop {
            match c.recv(TIMEOUT) {
                Recv::Frame(Frame::Error { code, message }) => {
                    assert_eq!(code, ErrorCode::Limit, "{message}");
                    refused = Some(message);
                }
                Recv::Frame(Frame::Durable { up_to_seq }) if up_to_seq >= seq + n => break,
                Recv::Frame(Frame::Durable { up_to_seq }) if refused.is_some() => {
                    assert_eq!(up_to_seq, seq);
                    break;
                }
                Recv::Frame(Frame::Durable { .. }) => {}
                other => panic!("{other:?}"),
            }
        }
        if let Some(message) = refused {
            c.close(Outcome::Completed, seq);
            return (seq, message);
        }
        seq += n;
    }
}

#[test]
fn config_max_episode_wire_bytes_counts_record_bytes_received() {
    let d = started(with_limits("max_episode_wire_bytes = 1048576"));
    let (accepted, msg) = fill(&d, "wire");
    // 1 MiB holds 28339 records of 37 bytes: batches of 1000 stop at 28000.
    assert_eq!(accepted, 28_000);
    assert_contains(
        &msg,
        &[
            "TIMESTEP seq 28000",
            "would reach 1073000 wire bytes",
            "limits.max_episode_wire_bytes is 1048576",
        ],
    );
    let st = check_episode(&d.data_dir(), "wire", &data::small_channels()).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 28_000));
    // On disk it is far less (compressed): the limit is not about the files.
    let on_disk: u64 = std::fs::read_dir(d.data_dir().join("wire"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(on_disk < 1_048_576, "{on_disk} bytes on disk");
}

#[test]
fn config_deprecated_max_episode_bytes_still_works_with_a_warning() {
    let d = with_limits("max_episode_bytes = 1048576");
    let out = Command::new(bins::wshardd())
        .arg("--check-config")
        .arg("--config")
        .arg(d.config_path())
        .env_remove("WSHARDD_CONFIG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.starts_with("config ok: "), "{stdout}");
    assert!(
        stdout.contains(
            "warning: limits.max_episode_bytes is deprecated and read as \
             limits.max_episode_wire_bytes"
        ),
        "{stdout}"
    );
    let d = started(d);
    assert!(
        d.wait_log("limits.max_episode_bytes is deprecated", 1, TIMEOUT),
        "{}",
        d.log()
    );
    let (accepted, msg) = fill(&d, "old-name");
    assert_eq!(accepted, 28_000);
    assert_contains(&msg, &["limits.max_episode_wire_bytes is 1048576"]);
    // Both names at once is an error naming both.
    let d = with_limits("max_episode_bytes = 1048576\nmax_episode_wire_bytes = 2097152");
    let out = Command::new(bins::wshardd())
        .arg("--check-config")
        .arg("--config")
        .arg(d.config_path())
        .env_remove("WSHARDD_CONFIG")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_contains(
        &String::from_utf8_lossy(&out.stderr),
        &[
            "limits.max_episode_bytes",
            "keep only limits.max_episode_wire_bytes",
        ],
    );
}
