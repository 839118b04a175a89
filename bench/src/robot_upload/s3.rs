//! s3s-fs 0.14.1 on loopback with access keys, in the scratch directory.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::error::{fail, io_ctx, Result};

pub const ACCESS_KEY: &str = "wshard-bench-key";
pub const SECRET_KEY: &str = "wshard-bench-secret-3c1d";
pub const BUCKET: &str = "fleet";
const LISTENING: &str = "server is running at ";

/// A running s3s-fs (killed on drop).
pub struct Server {
    child: Child,
    endpoint: String,
}

impl Server {
    /// Start `bin` on `root` (created, with the bucket) on any port.
    ///
    /// # Errors
    /// When it cannot start or does not say its port within 20 s.
    pub fn start(bin: &Path, root: &Path) -> Result<Self> {
        let bucket = root.join(BUCKET);
        std::fs::create_dir_all(&bucket).map_err(|e| io_ctx("create", &bucket, e))?;
        let mut child = Command::new(bin)
            .args([
                "--host",
                "127.0.0.1",
                "--port",
                "0",
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
            .map_err(|e| io_ctx("start", bin, e))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| fail("s3s-fs: no stdout"))?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout)
                .lines()
                .map_while(std::result::Result::ok)
            {
                if let Some(at) = line.find(LISTENING) {
                    let url: String = line[at + LISTENING.len()..]
                        .chars()
                        .filter(|c| !c.is_control())
                        .collect();
                    let _ = tx.send(url.trim().trim_end_matches("[0m").to_owned());
                }
            }
        });
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(endpoint) => Ok(Self { child, endpoint }),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(fail("s3s-fs did not say its port within 20 s"))
            }
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
