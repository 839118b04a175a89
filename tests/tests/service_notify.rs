//! wshardd under a service manager, imitated exactly: `sd_notify` messages read from a
//! `NOTIFY_SOCKET` datagram socket the test binds (READY after recovery, STATUS, WATCHDOG,
//! STOPPING before EXTEND_TIMEOUT_USEC), and socket activation with a listening socket
//! passed as fd 3 with `LISTEN_FDS` / `LISTEN_PID` / `LISTEN_FDNAMES` — by
//! `systemd-socket-activate` when installed and by a python3 helper doing what systemd does.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::fs::OpenOptions;
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use wshard_client::Durability;
use wshard_e2e::check::check_episode;
use wshard_e2e::{bins, data, Daemon, DaemonOptions, TIMEOUT};

/// A process the test started itself; SIGKILLed if still running when dropped.
struct Proc(Child);

impl Proc {
    fn spawn(mut cmd: Command, log: &Path) -> Self {
        let out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .unwrap();
        let err = out.try_clone().unwrap();
        cmd.stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err));
        Self(cmd.spawn().unwrap())
    }

    fn pid(&self) -> Pid {
        Pid::from_raw(i32::try_from(self.0.id()).unwrap())
    }

    fn signal(&self, sig: Signal) {
        kill(self.pid(), sig).unwrap();
    }

    fn try_exit(&mut self) -> Option<ExitStatus> {
        self.0.try_wait().unwrap()
    }

    fn wait_exit(&mut self, d: &Daemon) -> ExitStatus {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(s) = self.try_exit() {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "wshardd did not exit; log:\n{}",
                d.log()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// `program` without the variables of the test's own environment that would change what
/// the daemon does.
fn clean_command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new(program);
    for k in [
        "RUST_LOG",
        "WSHARDD_CONFIG",
        "NOTIFY_SOCKET",
        "WATCHDOG_USEC",
        "WATCHDOG_PID",
        "LISTEN_FDS",
        "LISTEN_PID",
        "LISTEN_FDNAMES",
    ] {
        c.env_remove(k);
    }
    c.env("NO_COLOR", "1");
    c
}

fn wshardd_cmd(d: &Daemon) -> Command {
    let mut c = clean_command(bins::wshardd());
    c.arg("--config").arg(d.config_path()).current_dir(d.root());
    c
}

/// The test's end of `NOTIFY_SOCKET`: every datagram, in order.
struct NotifySocket {
    sock: UnixDatagram,
    path: PathBuf,
    got: Vec<String>,
}

impl NotifySocket {
    fn bind(dir: &Path) -> Self {
        let path = dir.join("notify.sock");
        let sock = UnixDatagram::bind(&path).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        Self {
            sock,
            path,
            got: Vec::new(),
        }
    }

    /// Read until a message satisfies `pred` (returns its index) or the time runs out.
    fn wait_for(&mut self, what: &str, pred: impl Fn(&str) -> bool) -> usize {
        if let Some(i) = self.got.iter().position(|m| pred(m)) {
            return i;
        }
        let deadline = Instant::now() + TIMEOUT;
        let mut buf = vec![0u8; 4096];
        while Instant::now() < deadline {
            if let Ok(n) = self.sock.recv(&mut buf) {
                let m = String::from_utf8_lossy(&buf[..n]).into_owned();
                let hit = pred(&m);
                self.got.push(m);
                if hit {
                    return self.got.len() - 1;
                }
            }
        }
        panic!("no {what} within {TIMEOUT:?}; got {:?}", self.got);
    }

    /// Read whatever arrives for `d`.
    fn drain_for(&mut self, d: Duration) {
        let deadline = Instant::now() + d;
        let mut buf = vec![0u8; 4096];
        while Instant::now() < deadline {
            if let Ok(n) = self.sock.recv(&mut buf) {
                self.got
                    .push(String::from_utf8_lossy(&buf[..n]).into_owned());
            }
        }
    }
}

/// Leave an episode needing recovery: acknowledged timesteps, then SIGKILL.
fn crash_with_open_episode(d: &mut Daemon, id: &str, n: u64) {
    d.spawn();
    d.wait_ready();
    let ch = data::channels();
    let mut client = d.client("service-notify/crash");
    let mut w = client
        .open_episode(data::open_spec(id, &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, n).unwrap();
    w.flush().unwrap();
    d.kill9();
    drop(w);
}

#[test]
fn service_notify_ready_after_recovery_then_status_watchdog_and_stop_sequence() {
    let mut d = Daemon::new(DaemonOptions::default());
    crash_with_open_episode(&mut d, "crashed", 50);
    let mut notify = NotifySocket::bind(d.root());
    let mut cmd = wshardd_cmd(&d);
    cmd.env("NOTIFY_SOCKET", &notify.path)
        .env("WATCHDOG_USEC", "400000");
    let mut p = Proc::spawn(cmd, &d.log_path());

    let ready = notify.wait_for("READY=1", |m| m.lines().any(|l| l == "READY=1"));
    // READY comes after recovery and with the socket accepting.
    assert!(d.log().contains("recovery:"), "log:\n{}", d.log());
    assert!(UnixStream::connect(d.socket()).is_ok());
    assert!(
        notify.got[ready]
            .lines()
            .any(|l| l.starts_with("STATUS=recording: 0 open episodes")),
        "{:?}",
        notify.got[ready]
    );
    assert_eq!(notify.got[0], "STATUS=recovering", "{:?}", notify.got);
    let st = check_episode(&d.data_dir(), "crashed", &data::channels()).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("recovered", 50));

    // Pings every 200 ms while every writer makes progress, an episode open or not.
    let ch = data::channels();
    let mut client = d.client("service-notify/open");
    let mut w = client
        .open_episode(data::open_spec("open-at-stop", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 30).unwrap();
    w.flush().unwrap();
    let before = notify.got.iter().filter(|m| *m == "WATCHDOG=1").count();
    notify.drain_for(Duration::from_millis(1200));
    let pings = notify.got.iter().filter(|m| *m == "WATCHDOG=1").count() - before;
    assert!(
        pings >= 3,
        "{pings} pings in 1.2 s at 200 ms: {:?}",
        notify.got
    );
    // The periodic status line (every 2 s) shows the open episode.
    notify.wait_for("STATUS with the open episode", |m| {
        m.starts_with("STATUS=recording: 1 open episodes")
    });

    // SIGTERM with the episode open: STOPPING=1, then EXTEND_TIMEOUT_USEC, exit 0.
    p.signal(Signal::SIGTERM);
    let stopping = notify.wait_for("STOPPING=1", |m| m.lines().any(|l| l == "STOPPING=1"));
    let extend = notify.wait_for("EXTEND_TIMEOUT_USEC", |m| {
        m.starts_with("EXTEND_TIMEOUT_USEC=")
    });
    assert!(stopping < extend, "{:?}", notify.got);
    assert_eq!(notify.got[extend], "EXTEND_TIMEOUT_USEC=5000000");
    assert!(notify.got[stopping].contains("STATUS=stopping: finalizing"));
    let status = p.wait_exit(&d);
    assert_eq!(status.code(), Some(0), "log:\n{}", d.log());
    drop(w);
    let st = check_episode(&d.data_dir(), "open-at-stop", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("interrupted", 30));
    let readies = notify
        .got
        .iter()
        .filter(|m| m.starts_with("READY=1"))
        .count();
    assert_eq!(readies, 1, "{:?}", notify.got);
}

#[test]
fn service_notify_abstract_socket_and_no_watchdog_without_usec() {
    use std::os::linux::net::SocketAddrExt;
    let d = Daemon::new(DaemonOptions::default());
    let name = format!("wshard-e2e-notify-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let sock = UnixDatagram::bind_addr(&addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let mut notify = NotifySocket {
        sock,
        path: PathBuf::new(),
        got: Vec::new(),
    };
    let mut cmd = wshardd_cmd(&d);
    cmd.env("NOTIFY_SOCKET", format!("@{name}"));
    let mut p = Proc::spawn(cmd, &d.log_path());
    notify.wait_for("READY=1", |m| m.starts_with("READY=1"));
    notify.drain_for(Duration::from_millis(500));
    assert!(
        !notify.got.iter().any(|m| m == "WATCHDOG=1"),
        "pings without WATCHDOG_USEC: {:?}",
        notify.got
    );
    p.signal(Signal::SIGTERM);
    notify.wait_for("STOPPING=1", |m| m.starts_with("STOPPING=1"));
    assert_eq!(p.wait_exit(&d).code(), Some(0), "log:\n{}", d.log());
}

// ---------------------------------------------------------------- socket activation

/// Does what systemd does for a socket unit: makes fd 3 the listening socket (or, with
/// `kind` = `devnull`, /dev/null), sets LISTEN_FDS=1, LISTEN_PID (its own pid, which exec
/// keeps, or `pid` when not `self`) and LISTEN_FDNAMES, then execs the daemon.
const PY_ACTIVATE: &str = r#"
import os, socket, sys
kind, path, pid, names = sys.argv[1:5]
argv = sys.argv[5:]
if kind == "socket":
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(path):
        os.unlink(path)
    s.bind(path)
    s.listen(16)
    fd = s.fileno()
else:
    fd = os.open("/dev/null", os.O_RDONLY)
if fd != 3:
    os.dup2(fd, 3, inheritable=True)
else:
    os.set_inheritable(3, True)
env = dict(os.environ)
env["LISTEN_FDS"] = "1"
env["LISTEN_PID"] = str(os.getpid()) if pid == "self" else pid
if names:
    env["LISTEN_FDNAMES"] = names
os.execve(argv[0], argv, env)
"#;

fn python3() -> Option<PathBuf> {
    let ok = Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Some(PathBuf::from("python3"))
    } else {
        println!("skipped: python3 not found");
        None
    }
}

fn py_activate(d: &Daemon, kind: &str, socket: &Path, pid: &str, names: &str) -> Proc {
    let py = python3().unwrap_or_else(|| PathBuf::from("python3"));
    let mut cmd = clean_command(py);
    cmd.arg("-c")
        .arg(PY_ACTIVATE)
        .arg(kind)
        .arg(socket)
        .arg(pid)
        .arg(names)
        .arg(bins::wshardd())
        .arg("--config")
        .arg(d.config_path())
        .current_dir(d.root());
    Proc::spawn(cmd, &d.log_path())
}

fn wait_log(d: &Daemon, needle: &str) {
    assert!(
        d.wait_log(needle, 1, TIMEOUT),
        "no `{needle}` in the log:\n{}",
        d.log()
    );
}

/// Record through the passed socket, stop with SIGTERM, and check that the socket file
/// (the service manager's) is still there.
fn record_then_stop_keeps_socket(d: &Daemon, p: &mut Proc) {
    d.record_ok("activated", 120);
    p.signal(Signal::SIGTERM);
    assert_eq!(p.wait_exit(d).code(), Some(0), "log:\n{}", d.log());
    assert!(
        d.socket().exists(),
        "wshardd removed a socket file it did not bind"
    );
    // The control socket was not passed: the daemon bound it and removes it.
    assert!(d.log().contains("wshardd stopped"));
}

#[test]
fn service_activation_python_helper_passes_fd3_like_systemd() {
    if python3().is_none() {
        return;
    }
    let d = Daemon::new(DaemonOptions::default());
    let mut p = py_activate(&d, "socket", &d.socket(), "self", "ingest");
    wait_log(&d, "ingest socket passed by the service manager");
    assert!(d.log().contains("fd=3"), "log:\n{}", d.log());
    record_then_stop_keeps_socket(&d, &mut p);
}

#[test]
fn service_activation_unnamed_fd_is_the_ingest_socket() {
    if python3().is_none() {
        return;
    }
    let d = Daemon::new(DaemonOptions::default());
    let mut p = py_activate(&d, "socket", &d.socket(), "self", "");
    wait_log(&d, "ingest socket passed by the service manager");
    record_then_stop_keeps_socket(&d, &mut p);
}

#[test]
fn service_activation_with_systemd_socket_activate() {
    let tool = Path::new("/usr/bin/systemd-socket-activate");
    if !tool.exists() {
        println!(
            "skipped: {} not found (Debian package systemd)",
            tool.display()
        );
        return;
    }
    let d = Daemon::new(DaemonOptions::default());
    let mut cmd = clean_command(tool);
    cmd.arg("--listen")
        .arg(d.socket())
        .arg("--fdname=ingest")
        .arg("-E")
        .arg("NO_COLOR=1")
        .arg(bins::wshardd())
        .arg("--config")
        .arg(d.config_path())
        .current_dir(d.root());
    let mut p = Proc::spawn(cmd, &d.log_path());
    // It binds, then listens, and execs the daemon on the first connection. The socket
    // file appears at bind, before listen: wait until a connection is taken (it is the
    // one that starts the daemon, which reads its end and closes it), then record.
    let deadline = Instant::now() + TIMEOUT;
    while UnixStream::connect(d.socket()).is_err() {
        assert!(p.try_exit().is_none(), "log:\n{}", d.log());
        assert!(
            Instant::now() < deadline,
            "socket not listening; log:\n{}",
            d.log()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    record_then_stop_keeps_socket(&d, &mut p);
    assert!(
        d.log()
            .contains("ingest socket passed by the service manager"),
        "log:\n{}",
        d.log()
    );
}

#[test]
fn service_activation_for_another_pid_is_ignored() {
    if python3().is_none() {
        return;
    }
    let d = Daemon::new(DaemonOptions::default());
    let other = d.root().join("other.sock");
    let mut p = py_activate(&d, "socket", &other, "1", "ingest");
    wait_log(&d, "LISTEN_PID=1 is not this process");
    // Logged before recovery: wait for the socket the daemon binds itself.
    wait_log(&d, "wshardd ready");
    // It bound socket.path itself, and removes it on exit.
    d.record_ok("bound-itself", 10);
    p.signal(Signal::SIGTERM);
    assert_eq!(p.wait_exit(&d).code(), Some(0), "log:\n{}", d.log());
    assert!(
        !d.socket().exists(),
        "the daemon's own socket was left behind"
    );
}

#[test]
fn service_activation_non_socket_fd_is_a_clear_error() {
    if python3().is_none() {
        return;
    }
    let d = Daemon::new(DaemonOptions::default());
    let mut p = py_activate(&d, "devnull", &d.socket(), "self", "ingest");
    let status = p.wait_exit(&d);
    assert_eq!(status.code(), Some(1), "log:\n{}", d.log());
    assert!(
        d.log().contains(
            "socket activation: fd 3 (`ingest`) is not a usable ingest socket: not a socket"
        ),
        "log:\n{}",
        d.log()
    );
}
