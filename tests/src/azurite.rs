//! [`Azurite`]: Microsoft's Azure Storage emulator (the npm package `azurite`, 3.35.0: the
//! last line that runs on node 20), its blob service on a free loopback port, in its own
//! temporary directory, with a test account and key, for the `publish_azure_*` tests.
//!
//! The entry point is `$WSHARD_AZURITE` (the `azurite-blob` script), else `azurite-blob`
//! on `PATH`; without it the tests fail (never skip) with the install command. The port is
//! the one it prints (`successfully listens on http://127.0.0.1:PORT`). The container
//! [`CONTAINER`] is created with one Shared Key signed request (a small node script: node
//! is what runs Azurite).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use tempfile::TempDir;

use crate::TIMEOUT;

/// The variable naming the `azurite-blob` script.
pub const AZURITE_ENV: &str = "WSHARD_AZURITE";
/// How to get it.
pub const INSTALL_HINT: &str = "install it with `npm install --prefix ../tools/azurite \
     azurite@3.35.0` and set WSHARD_AZURITE=../tools/azurite/node_modules/.bin/azurite-blob \
     (or put azurite-blob on PATH); tests/all.sh and .ci/run do this";
/// The storage account of the test server.
pub const ACCOUNT: &str = "wshardtest";
/// Its key (base64 of `wshard-Azure-Secret-3c1d9e7f`); no output or file of a run may
/// contain it.
pub const ACCOUNT_KEY: &str = "d3NoYXJkLUF6dXJlLVNlY3JldC0zYzFkOWU3Zg==";
/// A wrong key (base64 of `wshard-Azure-Wrong-8a2b4c6d`).
pub const WRONG_KEY: &str = "d3NoYXJkLUF6dXJlLVdyb25nLThhMmI0YzZk";
/// The container every test server has.
pub const CONTAINER: &str = "fleet";

/// Creates container argv[3] in account argv[2] (key argv[4]) on 127.0.0.1:argv[1]; exit 0
/// on 201.
const CREATE_CONTAINER_JS: &str = r"
const [port, account, container, key] = process.argv.slice(1);
const crypto = require('crypto');
const http = require('http');
const date = new Date().toUTCString();
const ver = '2021-08-06';
const path = `/${account}/${container}`;
const sts = ['PUT', '', '', '', '', '', '', '', '', '', '', '',
  `x-ms-date:${date}`, `x-ms-version:${ver}`, `/${account}${path}\nrestype:container`].join('\n');
const sig = crypto.createHmac('sha256', Buffer.from(key, 'base64')).update(sts, 'utf8').digest('base64');
const req = http.request({host: '127.0.0.1', port, method: 'PUT', path: path + '?restype=container',
  headers: {'x-ms-date': date, 'x-ms-version': ver, 'Content-Length': 0,
            Authorization: `SharedKey ${account}:${sig}`}}, (res) => {
  let body = '';
  res.on('data', (d) => { body += d; });
  res.on('end', () => { if (res.statusCode !== 201) { console.error(res.statusCode, body); process.exit(1); } });
});
req.on('error', (e) => { console.error(String(e)); process.exit(1); });
req.end();
";

/// Prints an account SAS token (blob service, every resource type, permissions argv[3]) of
/// account argv[1] signed with key argv[2], percent-encoded as Azure's tools print one.
const ACCOUNT_SAS_JS: &str = r"
const [account, key, perms] = process.argv.slice(1);
const crypto = require('crypto');
const sv = '2021-08-06', ss = 'b', srt = 'sco', se = '2099-01-01T00:00:00Z', spr = 'https,http';
const sts = [account, perms, ss, srt, '', se, '', spr, sv, '', ''].join('\n');
const sig = crypto.createHmac('sha256', Buffer.from(key, 'base64')).update(sts, 'utf8').digest('base64');
const q = {sv, ss, srt, sp: perms, se, spr, sig};
process.stdout.write(Object.entries(q).map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&'));
";

/// An account SAS token of the test account for the blob service with `permissions`
/// (Azure's letters: `r` read, `l` list, `w` write, ...), made with node's crypto.
#[must_use]
pub fn account_sas(permissions: &str) -> String {
    let out = Command::new("node")
        .arg("-e")
        .arg(ACCOUNT_SAS_JS)
        .args([ACCOUNT, ACCOUNT_KEY, permissions])
        .output()
        .expect("node (Azurite's runtime) runs");
    assert!(
        out.status.success(),
        "making a SAS token failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("ascii token")
}

/// The `azurite-blob` entry point, or a panic saying how to install it.
#[must_use]
pub fn azurite_binary() -> PathBuf {
    if let Some(p) = std::env::var_os(AZURITE_ENV).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "${AZURITE_ENV}={} is not a file: {INSTALL_HINT}",
            p.display()
        );
        return p;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("azurite-blob"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("azurite-blob not found (${AZURITE_ENV} unset, not on PATH): {INSTALL_HINT}")
        })
}

