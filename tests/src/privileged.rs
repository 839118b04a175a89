//! Tests that need root: a small tmpfs for real low free space, and filling it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `Err(reason)` unless this process runs as root (uid 0).
///
/// # Errors
/// Why the calling test has to skip.
pub fn require_root(test: &str) -> Result<(), String> {
    if nix::unistd::geteuid().is_root() {
        Ok(())
    } else {
        Err(format!(
            "{test}: needs root (uid 0), running as uid {}",
            nix::unistd::geteuid()
        ))
    }
}

/// A tmpfs mounted by a test; lazily unmounted when dropped (the daemon may still hold
/// files in it).
#[derive(Debug)]
pub struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    /// Mount a tmpfs of `size` (e.g. `"64m"`) at `dir` (created).
    ///
    /// # Errors
    /// Why this machine does not allow it (the caller skips).
    pub fn mount(dir: &Path, size: &str) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if out.status.success() {
            Ok(Self {
                dir: dir.to_path_buf(),
            })
        } else {
            Err(format!(
                "mount -t tmpfs failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    /// The mount point.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Bytes an unprivileged process may still write there.
    #[must_use]
    pub fn free_bytes(&self) -> u64 {
        let s = nix::sys::statvfs::statvfs(&self.dir).expect("statvfs of the tmpfs");
        #[allow(clippy::useless_conversion)] // the field widths differ between targets
        let (avail, frag) = (u64::from(s.blocks_available()), s.fragment_size());
        avail * frag
    }

    /// Grow (or create) the file `name` in the tmpfs until at most `free` bytes are left
    /// (as close as page granularity allows).
    pub fn fill_until_free(&self, name: &str, free: u64) {
        let path = self.dir.join(name);
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .expect("open ballast");
        let chunk = vec![0x5Au8; 1 << 20];
        loop {
            let now = self.free_bytes();
            if now <= free {
                break;
            }
            let n = usize::try_from((now - free).min(chunk.len() as u64)).unwrap_or(chunk.len());
            f.write_all(&chunk[..n]).expect("write ballast");
            f.flush().expect("flush ballast");
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

/// The uid and gid tests drop to (`nobody` on Debian).
pub const NOBODY: u32 = 65_534;

/// Run `client` (the `access_client` test binary: `SOCKET ID STEPS`) as uid/gid [`NOBODY`]
/// against `d`: its output (stdout line, then stderr) and whether it exited 0.
#[must_use]
pub fn client_as_nobody(client: &Path, d: &crate::Daemon, id: &str, n: u64) -> (String, bool) {
    use std::os::unix::process::CommandExt;
    let out = Command::new(client)
        .arg(d.socket())
        .arg(id)
        .arg(n.to_string())
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .expect("cannot run the access client");
    let line = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (format!("{line}{err}"), out.status.success())
}
