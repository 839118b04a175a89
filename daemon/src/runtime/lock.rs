//! The data directory lock: `data_dir/.wshardd.lock`, held with an exclusive `flock` by
//! `wshardd` for its whole life and by `wshard recover --apply` while it works, so that
//! offline recovery never runs on the files of a live daemon (nor two daemons on one
//! directory). The kernel drops the lock when its holder exits, even after `kill -9`, so a
//! stale lock file is harmless.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// Name of the lock file inside the data directory.
pub const LOCK_FILE: &str = ".wshardd.lock";

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds it.
    #[error("data directory {} is in use: {} is locked{}", data_dir.display(), path.display(), holder.map(|p| format!(" by pid {p}")).unwrap_or_default())]
    Held {
        data_dir: PathBuf,
        path: PathBuf,
        /// The pid the holder wrote into the file, when readable.
        holder: Option<u32>,
    },
    #[error("lock file {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// The lock, held until dropped.
#[derive(Debug)]
pub struct DataDirLock {
    _file: Flock<File>,
}

/// `data_dir/.wshardd.lock`.
#[must_use]
pub(crate) fn lock_path(data_dir: &Path) -> PathBuf {
    data_dir.join(LOCK_FILE)
}

fn holder_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(32).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

fn try_lock(file: File, data_dir: &Path, path: &Path) -> Result<Flock<File>, LockError> {
    Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(mut file, errno)| {
        if errno == Errno::EWOULDBLOCK {
            LockError::Held {
                data_dir: data_dir.to_path_buf(),
                path: path.to_path_buf(),
                holder: holder_pid(&mut file),
            }
        } else {
            LockError::Io {
                path: path.to_path_buf(),
                source: io::Error::from(errno),
            }
        }
    })
}

/// Create (if needed) and lock `data_dir/.wshardd.lock` without waiting, and write this
/// process's pid into it.
///
/// # Errors
/// [`LockError::Held`] when another process holds it; [`LockError::Io`] otherwise.
pub fn acquire(data_dir: &Path) -> Result<DataDirLock, LockError> {
    let path = lock_path(data_dir);
    let io_err = |source| LockError::Io {
        path: path.clone(),
        source,
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io_err)?;
    let mut lock = try_lock(file, data_dir, &path)?;
    lock.set_len(0).map_err(io_err)?;
    lock.seek(SeekFrom::Start(0)).map_err(io_err)?;
    writeln!(*lock, "{}", std::process::id()).map_err(io_err)?;
    Ok(DataDirLock { _file: lock })
}

/// Whether another process holds the lock, without creating the file (a missing file is
/// not held) and without keeping the lock.
///
/// # Errors
/// [`LockError::Held`] when it is held; [`LockError::Io`] when it cannot be checked.
pub fn ensure_free(data_dir: &Path) -> Result<(), LockError> {
    let path = lock_path(data_dir);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(LockError::Io { path, source }),
    };
    try_lock(file, data_dir, &path).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_is_exclusive_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        ensure_free(dir.path()).unwrap();
        assert!(!lock_path(dir.path()).exists(), "checking creates nothing");
        let held = acquire(dir.path()).unwrap();
        assert!(lock_path(dir.path()).exists(), "the lock file is lock_path");
        match acquire(dir.path()) {
            Err(LockError::Held { holder, .. }) => assert_eq!(holder, Some(std::process::id())),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            ensure_free(dir.path()),
            Err(LockError::Held { .. })
        ));
        drop(held);
        ensure_free(dir.path()).unwrap();
        drop(acquire(dir.path()).unwrap());
    }
}
