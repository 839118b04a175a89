//! The S3 server of the benchmarks that need one (`upload`, `robot-upload`, `remote-read`):
//! s3s-fs 0.14.1 on loopback, in the scratch directory, with access keys; its CPU time read
//! from `/proc/<pid>/stat`.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{fail, io_ctx, Result};

pub const ACCESS_KEY: &str = "wshard-bench-key";
pub const SECRET_KEY: &str = "wshard-bench-secret";
pub const BUCKET: &str = "bench";
const START_TIMEOUT: Duration = Duration::from_secs(20);
const POLL: Duration = Duration::from_millis(20);

/// A running s3s-fs, killed on drop.
pub struct S3sFs {
    child: Child,
    pub endpoint: String,
    pub root: PathBuf,
}

/// `--s3s-fs`, else `$WSHARD_S3S_FS`, else `s3s-fs` on `PATH`.
pub fn binary(given: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("WSHARD_S3S_FS").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("s3s-fs"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            fail(
                "s3s-fs not found: --s3s-fs PATH, WSHARD_S3S_FS, or `cargo install \
                 s3s-fs@0.14.1 --features binary --locked`",
            )
        })
}

impl S3sFs {
    /// Start it on `root` (the bucket directory is created) on a free loopback port; returns
    /// once it accepts connections. Logs at `warn` only (no per-request logging cost).
    pub fn start(bin: &Path, root: &Path) -> Result<Self> {
        std::fs::create_dir_all(root.join(BUCKET)).map_err(|e| io_ctx("create", root, e))?;
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| fail(format!("no free port: {e}")))?
            .port();
        let child = Command::new(bin)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .arg(root)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| io_ctx("start", bin, e))?;
        let server = Self {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
            root: root.to_path_buf(),
        };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if started.elapsed() > START_TIMEOUT {
                return Err(fail(format!(
                    "s3s-fs did not listen on {port} in {START_TIMEOUT:?}"
                )));
            }
            std::thread::sleep(POLL);
        }
        Ok(server)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The server's user + system CPU seconds so far.
    pub fn cpu_s(&self) -> f64 {
        cpu_s_of(&format!("/proc/{}/stat", self.child.id())).unwrap_or(f64::NAN)
    }

    /// Delete what the server stores under `prefix` (between cases, untimed).
    pub fn remove_prefix(&self, prefix: &str) {
        let _ = std::fs::remove_dir_all(self.root.join(BUCKET).join(prefix.trim_end_matches('/')));
    }
}

impl Drop for S3sFs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Clock ticks per second of `/proc/*/stat` (`sysconf(_SC_CLK_TCK)`, 100 on Linux).
const CLK_TCK: f64 = 100.0;

/// User + system CPU seconds of a process from its `/proc/.../stat` (fields 14 and 15,
/// counted after the `)` that ends the command name).
pub fn cpu_s_of(stat: &str) -> Option<f64> {
    let text = std::fs::read_to_string(stat).ok()?;
    let after = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // After `)`: state is field 3, so utime (14) and stime (15) are at 11 and 12.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / CLK_TCK)
}

/// This process's user + system CPU seconds (all threads).
pub fn self_cpu_s() -> f64 {
    cpu_s_of("/proc/self/stat").unwrap_or(f64::NAN)
}
