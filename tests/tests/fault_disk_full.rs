//! A real disk-full against the real `wshardd`: the client records until the storage
//! refuses a write; it gets `ERROR{STORAGE}`, what it was told is DURABLE is on disk
//! (after a restart's recovery), and the daemon keeps serving other episodes.
//!
//! Two mechanisms:
//! - `fault_disk_full_tmpfs_enospc`: `data_dir` on a 4 MiB tmpfs mounted by the test
//!   (`ENOSPC`). Needs root with `CAP_SYS_ADMIN`; otherwise the test prints why and skips.
//! - `fault_disk_full_file_size_limit_efbig`: the daemon runs under `RLIMIT_FSIZE` with
//!   `SIGXFSZ` ignored (`sh -c "trap '' XFSZ; ulimit -f N; exec wshardd"`), so a file
//!   that grows past the limit gets `EFBIG`. Works anywhere, no privileges.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use wshard_client::{ClientError, Durability, Outcome};
use wshard_e2e::check::check_episode;
use wshard_e2e::{bins, data, Daemon, DaemonOptions};
use wshard_ingest_proto::ErrorCode;

/// How the daemon's files are made to fail.
#[derive(Clone, Debug)]
enum Limit {
    /// `data_dir` lives on a tmpfs of this size mounted at this directory.
    Tmpfs { mount: PathBuf },
    /// `RLIMIT_FSIZE` of this many 512-byte blocks (dash) for the daemon.
    FileSize { blocks: u64 },
}

/// The daemon process started by this test, and the mount: killed and unmounted on drop
/// (declared after the `Daemon`, so it drops first, before the directory is removed).
struct Proc {
    child: Option<Child>,
    mount: Option<PathBuf>,
}

impl Proc {
    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop();
        if let Some(m) = self.mount.take() {
            let ok = Command::new("umount")
                .arg(&m)
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                let _ = Command::new("umount").arg("-l").arg(&m).status();
            }
        }
    }
}

