//! [`Daemon`]: one real `wshardd` process in its own temporary directory.
//!
//! ```text
//! <tempdir>/wshardd.toml   config written from DaemonOptions
//! <tempdir>/d.sock         the ingest socket (short: Unix socket paths are limited)
//! <tempdir>/wshardd.log    stdout and stderr of every start, appended
//! <tempdir>/<data_subdir>  data_dir (default "data")
//! ```

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tempfile::TempDir;
use wshard_client::Client;

use crate::bins;

/// The config keys the tests vary; everything else keeps its default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DaemonOptions {
    /// `rotation.max_timesteps`.
    pub max_timesteps: u64,
    /// `rotation.max_bytes` (at least 1 MiB).
    pub max_bytes: u64,
    /// `rotation.max_seconds`.
    pub max_seconds: u64,
    /// `fsync.policy`: `always`, `interval` or `never`.
    pub fsync_policy: String,
    /// `fsync.interval_ms`.
    pub fsync_interval_ms: u64,
    /// `limits.max_channels`.
    pub max_channels: u32,
    /// `limits.max_frame_bytes`.
    pub max_frame_bytes: u32,
    /// `data_dir`, relative to the temporary directory (may have several components).
    pub data_subdir: String,
    /// `log.level`.
    pub log_level: String,
    /// `queues.max_pending_frames`.
    pub max_pending_frames: u32,
    /// `socket.mode`, an octal string.
    pub socket_mode: String,
    /// `disk.low_watermark_free_bytes` (small by default, so tests pass on a machine with
    /// little free disk).
    pub disk_low_watermark: u64,
    /// `disk.high_watermark_free_bytes`.
    pub disk_high_watermark: u64,
    /// `disk.check_interval_ms`.
    pub disk_check_interval_ms: u64,
    /// Appended to the config verbatim: tables `DaemonOptions` does not write (e.g.
    /// `[access]`, `[control]`).
    pub extra_toml: String,
}

impl Default for DaemonOptions {
    fn default() -> Self {
        Self {
            max_timesteps: 100_000,
            max_bytes: 256 << 20,
            max_seconds: 60,
            fsync_policy: "interval".into(),
            fsync_interval_ms: 10,
            max_channels: 256,
            max_frame_bytes: 64 << 20,
            data_subdir: "data".into(),
            log_level: "info".into(),
            max_pending_frames: 64,
            socket_mode: "0600".into(),
            disk_low_watermark: 64 << 20,
            disk_high_watermark: 32 << 20,
            disk_check_interval_ms: 200,
            extra_toml: String::new(),
        }
    }
}

impl DaemonOptions {
    /// Chunks of at most `n` timesteps.
    #[must_use]
    pub fn rotation(mut self, n: u64) -> Self {
        self.max_timesteps = n;
        self
    }

    /// `fsync.policy` and `fsync.interval_ms`.
    #[must_use]
    pub fn fsync(mut self, policy: &str, interval_ms: u64) -> Self {
        self.fsync_policy = policy.into();
        self.fsync_interval_ms = interval_ms;
        self
    }

    /// `queues.max_pending_frames`: frames queued between a connection and its writer.
    #[must_use]
    pub fn queue(mut self, frames: u32) -> Self {
        self.max_pending_frames = frames;
        self
    }

    /// The config file text.
    #[must_use]
    pub fn to_toml(&self, data_dir: &Path, socket: &Path) -> String {
        let q = |p: &Path| format!("{:?}", p.display().to_string());
        format!(
            "# written by wshard-e2e\n\
             data_dir = {data}\n\n\
             [socket]\npath = {sock}\nmode = {smode:?}\n\n\
             [limits]\nmax_frame_bytes = {mfb}\nmax_channels = {mch}\n\n\
             [rotation]\nmax_timesteps = {mts}\nmax_bytes = {mb}\nmax_seconds = {ms}\n\n\
             [fsync]\npolicy = {pol:?}\ninterval_ms = {ims}\n\n\
             [queues]\nmax_pending_frames = {mpf}\n\n\
             [log]\nlevel = {lvl:?}\n\n\
             [disk]\nlow_watermark_free_bytes = {dlow}\nhigh_watermark_free_bytes = {dhigh}\n\
             check_interval_ms = {dint}\n\n\
             {extra}",
            smode = self.socket_mode,
            dlow = self.disk_low_watermark,
            dhigh = self.disk_high_watermark,
            dint = self.disk_check_interval_ms,
            extra = self.extra_toml,
            data = q(data_dir),
            sock = q(socket),
            mfb = self.max_frame_bytes,
            mch = self.max_channels,
            mts = self.max_timesteps,
            mb = self.max_bytes,
            ms = self.max_seconds,
            pol = self.fsync_policy,
            ims = self.fsync_interval_ms,
            lvl = self.log_level,
            mpf = self.max_pending_frames,
        )
    }
}

/// A `wshardd` process (or its files, while it is stopped). Dropping it kills the process
/// (SIGKILL) and removes the directory, unless `WSHARD_E2E_KEEP` is set and the test failed
/// (or `WSHARD_E2E_KEEP=always`).
#[derive(Debug)]
pub struct Daemon {
    dir: TempDir,
    opts: DaemonOptions,
    child: Option<Child>,
    starts: u32,
}

