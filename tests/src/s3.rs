//! [`S3Server`]: a real S3-compatible server, `s3s-fs` 0.14.1, on loopback with access
//! keys, in its own temporary directory, for the `publish_*` tests.
//!
//! The binary is `$WSHARD_S3S_FS`, else `s3s-fs` on `PATH`; without it the tests fail
//! (never skip) with the install command. The port is the one it logs
//! (`server is running at http://127.0.0.1:PORT`, at `RUST_LOG=info`).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use tempfile::TempDir;

use crate::TIMEOUT;

/// The variable naming the s3s-fs binary.
pub const S3S_FS_ENV: &str = "WSHARD_S3S_FS";
/// How to get it.
pub const INSTALL_HINT: &str = "install it with `cargo install s3s-fs@0.14.1 --features binary \
     --locked --root ../tools` and set WSHARD_S3S_FS=../tools/bin/s3s-fs (or put it on \
     PATH); tests/all.sh and .ci/run do this";
/// The access key id the tests use.
pub const ACCESS_KEY: &str = "wshard-test-key";
/// The secret the tests use; no output or file of a run may contain it.
pub const SECRET_KEY: &str = "wshard-Secret-9f4e2c7a1b";
/// A wrong secret; it must not appear anywhere either.
pub const WRONG_SECRET: &str = "wshard-Wrong-5d8b3e6f0a";
/// The bucket every test server has.
pub const BUCKET: &str = "fleet";

/// The s3s-fs binary, or a panic saying how to install it.
#[must_use]
pub fn s3s_fs_binary() -> PathBuf {
    if let Some(p) = std::env::var_os(S3S_FS_ENV).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "${S3S_FS_ENV}={} is not a file: {INSTALL_HINT}",
            p.display()
        );
        return p;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("s3s-fs"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("s3s-fs 0.14.1 not found (${S3S_FS_ENV} unset, not on PATH): {INSTALL_HINT}")
        })
}

/// One running s3s-fs.
pub struct S3Server {
    child: Child,
    dir: TempDir,
    endpoint: String,
    log: PathBuf,
}

fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Start s3s-fs on `root` with the test keys; its log to `log`; returns it and its URL.
fn spawn(root: &Path, log: &Path) -> (Child, String) {
    spawn_on(root, log, 0)
}

/// [`spawn`] on `port` (0: any).
fn spawn_on(root: &Path, log: &Path, port: u16) -> (Child, String) {
    let bin = s3s_fs_binary();
    let port = port.to_string();
    let mut child = Command::new(&bin)
        .args([
            "--host",
            "127.0.0.1",
            "--port",
            &port,
            "--access-key",
            ACCESS_KEY,
        ])
        .args(["--secret-key", SECRET_KEY])
        .arg(root)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}: {INSTALL_HINT}", bin.display()));
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    let log_path = log.to_path_buf();
    std::thread::spawn(move || {
        let mut file = std::fs::File::create(&log_path).ok();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let line = strip_ansi(&line);
            if let Some(f) = file.as_mut() {
                let _ = writeln!(f, "{line}");
            }
            if let Some(at) = line.find("server is running at ") {
                let url = line[at + "server is running at ".len()..].trim().to_owned();
                let _ = tx.send(url);
            }
        }
    });
    let endpoint = rx.recv_timeout(TIMEOUT).unwrap_or_else(|_| {
        let _ = child.kill();
        panic!(
            "s3s-fs did not log its port within {TIMEOUT:?}; log:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        )
    });
    (child, endpoint)
}

impl S3Server {
    /// Start it with [`ACCESS_KEY`] / [`SECRET_KEY`] and the bucket [`BUCKET`]; returns once
    /// it has logged its port.
    #[must_use]
    pub fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("wshard-s3-")
            .tempdir_in("/tmp")
            .expect("temporary directory");
        std::fs::create_dir_all(dir.path().join("store").join(BUCKET)).expect("bucket directory");
        let log = dir.path().join("s3s-fs.log");
        let (child, endpoint) = spawn(&dir.path().join("store"), &log);
        Self {
            child,
            dir,
            endpoint,
            log,
        }
    }

    /// Stop the server and start it again on the same directory (a crash and restart of
    /// the store); the port is a new one: see [`S3Server::endpoint`].
    pub fn restart(&mut self) {
        self.stop();
        let log = self.dir.path().join("s3s-fs.restarted.log");
        let (child, endpoint) = spawn(&self.store_root(), &log);
        self.child = child;
        self.endpoint = endpoint;
        self.log = log;
    }

    /// Stop the server and start it again on the same directory and the same port (the
    /// endpoint a daemon's config names stays valid).
    pub fn restart_same_port(&mut self) {
        self.stop();
        self.start_again_same_port();
    }

    /// Start the server again after [`S3Server::stop`], on the same port.
    pub fn start_again_same_port(&mut self) {
        let port = self
            .endpoint
            .rsplit(':')
            .next()
            .and_then(|p| p.parse::<u16>().ok())
            .expect("endpoint port");
        let log = self.dir.path().join("s3s-fs.again.log");
        let (child, endpoint) = spawn_on(&self.store_root(), &log, port);
        self.child = child;
        self.endpoint = endpoint;
        self.log = log;
    }

    /// `http://127.0.0.1:PORT`.
    #[must_use]
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The directory the server stores objects in (`<root>/<bucket>/<key>`).
    #[must_use]
    pub fn store_root(&self) -> PathBuf {
        self.dir.path().join("store")
    }

    /// The file of `key` in [`BUCKET`].
    #[must_use]
    pub fn object_path(&self, key: &str) -> PathBuf {
        self.store_root().join(BUCKET).join(key)
    }

    /// The server's log.
    #[must_use]
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// Stop it (kill, reap).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Every file below `dir` whose bytes contain `needle`.
#[must_use]
pub fn files_containing(dir: &Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if std::fs::read(&p).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle))
            {
                found.push(p);
            }
        }
    }
    found
}