/// Try to mount a tmpfs of `size` at `dir`; `Err(reason)` when this machine does not allow it.
fn mount_tmpfs(dir: &Path, size: &str) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let out = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(dir)
        .output()
        .map_err(|e| format!("cannot run mount: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "mount -t tmpfs failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Start `wshardd` with `d`'s config under `limit`; wait until it accepts connections.
fn spawn(d: &Daemon, limit: &Limit) -> Child {
    let mut log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(d.log_path())
        .unwrap();
    let _ = writeln!(log, "===== fault_disk_full: start ({limit:?}) =====");
    let out = log.try_clone().unwrap();
    let mut cmd = match limit {
        Limit::Tmpfs { .. } => {
            let mut c = Command::new(bins::wshardd());
            c.arg("--config").arg(d.config_path());
            c
        }
        Limit::FileSize { blocks } => {
            // SIG_IGN survives exec: the write then fails with EFBIG instead of killing.
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg(format!(
                    "trap '' XFSZ; ulimit -f {blocks} && exec \"$0\" --config \"$1\""
                ))
                .arg(bins::wshardd())
                .arg(d.config_path());
            c
        }
    };
    let mut child = cmd
        .env_remove("RUST_LOG")
        .env_remove("WSHARDD_CONFIG")
        .env("NO_COLOR", "1")
        .current_dir(d.root())
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(log))
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            panic!("wshardd exited ({st}) before accepting; log:\n{}", d.log());
        }
        if UnixStream::connect(d.socket()).is_ok() {
            return child;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("wshardd did not start; log:\n{}", d.log());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Record episode `id` (class `ack`) in batches of 100 with a FLUSH after each, until the
/// daemon refuses. Returns the highest DURABLE and the error.
fn record_until_refused(d: &Daemon, id: &str) -> (u64, String) {
    let ch = data::channels();
    let mut client = d.client(&format!("disk-full/{id}"));
    let mut w = client
        .open_episode(data::open_spec(id, &ch, Durability::Ack))
        .unwrap();
    let t = Instant::now();
    let err = loop {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "the storage never filled up; log:\n{}",
            d.log()
        );
        match data::push_steps(&mut w, &ch, 100).and_then(|_| w.flush()) {
            Ok(_) => {}
            Err(e) => break e,
        }
    };
    let acked = w.durable_seq();
    let message = match err {
        ClientError::Server { code, message } => {
            assert_eq!(code, ErrorCode::Storage, "{message}");
            message
        }
        other => panic!("expected ERROR{{STORAGE}}, got {other}; log:\n{}", d.log()),
    };
    // CLOSE of a failed episode is refused (or reports the failure); it must not hang.
    let _ = w.close(Outcome::Completed);
    (acked, message)
}

/// Start a daemon under `limit`, with `setup` run on its directory first (mount, ballast;
/// `Err` = skip), fill the storage, check, `free` room, check it serves, restart, check.
fn run(
    limit: &Limit,
    os_error: &str,
    data_subdir: &str,
    rotation: u64,
    setup: impl FnOnce(&Daemon) -> Result<(), String>,
    free: impl FnOnce(&Daemon),
) {
    // Watermarks off (refuse below 1 byte, stop below none): this is the last line of
    // defence, a disk that fills up anyway (another writer, watermarks set too low).
    // What the watermarks do is tested in fault_watermark.rs.
    let opts = DaemonOptions {
        data_subdir: data_subdir.into(),
        disk_low_watermark: 1,
        disk_high_watermark: 0,
        ..DaemonOptions::default()
    }
    .rotation(rotation)
    .fsync("always", 10);
    let d = Daemon::new(opts);
    let mut p = Proc {
        child: None,
        mount: None,
    };
    if let Limit::Tmpfs { mount } = limit {
        p.mount = Some(d.root().join(mount));
    }
    if let Err(why) = setup(&d) {
        p.mount = None;
        eprintln!("skipping: {why}");
        return;
    }
    p.child = Some(spawn(&d, limit));

    let (acked, message) = record_until_refused(&d, "full");
    eprintln!("disk full ({limit:?}): {acked} timesteps acknowledged, then: {message}");
    assert!(
        acked > 0,
        "nothing was acknowledged before the storage filled up"
    );
    assert!(
        message.contains(os_error),
        "ERROR{{STORAGE}} should carry the OS error {os_error:?}: {message}"
    );
    assert!(
        message.contains("/full/"),
        "the message names the episode's file: {message}"
    );
    assert!(p.running(), "the daemon died; log:\n{}", d.log());

    // It keeps serving: another episode, once there is room again.
    free(&d);
    d.record_ok("after", 300);
    assert!(p.running());

    // What was acknowledged is on disk: kill, restart (recovery runs first), check.
    p.stop();
    p.child = Some(spawn(&d, limit));
    let st = check_episode(&d.data_dir(), "full", &data::channels())
        .unwrap_or_else(|e| panic!("{e}; log:\n{}", d.log()));
    assert!(
        st.timesteps >= acked,
        "{} timesteps on disk, {acked} acknowledged; log:\n{}",
        st.timesteps,
        d.log()
    );
    assert_eq!(st.status, "recovered");
    let after = check_episode(&d.data_dir(), "after", &data::channels()).unwrap();
    assert_eq!((after.status.as_str(), after.timesteps), ("complete", 300));
    d.record_ok("after-restart", 100);
    p.stop();
}

#[test]
fn fault_disk_full_tmpfs_enospc() {
    // data_dir = <root>/fs/data on a 4 MiB tmpfs mounted at <root>/fs, with 1.5 MiB of
    // ballast beside it, removed to make room after the failure.
    run(
        &Limit::Tmpfs {
            mount: PathBuf::from("fs"),
        },
        "No space left on device",
        "fs/data",
        2_000,
        |d| {
            let m = d.root().join("fs");
            mount_tmpfs(&m, "4m").map_err(|why| {
                format!("fault_disk_full_tmpfs_enospc: cannot mount a tmpfs: {why}")
            })?;
            std::fs::write(m.join("ballast"), vec![0xA5u8; 1536 << 10]).map_err(|e| e.to_string())
        },
        |d| std::fs::remove_file(d.root().join("fs/ballast")).unwrap(),
    );
}

#[test]
fn fault_disk_full_file_size_limit_efbig() {
    // Each file may grow to 1 MiB (2048 blocks of 512 bytes): the journal of a chunk of
    // 100 000 timesteps gets there first. A new episode's files start small again.
    run(
        &Limit::FileSize { blocks: 2_048 },
        "File too large",
        "data",
        100_000,
        |_| Ok(()),
        |_| {},
    );
}