fn make_tempdir() -> TempDir {
    let dir = tempfile::Builder::new()
        .prefix("wse2e-")
        .tempdir()
        .expect("cannot create a temporary directory");
    if bins::socket_path_fits(&dir.path().join("d.sock")) {
        return dir;
    }
    // $TMPDIR is too deep for a socket path: fall back to /tmp.
    tempfile::Builder::new()
        .prefix("wse2e-")
        .tempdir_in("/tmp")
        .expect("cannot create a temporary directory in /tmp")
}

impl Daemon {
    /// Write the config and start the daemon; returns once the socket accepts connections.
    #[must_use]
    pub fn start(opts: DaemonOptions) -> Self {
        let mut d = Self::new(opts);
        d.spawn();
        d.wait_ready();
        d
    }

    /// Create the directory and the config without starting anything.
    #[must_use]
    pub fn new(opts: DaemonOptions) -> Self {
        let d = Self {
            dir: make_tempdir(),
            opts,
            child: None,
            starts: 0,
        };
        assert!(
            bins::socket_path_fits(&d.socket()),
            "socket path too long: {}",
            d.socket().display()
        );
        d.write_config();
        d
    }

    /// The temporary directory holding everything.
    #[must_use]
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `data_dir`.
    #[must_use]
    pub fn data_dir(&self) -> PathBuf {
        self.root().join(&self.opts.data_subdir)
    }

    /// The ingest socket.
    #[must_use]
    pub fn socket(&self) -> PathBuf {
        self.root().join("d.sock")
    }

    /// The config file.
    #[must_use]
    pub fn config_path(&self) -> PathBuf {
        self.root().join("wshardd.toml")
    }

    /// The log file (stdout and stderr of every start).
    #[must_use]
    pub fn log_path(&self) -> PathBuf {
        self.root().join("wshardd.log")
    }

    /// The options the config was last written from.
    #[must_use]
    pub fn options(&self) -> &DaemonOptions {
        &self.opts
    }

    /// Rewrite the config file (takes effect on SIGHUP or restart).
    pub fn set_options(&mut self, opts: DaemonOptions) {
        self.opts = opts;
        self.write_config();
    }

    /// Write `text` as the config file verbatim (e.g. an invalid one).
    pub fn write_config_text(&self, text: &str) {
        std::fs::write(self.config_path(), text).expect("cannot write the config file");
    }

    fn write_config(&self) {
        let text = self.opts.to_toml(&self.data_dir(), &self.socket());
        self.write_config_text(&text);
    }

    /// How many times the process was started.
    #[must_use]
    pub fn starts(&self) -> u32 {
        self.starts
    }

    /// Start the process without waiting for it to be ready.
    pub fn spawn(&mut self) {
        assert!(self.child.is_none(), "wshardd is already running");
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("cannot open the daemon log");
        self.starts += 1;
        let _ = writeln!(log, "===== wshard-e2e: start #{} =====", self.starts);
        let out = log.try_clone().expect("cannot clone the log file handle");
        let child = Command::new(bins::wshardd())
            .arg("--config")
            .arg(self.config_path())
            .env_remove("RUST_LOG")
            .env_remove("WSHARDD_CONFIG")
            .env("NO_COLOR", "1")
            .current_dir(self.root())
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("cannot spawn wshardd");
        self.child = Some(child);
    }

