//! Producer processes of a multi-stream episode: the Rust `multirate_producer` binary and
//! the Python client's `multirate_workload.py` run as a script (see
//! [`crate::multirate_workload`] for their command line and output). Their stdout is read
//! line by line on a thread, so the test waits for a line (`joined`, `paused`, ...) as an
//! event, never with a sleep.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::bins;
use crate::multirate_workload::Kind;

/// Which client records a stream, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Client {
    /// The Rust client (`multirate_producer`), over the socket.
    Rust,
    /// The Python client over the socket.
    PythonSocket,
    /// The Python client over a shared-memory ring.
    PythonShm,
}

impl Client {
    /// The client name the process gives in HELLO (the index's `producer`).
    #[must_use]
    pub fn hello_name(self) -> &'static str {
        match self {
            Client::Rust => "e2e-rust-producer",
            Client::PythonSocket => "e2e-python-socket-producer",
            Client::PythonShm => "e2e-python-shm-producer",
        }
    }
}

/// The repository root (the tests crate's parent).
#[must_use]
pub fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

/// The Python producer script.
#[must_use]
pub fn python_workload() -> PathBuf {
    repo_root().join("ingest-adapters/python/tests/multirate_workload.py")
}

/// What a producer process printed: its stdout lines and its stderr.
#[derive(Debug, Default)]
pub struct Output {
    pub lines: Vec<String>,
    pub stderr: String,
}

impl Output {
    /// `(seq, step)` of every `event SEQ STEP` line.
    ///
    /// # Panics
    /// A malformed line.
    #[must_use]
    pub fn events(&self) -> Vec<(u64, u64)> {
        self.lines
            .iter()
            .filter_map(|l| l.strip_prefix("event "))
            .map(|rest| {
                let mut it = rest.split(' ').map(|v| v.parse::<u64>().expect(rest));
                (it.next().expect(rest), it.next().expect(rest))
            })
            .collect()
    }

    /// `(timesteps, durable)` of the `closed` line.
    #[must_use]
    pub fn closed(&self) -> Option<(u64, u64)> {
        let rest = self.lines.iter().find_map(|l| l.strip_prefix("closed "))?;
        let (a, b) = rest.split_once(' ')?;
        Some((a.parse().ok()?, b.parse().ok()?))
    }
}

/// One running producer process.
#[derive(Debug)]
pub struct Producer {
    pub kind: Kind,
    pub client: Client,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    seen: Vec<String>,
    stderr: Option<JoinHandle<String>>,
}

/// Arguments of one producer run.
#[derive(Clone, Debug)]
pub struct Run<'a> {
    pub socket: &'a Path,
    pub episode: &'a str,
    pub kind: Kind,
    pub steps: u64,
    pub t0: i64,
    pub pause_at: Option<u64>,
}

impl Producer {
    /// Start `client` recording `run`.
    ///
    /// # Panics
    /// The process cannot be started (for Python: `python3` is missing).
    #[must_use]
    pub fn spawn(client: Client, run: &Run<'_>) -> Self {
        let mut cmd = match client {
            Client::Rust => Command::new(bins::binary("multirate_producer")),
            Client::PythonSocket | Client::PythonShm => {
                let mut c = Command::new("python3");
                c.arg(python_workload())
                    .env("PYTHONPATH", repo_root().join("ingest-adapters/python/src"));
                c
            }
        };
        cmd.arg(run.socket)
            .arg(run.episode)
            .arg(run.kind.name())
            .arg(run.steps.to_string())
            .arg(run.t0.to_string());
        if client == Client::PythonShm {
            cmd.arg("--shm");
        }
        if let Some(k) = run.pause_at {
            cmd.args(["--pause-at", &k.to_string()]);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start the {client:?} producer ({e}): the Python producers need \
                     python3 (tests/all.sh checks its prerequisites)"
                )
            });
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut stderr = child.stderr.take().expect("piped stderr");
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        Self {
            kind: run.kind,
            client,
            stdin: child.stdin.take(),
            child,
            lines: rx,
            seen: Vec::new(),
            stderr: Some(stderr),
        }
    }

    fn describe(&self) -> String {
        format!("{:?} producer of `{}`", self.client, self.kind.name())
    }

    /// Wait (at most `timeout`) for a line starting with `prefix`; returns the rest.
    ///
    /// # Panics
    /// The process ends or the time runs out first (with what it printed).
    pub fn expect_line(&mut self, prefix: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if let Some(rest) = line.strip_prefix(prefix) {
                        return rest.trim().to_owned();
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("{}: no `{prefix}` line within {timeout:?}", self.describe())
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let name = self.describe();
                    let out = self.finish_output();
                    panic!("{name}: ended before a `{prefix}` line: {out:?}");
                }
            }
        }
    }

    /// Let a paused producer carry on (a line on its stdin).
    ///
    /// # Panics
    /// Its stdin is closed.
    pub fn resume(&mut self) {
        let stdin = self.stdin.as_mut().expect("stdin");
        stdin.write_all(b"go\n").expect("write to the producer");
        stdin.flush().expect("flush to the producer");
    }

    fn finish_output(&mut self) -> Output {
        self.stdin = None;
        self.seen.extend(self.lines.try_iter());
        let stderr = self
            .stderr
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default();
        Output {
            lines: std::mem::take(&mut self.seen),
            stderr,
        }
    }

    /// Wait (at most `timeout`) for the process to print everything and exit 0; returns
    /// what it printed.
    ///
    /// # Panics
    /// It exits otherwise, or the time runs out (then it is killed).
    #[must_use]
    pub fn finish(mut self, timeout: Duration) -> Output {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    let _ = self.child.kill();
                    let name = self.describe();
                    let out = self.finish_output();
                    panic!("{name}: not done within {timeout:?}: {out:?}");
                }
            }
        }
        // Its stdout is closed: it is exiting.
        let status = self.child.wait().expect("wait for the producer");
        let name = self.describe();
        let out = self.finish_output();
        assert!(status.success(), "{name} exited {status}: {out:?}");
        out
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