/// One running Azurite blob service.
pub struct Azurite {
    child: Child,
    dir: TempDir,
    port: u16,
    log: PathBuf,
}

fn spawn(root: &Path, log: &Path) -> (Child, u16) {
    let bin = azurite_binary();
    let mut child = Command::new(&bin)
        .args(["--blobHost", "127.0.0.1", "--blobPort", "0", "--location"])
        .arg(root)
        .args(["--disableTelemetry", "--skipApiVersionCheck"])
        .env("AZURITE_ACCOUNTS", format!("{ACCOUNT}:{ACCOUNT_KEY}"))
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
        let needle = "successfully listens on http://127.0.0.1:";
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(f) = file.as_mut() {
                let _ = writeln!(f, "{line}");
            }
            if let Some(at) = line.find(needle) {
                if let Ok(port) = line[at + needle.len()..].trim().parse::<u16>() {
                    let _ = tx.send(port);
                }
            }
        }
    });
    // node starts slower than a Rust server: twice the usual wait.
    let port = rx.recv_timeout(TIMEOUT * 2).unwrap_or_else(|_| {
        let _ = child.kill();
        panic!(
            "azurite did not print its port within {:?}; log:\n{}",
            TIMEOUT * 2,
            std::fs::read_to_string(log).unwrap_or_default()
        )
    });
    (child, port)
}

fn create_container(port: u16) {
    let out = Command::new("node")
        .arg("-e")
        .arg(CREATE_CONTAINER_JS)
        .args([&port.to_string(), ACCOUNT, CONTAINER, ACCOUNT_KEY])
        .output()
        .expect("node (Azurite's runtime) runs");
    assert!(
        out.status.success(),
        "creating container {CONTAINER} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Azurite {
    /// Start it with [`ACCOUNT`] / [`ACCOUNT_KEY`] and the container [`CONTAINER`].
    #[must_use]
    pub fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("wshard-azurite-")
            .tempdir_in("/tmp")
            .expect("temporary directory");
        let root = dir.path().join("store");
        std::fs::create_dir_all(&root).expect("store directory");
        let log = dir.path().join("azurite.log");
        let (child, port) = spawn(&root, &log);
        create_container(port);
        Self {
            child,
            dir,
            port,
            log,
        }
    }

    /// Stop the server gracefully (SIGTERM: Azurite saves its database then exits) and
    /// start it again on the same directory; the port is a new one: see
    /// [`Azurite::endpoint`]. A SIGKILL is no restart test for Azurite: it keeps its
    /// metadata (even the containers) in memory between periodic saves (measured:
    /// everything made in the last seconds is gone), which Azure itself never does.
    pub fn restart(&mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        let _ = self.child.wait();
        let log = self.dir.path().join("azurite.restarted.log");
        let (child, port) = spawn(&self.store_root(), &log);
        self.child = child;
        self.port = port;
        self.log = log;
    }

    /// The account endpoint, path-style: `http://127.0.0.1:PORT/ACCOUNT`.
    #[must_use]
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/{ACCOUNT}", self.port)
    }

    /// The directory Azurite keeps its database and blobs in.
    #[must_use]
    pub fn store_root(&self) -> PathBuf {
        self.dir.path().join("store")
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

impl Drop for Azurite {
    fn drop(&mut self) {
        self.stop();
    }
}