    /// Wait (at most 10 s) until the socket accepts connections; panics with the log if the
    /// process exits or the time runs out.
    pub fn wait_ready(&mut self) {
        let deadline = Instant::now() + crate::TIMEOUT;
        loop {
            if let Some(status) = self.try_exit() {
                panic!(
                    "wshardd exited ({status}) before accepting connections; log:\n{}",
                    self.log()
                );
            }
            if UnixStream::connect(self.socket()).is_ok() {
                return;
            }
            if Instant::now() >= deadline {
                let _ = self.kill9();
                panic!(
                    "wshardd did not accept connections on {} within {:?}; log:\n{}",
                    self.socket().display(),
                    crate::TIMEOUT,
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The process id of the running daemon.
    #[must_use]
    pub fn pid(&self) -> Pid {
        let child = self.child.as_ref().expect("wshardd is not running");
        Pid::from_raw(i32::try_from(child.id()).expect("pid fits i32"))
    }

    /// Send `sig` to the running daemon.
    pub fn signal(&self, sig: Signal) {
        kill(self.pid(), sig).unwrap_or_else(|e| panic!("kill({sig}) failed: {e}"));
    }

    /// SIGKILL, then reap the process. Returns its exit status (a no-op when not running).
    pub fn kill9(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        let pid = Pid::from_raw(i32::try_from(child.id()).expect("pid fits i32"));
        let _ = kill(pid, Signal::SIGKILL);
        Some(child.wait().expect("cannot reap wshardd"))
    }

    /// True while `sig` is pending for the daemon: sent but not yet delivered to a handler
    /// (Linux: the `SigPnd` / `ShdPnd` masks of `/proc/PID/status`).
    #[must_use]
    pub fn signal_pending(&self, sig: Signal) -> bool {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        let bit = 1u64 << ((sig as i32) - 1);
        status
            .lines()
            .filter_map(|l| {
                l.strip_prefix("SigPnd:")
                    .or_else(|| l.strip_prefix("ShdPnd:"))
            })
            .any(|mask| u64::from_str_radix(mask.trim(), 16).is_ok_and(|m| m & bit != 0))
    }

    /// Wait (at most 10 s) until `sig` is no longer pending: its handler has run or runs.
    pub fn wait_delivered(&self, sig: Signal) {
        let deadline = Instant::now() + crate::TIMEOUT;
        while self.signal_pending(sig) {
            assert!(Instant::now() < deadline, "{sig} still pending after 10 s");
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    /// True when one of the daemon's threads is blocked writing to a socket whose receive
    /// buffer is full (Linux: the `wchan` of its tasks in `/proc`).
    #[must_use]
    pub fn blocked_sending(&self) -> bool {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", self.pid())) else {
            return false;
        };
        tasks.flatten().any(|t| {
            std::fs::read_to_string(t.path().join("wchan"))
                .is_ok_and(|w| w.contains("sock_alloc_send") || w.contains("unix_stream_sendmsg"))
        })
    }

    /// SIGTERM (graceful shutdown); does not wait.
    pub fn terminate(&self) {
        self.signal(Signal::SIGTERM);
    }

    /// SIGHUP (reload the config); does not wait.
    pub fn hangup(&self) {
        self.signal(Signal::SIGHUP);
    }

    /// The exit status if the process has exited (it is then reaped and forgotten).
    pub fn try_exit(&mut self) -> Option<ExitStatus> {
        let child = self.child.as_mut()?;
        match child.try_wait() {
            Ok(Some(status)) => {
                self.child = None;
                Some(status)
            }
            Ok(None) => None,
            Err(e) => panic!("waiting for wshardd failed: {e}"),
        }
    }

    /// True while the process runs.
    pub fn is_running(&mut self) -> bool {
        self.child.is_some() && self.try_exit().is_none()
    }

    /// Wait at most `timeout` for the process to exit; on timeout kill it and panic with
    /// the log.
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if self.child.is_none() {
                panic!("wait_exit: wshardd is not running");
            }
            if let Some(status) = self.try_exit() {
                return status;
            }
            if Instant::now() >= deadline {
                let _ = self.kill9();
                panic!(
                    "wshardd did not exit within {timeout:?}; log:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Kill the daemon if it runs (SIGKILL), start it again, wait until it is ready
    /// (recovery runs before the socket is bound).
    pub fn restart(&mut self) {
        let _ = self.kill9();
        self.spawn();
        self.wait_ready();
    }

    /// Everything the daemon logged so far.
    #[must_use]
    pub fn log(&self) -> String {
        std::fs::read(self.log_path())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// Wait (at most `timeout`) for `needle` to appear in the log at least `count` times.
    #[must_use]
    pub fn wait_log(&self, needle: &str, count: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.log().matches(needle).count() >= count {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Prove the daemon serves: record `n` timesteps of the standard schema as episode `id`
    /// with the Rust client, close it, and check it on disk (complete, bit-exact).
    pub fn record_ok(&self, id: &str, n: u64) {
        let ch = crate::data::channels();
        let mut client = self.client(&format!("wshard-e2e/{id}"));
        let mut w = client
            .open_episode(crate::data::open_spec(
                id,
                &ch,
                wshard_client::Durability::Ack,
            ))
            .unwrap_or_else(|e| panic!("OPEN {id}: {e}; log:\n{}", self.log()));
        crate::data::push_steps(&mut w, &ch, n).unwrap_or_else(|e| panic!("push to {id}: {e}"));
        let summary = w
            .close(wshard_client::Outcome::Completed)
            .unwrap_or_else(|e| panic!("CLOSE {id}: {e}"));
        assert_eq!(summary.timesteps, n, "{id}: ACCEPTED{{CLOSE}}");
        let st = crate::check::check_episode(&self.data_dir(), id, &ch)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((st.status.as_str(), st.timesteps), ("complete", n), "{id}");
    }

    /// A Rust client connected to this daemon.
    #[must_use]
    pub fn client(&self, name: &str) -> Client {
        Client::connect(self.socket(), name).unwrap_or_else(|e| {
            panic!(
                "client {name}: cannot connect to {}: {e}; log:\n{}",
                self.socket().display(),
                self.log()
            )
        })
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.kill9();
        let keep = std::env::var("WSHARD_E2E_KEEP").ok();
        if keep.as_deref() == Some("always") || (keep.is_some() && std::thread::panicking()) {
            self.dir.disable_cleanup(true);
            eprintln!("wshard-e2e: kept {}", self.root().display());
        }
    }
}

/// `true` when `status` is death by SIGKILL.
#[must_use]
pub fn killed_by_sigkill(status: &ExitStatus) -> bool {
    status.signal() == Some(Signal::SIGKILL as i32)
}
