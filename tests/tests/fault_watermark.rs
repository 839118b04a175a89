//! The disk watermarks against the real `wshardd`, on a small tmpfs filled with a ballast
//! file (root with `CAP_SYS_ADMIN` only; otherwise each test prints why and skips):
//!
//! - below `disk.low_watermark_free_bytes`: OPEN is refused with `DISK_LOW` naming the
//!   free bytes, an episode already recording goes on, and once the ballast is gone a new
//!   OPEN succeeds (recording resumes);
//! - below `disk.high_watermark_free_bytes`: the recording episode is finalized
//!   `interrupted` with a reason naming the disk, its client gets `ERROR{STOPPED}` saying
//!   why, every timestep acknowledged DURABLE is on disk, `wshard verify` is clean, and
//!   the daemon keeps serving.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::time::{Duration, Instant};

use wshard_client::{ClientError, Durability, Outcome};
use wshard_e2e::check::{check_episode, read_manifest, run_verify};
use wshard_e2e::privileged::{require_root, Tmpfs};
use wshard_e2e::{data, Daemon, DaemonOptions, TIMEOUT};
use wshard_ingest_proto::ErrorCode;

const MIB: u64 = 1 << 20;

/// A daemon whose `data_dir` is on a fresh tmpfs of `size` at `<root>/fs`, with the given
/// watermarks; `Err` = skip.
fn start_on_tmpfs(test: &str, size: &str, low: u64, high: u64) -> Result<(Daemon, Tmpfs), String> {
    require_root(test)?;
    let opts = DaemonOptions {
        data_subdir: "fs/data".into(),
        disk_low_watermark: low,
        disk_high_watermark: high,
        disk_check_interval_ms: 20,
        ..DaemonOptions::default()
    }
    .fsync("always", 10);
    let mut d = Daemon::new(opts);
    let fs = Tmpfs::mount(&d.root().join("fs"), size)
        .map_err(|why| format!("{test}: cannot mount a tmpfs: {why}"))?;
    d.spawn();
    d.wait_ready();
    Ok((d, fs))
}

/// The number after `prefix` in `text` (e.g. the free bytes in a message).
fn number_before(text: &str, suffix: &str) -> Option<u64> {
    let end = text.find(suffix)?;
    let head = text[..end].trim_end();
    let start = head
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    head[start..].parse().ok()
}

#[test]
fn fault_watermark_low_refuses_open_and_resumes() {
    let (d, fs) = match start_on_tmpfs(
        "fault_watermark_low_refuses_open_and_resumes",
        "64m",
        24 * MIB,
        8 * MIB,
    ) {
        Ok(x) => x,
        Err(why) => {
            eprintln!("skipping: {why}");
            return;
        }
    };
    let ch = data::channels();
    d.record_ok("before", 100);
    // An episode recording while free space falls below low (but not high) goes on.
    let mut client = d.client("ongoing");
    let mut w = client
        .open_episode(data::open_spec("ongoing", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 50).unwrap();
    w.flush().unwrap();

    fs.fill_until_free("ballast", 16 * MIB);
    for attempt in 0..3 {
        let mut c = d.client("refused");
        match c.open_episode(data::open_spec("refused", &ch, Durability::Ack)) {
            Err(ClientError::Server { code, message }) => {
                assert_eq!(code, ErrorCode::DiskLow, "{message}");
                let free = number_before(&message, "bytes free").unwrap_or(u64::MAX);
                assert!(free < 24 * MIB, "attempt {attempt}: {message}");
                assert!(
                    message.contains("disk.low_watermark_free_bytes"),
                    "{message}"
                );
            }
            Err(e) => panic!("expected DISK_LOW, got {e}"),
            Ok(_) => panic!("OPEN accepted with {} bytes free", fs.free_bytes()),
        }
        std::thread::sleep(Duration::from_millis(60));
    }
    data::push_steps(&mut w, &ch, 50).unwrap();
    assert_eq!(w.close(Outcome::Completed).unwrap().timesteps, 100);
    let st = check_episode(&d.data_dir(), "ongoing", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 100));
    // One warning per crossing, not one per check.
    assert_eq!(
        d.log()
            .matches("below disk.low_watermark_free_bytes (")
            .count(),
        1,
        "{}",
        d.log()
    );

    std::fs::remove_file(fs.dir().join("ballast")).unwrap();
    d.record_ok("after", 100);
    assert!(d.wait_log("recording resumes", 1, TIMEOUT), "{}", d.log());
    assert!(!d.data_dir().join("refused").exists());
}

#[test]
fn fault_watermark_high_interrupts_the_recording_episode() {
    let (mut d, fs) = match start_on_tmpfs(
        "fault_watermark_high_interrupts_the_recording_episode",
        "64m",
        24 * MIB,
        16 * MIB,
    ) {
        Ok(x) => x,
        Err(why) => {
            eprintln!("skipping: {why}");
            return;
        }
    };
    let ch = data::channels();
    let mut client = d.client("victim");
    let mut w = client
        .open_episode(data::open_spec("victim", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 200).unwrap();
    w.flush().unwrap();
    // The disk fills up from elsewhere, past both watermarks, while the client records.
    let err = std::thread::scope(|s| {
        let filler = s.spawn(|| fs.fill_until_free("ballast", 10 * MIB));
        let t = Instant::now();
        let err = loop {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "never stopped; log:\n{}",
                d.log()
            );
            match data::push_steps(&mut w, &ch, 20).and_then(|_| w.flush()) {
                Ok(_) => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => break e,
            }
        };
        filler.join().unwrap();
        err
    });
    let acked = w.durable_seq();
    let message = match err {
        ClientError::Server { code, message } => {
            assert_eq!(code, ErrorCode::Stopped, "{message}");
            message
        }
        other => panic!("expected ERROR{{STOPPED}}, got {other}; log:\n{}", d.log()),
    };
    eprintln!("stopped after {acked} DURABLE timesteps: {message}");
    assert!(message.contains("interrupted"), "{message}");
    assert!(
        message.contains("disk.high_watermark_free_bytes"),
        "{message}"
    );
    assert!(message.contains("bytes free"), "{message}");
    drop(w);
    drop(client);

    // Finalized safely: interrupted for the disk, everything acknowledged there, verified.
    let m = read_manifest(&d.data_dir(), "victim").unwrap();
    assert_eq!(m.status.as_deref(), Some("interrupted"));
    let reason = m
        .extra
        .get("reason")
        .and_then(|r| r.as_str())
        .unwrap_or_default();
    assert!(reason.starts_with("disk: "), "{reason}");
    let st = check_episode(&d.data_dir(), "victim", &ch).unwrap();
    assert!(
        st.timesteps >= acked,
        "{} on disk, {acked} acknowledged",
        st.timesteps
    );
    let v = run_verify(&[d.data_dir().join("victim")]);
    assert!(v.ok(), "{v}");
    assert!(d.wait_log("below disk.high_watermark_free_bytes", 1, TIMEOUT));

    // Still refusing while the ballast is there; serving again once it is gone.
    assert!(d.is_running(), "{}", d.log());
    let mut c = d.client("too-soon");
    match c.open_episode(data::open_spec("too-soon", &ch, Durability::Ack)) {
        Err(ClientError::Server { code, .. }) => assert_eq!(code, ErrorCode::DiskLow),
        other => panic!("expected DISK_LOW, got {:?}", other.map(|_| ())),
    }
    drop(c);
    std::fs::remove_file(fs.dir().join("ballast")).unwrap();
    d.record_ok("after", 100);
    assert!(d.is_running());
}
