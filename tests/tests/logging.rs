//! Where `wshardd`'s log goes: plain text without escape bytes on a pipe or file, and
//! journald's native protocol (one datagram per event, structured fields) when stderr is the
//! journal stream systemd connected.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use wshard_e2e::{bins, Daemon, DaemonOptions, TIMEOUT};

/// Start `wshardd` on `d`'s config with stderr (and stdout) going to `log`, with `env` set
/// and `NO_COLOR` unset (the harness sets it; these tests are about what happens without it).
fn spawn_with_stderr(d: &Daemon, log: &Path, env: &[(&str, String)]) -> Child {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("open the log");
    let out = file.try_clone().expect("clone the log handle");
    let mut cmd = Command::new(bins::wshardd());
    cmd.arg("--config")
        .arg(d.config_path())
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
        .env_remove("JOURNAL_STREAM")
        .env_remove("WSHARDD_CONFIG")
        .current_dir(d.root())
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(file));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().expect("spawn wshardd");
    let deadline = Instant::now() + TIMEOUT;
    while UnixStream::connect(d.socket()).is_err() {
        assert!(Instant::now() < deadline, "wshardd did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

/// SIGTERM and wait: every open episode is finalized and the log is complete.
fn stop(mut child: Child) {
    let pid = i32::try_from(child.id()).expect("pid fits i32");
    kill(Pid::from_raw(pid), Signal::SIGTERM).expect("SIGTERM");
    let status = child.wait().expect("wait for wshardd");
    assert!(status.success(), "wshardd exited with {status}");
}

#[test]
fn log_to_a_file_has_no_escape_bytes() {
    let d = Daemon::new(DaemonOptions::default());
    let log = d.root().join("plain.log");
    let child = spawn_with_stderr(&d, &log, &[]);
    d.record_ok("plain", 50);
    stop(child);
    let mut bytes = Vec::new();
    File::open(&log)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .expect("read the log");
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("episode opened"), "log:\n{text}");
    assert!(text.contains("episode closed"), "log:\n{text}");
    let esc = bytes.iter().position(|&b| b == 0x1b);
    assert_eq!(
        esc, None,
        "an escape byte in a log written to a file:\n{text}"
    );
}

/// journald's native socket, served by the test: the path is fixed by the protocol.
const JOURNAL_SOCKET: &str = "/run/systemd/journal/socket";

/// The test's stand-in for journald's socket, removed on drop.
struct JournalSocket {
    sock: UnixDatagram,
    path: PathBuf,
    made_dir: Option<PathBuf>,
}

impl JournalSocket {
    /// `None` (the test is skipped) unless root on a machine whose journald socket is absent:
    /// a running journald must not be disturbed.
    fn bind() -> Option<Self> {
        let path = PathBuf::from(JOURNAL_SOCKET);
        if !nix::unistd::geteuid().is_root() || path.exists() {
            return None;
        }
        let dir = path.parent()?.to_path_buf();
        let made_dir = (!dir.exists()).then(|| dir.clone());
        std::fs::create_dir_all(&dir).ok()?;
        let sock = UnixDatagram::bind(&path).ok()?;
        sock.set_read_timeout(Some(Duration::from_millis(200)))
            .ok()?;
        Some(Self {
            sock,
            path,
            made_dir,
        })
    }

    /// Every datagram received until none comes for 200 ms.
    fn drain(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(n) = self.sock.recv(&mut buf) {
            out.push(buf[..n].to_vec());
        }
        out
    }
}

impl Drop for JournalSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        if let Some(dir) = &self.made_dir {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// The fields of one native-protocol entry: `KEY=value\n`, or `KEY\n` + u64 LE length +
/// value + `\n` (the form tracing-journald uses for most fields).
fn fields(entry: &[u8]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = entry;
    while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
        let line = &rest[..nl];
        if let Some(eq) = line.iter().position(|&b| b == b'=') {
            let key = String::from_utf8_lossy(&line[..eq]).into_owned();
            out.push((key, String::from_utf8_lossy(&line[eq + 1..]).into_owned()));
            rest = &rest[nl + 1..];
            continue;
        }
        let key = String::from_utf8_lossy(line).into_owned();
        let body = &rest[nl + 1..];
        let Some(len) = body.get(..8).and_then(|b| <[u8; 8]>::try_from(b).ok()) else {
            break;
        };
        let Ok(len) = usize::try_from(u64::from_le_bytes(len)) else {
            break;
        };
        let Some(value) = body.get(8..8 + len) else {
            break;
        };
        out.push((key, String::from_utf8_lossy(value).into_owned()));
        rest = body.get(8 + len + 1..).unwrap_or_default();
    }
    out
}

/// The entry whose MESSAGE is `message`, as fields.
fn entry(entries: &[Vec<u8>], message: &str) -> Vec<(String, String)> {
    entries
        .iter()
        .map(|e| fields(e))
        .find(|f| f.iter().any(|(k, v)| k == "MESSAGE" && v == message))
        .unwrap_or_else(|| {
            let all: Vec<_> = entries.iter().map(|e| fields(e)).collect();
            panic!("no `{message}` entry in {all:#?}")
        })
}

fn assert_fields(entry: &[(String, String)], want: &[(&str, &str)]) {
    for (k, v) in want {
        assert!(
            entry.iter().any(|(ek, ev)| ek == k && ev == v),
            "{k}={v} missing in {entry:?}"
        );
    }
}

#[test]
fn log_under_systemd_goes_to_the_journal_with_episode_fields() {
    let Some(journal) = JournalSocket::bind() else {
        eprintln!("skipped: needs root and no running journald ({JOURNAL_SOCKET} absent)");
        return;
    };
    let d = Daemon::new(DaemonOptions::default());
    let log = d.root().join("stream.log");
    File::create(&log).expect("create the stream file");
    let meta = std::fs::metadata(&log).expect("stat the stream file");
    let stream = format!("{}:{}", meta.dev(), meta.ino());
    let child = spawn_with_stderr(&d, &log, &[("JOURNAL_STREAM", stream)]);
    d.record_ok("demo", 20);
    stop(child);
    let entries = journal.drain();
    let opened = entry(&entries, "episode opened");
    assert_fields(
        &opened,
        &[
            ("EPISODE", "demo"),
            ("PRIORITY", "5"),
            ("SYSLOG_IDENTIFIER", "wshardd"),
            ("DURABILITY", "ack"),
        ],
    );
    assert!(opened.iter().any(|(k, _)| k == "PEER"), "{opened:?}");
    let closed = entry(&entries, "episode closed");
    assert_fields(
        &closed,
        &[
            ("EPISODE", "demo"),
            ("STATUS", "complete"),
            ("TIMESTEPS", "20"),
        ],
    );
    // Native logging writes nothing to the stream, so nothing is logged twice.
    let text = std::fs::read_to_string(&log).expect("read the stream file");
    assert!(!text.contains("episode opened"), "logged twice:\n{text}");
}
