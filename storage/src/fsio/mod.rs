//! The file system seam: every durability syscall, behind the [`Fs`] trait.
//! A leaf: it calls nothing else of the daemon; everything that writes files calls it.
//!
//! The only place that performs durability syscalls: create, write, fdatasync, fsync,
//! rename, directory fsync, remove. Everything goes through the [`Fs`] trait so that fault
//! injection (and a simulated power cut) can reach every step.
//!
//! Rules the rest of the daemon relies on:
//! - a failed `sync_data` / `sync_all` is never retried on the same file: the caller marks
//!   the writer failed (the page cache may have dropped the dirty pages, see the
//!   "fsyncgate" discussion in PostgreSQL and the USENIX ATC '20 paper on fsync failures);
//! - a rename is durable only after `sync_dir` of the parent directory returns.
//!
//! `sim::SimFs` (feature `sim`, on for tests only) is an in-memory implementation with a
//! separate durable image, power-cut and fault injection, for the crash-point and fault tests.

pub mod direct;
mod file;
#[cfg(any(test, feature = "sim"))]
pub mod sim;

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use file::fallocate_keep_size;
pub use file::DurableFile;

/// The filesystem operations the daemon uses.
pub trait Fs: Send + Sync {
    /// Create a new file; fails if it exists.
    ///
    /// # Errors
    /// The OS error.
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn DurableFile>>;

    /// Create or truncate a file.
    ///
    /// # Errors
    /// The OS error.
    fn create(&self, path: &Path) -> io::Result<Box<dyn DurableFile>>;

    /// Create or truncate a file that is written once, sequentially, and synced once
    /// (chunk files): on the real filesystem with `O_DIRECT` where supported
    /// (`direct`); only the position can be asked with `seek`, and the length is final
    /// after the first sync. Elsewhere the same as [`Fs::create`].
    ///
    /// # Errors
    /// The OS error.
    fn create_direct(&self, path: &Path) -> io::Result<Box<dyn DurableFile>> {
        self.create(path)
    }

    /// Open an existing file for appending (positioned at its end).
    ///
    /// # Errors
    /// The OS error.
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn DurableFile>>;

    /// Open a file for reading.
    ///
    /// # Errors
    /// The OS error.
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>>;

    /// Move a file or directory (no durability implied; used to quarantine).
    ///
    /// # Errors
    /// The OS error.
    fn move_aside(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.rename(from, to)
    }

    /// Read a whole file.
    ///
    /// # Errors
    /// The OS error.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;

    /// Atomically replace `to` with `from` (same directory).
    ///
    /// # Errors
    /// The OS error.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// fsync a directory so that creations, renames and removals in it are durable.
    ///
    /// # Errors
    /// The OS error.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;

    /// Remove a file.
    ///
    /// # Errors
    /// The OS error.
    fn remove_file(&self, path: &Path) -> io::Result<()>;

    /// Remove an empty directory.
    ///
    /// # Errors
    /// The OS error (`ENOTEMPTY` for a directory that is not empty).
    fn remove_dir(&self, path: &Path) -> io::Result<()>;

    /// Create one directory; fails with `AlreadyExists` if it exists.
    ///
    /// # Errors
    /// The OS error.
    fn create_dir(&self, path: &Path) -> io::Result<()>;

    /// Create a directory and its parents.
    ///
    /// # Errors
    /// The OS error.
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;

    /// Entries of a directory (full paths), sorted by name.
    ///
    /// # Errors
    /// The OS error.
    fn read_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;

    /// True when the path exists.
    fn exists(&self, path: &Path) -> bool;
}

/// The real filesystem.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealFs;

struct RealFile(File);

impl Write for RealFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl Seek for RealFile {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.0.seek(pos)
    }
}

impl DurableFile for RealFile {
    fn sync_data(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }

    fn sync_all(&mut self) -> io::Result<()> {
        self.0.sync_all()
    }

    fn file_len(&mut self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }

    fn preallocate(&mut self, len: u64) -> io::Result<()> {
        fallocate_keep_size(&self.0, len)
    }
}

impl Fs for RealFs {
    fn create_direct(&self, path: &Path) -> io::Result<Box<dyn DurableFile>> {
        match direct::create(path)? {
            Some(f) => Ok(Box::new(f)),
            None => self.create(path),
        }
    }

    fn create_new(&self, path: &Path) -> io::Result<Box<dyn DurableFile>> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        Ok(Box::new(RealFile(f)))
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn DurableFile>> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(Box::new(RealFile(f)))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn DurableFile>> {
        let mut f = OpenOptions::new().read(true).write(true).open(path)?;
        f.seek(SeekFrom::End(0))?;
        Ok(Box::new(RealFile(f)))
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        Ok(Box::new(File::open(path)?))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut buf = Vec::new();
        File::open(path)?.read_to_end(&mut buf)?;
        Ok(buf)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_dir(path)
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir(path)
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)
    }

    fn read_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let mut out = std::fs::read_dir(dir)?
            .map(|e| e.map(|e| e.path()))
            .collect::<io::Result<Vec<_>>>()?;
        out.sort();
        Ok(out)
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
}

/// A [`DurableFile`] that is dead after its first failed call: every later write, seek,
/// sync or resize returns an error without reaching the file. After a failed write or
/// sync the episode is failed and its files must stay as they are for recovery, but a
/// `BufWriter` dropped on the error path would otherwise write its buffered rest, and a
/// sync must never be retried.
pub struct FailStop {
    inner: Box<dyn DurableFile>,
    failed: bool,
}

impl FailStop {
    /// Wrap `inner`.
    #[must_use]
    pub fn wrap(inner: Box<dyn DurableFile>) -> Box<dyn DurableFile> {
        Box::new(Self {
            inner,
            failed: false,
        })
    }

    fn guard<T>(&mut self, f: impl FnOnce(&mut dyn DurableFile) -> io::Result<T>) -> io::Result<T> {
        if self.failed {
            return Err(io::Error::other(
                "refused: an earlier write or sync of this file failed",
            ));
        }
        let r = f(&mut *self.inner);
        if r.as_ref()
            .is_err_and(|e| e.kind() != io::ErrorKind::Interrupted)
        {
            self.failed = true;
        }
        r
    }
}

impl Write for FailStop {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.guard(|f| f.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.guard(|f| f.flush())
    }
}

impl Seek for FailStop {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.guard(|f| f.seek(pos))
    }
}

impl DurableFile for FailStop {
    fn sync_data(&mut self) -> io::Result<()> {
        self.guard(|f| f.sync_data())
    }

    fn sync_all(&mut self) -> io::Result<()> {
        self.guard(|f| f.sync_all())
    }

    fn file_len(&mut self) -> io::Result<u64> {
        self.guard(|f| f.file_len())
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.guard(|f| f.set_len(len))
    }

    fn preallocate(&mut self, len: u64) -> io::Result<()> {
        self.guard(|f| f.preallocate(len))
    }
}

/// Write `bytes` to `path` atomically and durably: `path.tmp`, fsync, rename, fsync dir.
///
/// # Errors
/// The first failing step, as `(step, error)`.
pub fn replace_atomically(
    fs: &dyn Fs,
    path: &Path,
    bytes: &[u8],
) -> Result<(), (&'static str, io::Error)> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut f = fs.create(&tmp).map_err(|e| ("create temp file", e))?;
    f.write_all(bytes).map_err(|e| ("write temp file", e))?;
    f.sync_all().map_err(|e| ("fsync temp file", e))?;
    drop(f);
    fs.rename(&tmp, path).map_err(|e| ("rename temp file", e))?;
    fs.sync_dir(dir).map_err(|e| ("fsync directory", e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fsio_replace_atomically_writes_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.wshard");
        replace_atomically(&RealFs, &p, b"one").unwrap();
        replace_atomically(&RealFs, &p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(RealFs.read_dir(dir.path()).unwrap(), vec![p]);
    }

    #[test]
    fn fsio_fail_stop_refuses_everything_after_a_failure() {
        use sim::{FaultKind, OpKind, SimFs};
        let fs = SimFs::new();
        fs.mkdir_durable(Path::new("/d")).unwrap();
        fs.inject(OpKind::Write, 1, FaultKind::Eio);
        let mut w = std::io::BufWriter::new(FailStop::wrap(fs.create(Path::new("/d/f")).unwrap()));
        w.write_all(b"buffered").unwrap();
        assert!(w.flush().is_err());
        assert!(w.get_mut().sync_data().is_err());
        drop(w); // BufWriter flushes on drop: refused, the file is not written again
        let writes = fs.log().iter().filter(|r| r.kind == OpKind::Write).count();
        assert_eq!(writes, 1);
        assert_eq!(fs.attempts(OpKind::Sync, Path::new("/d/f")), 0);
        assert_eq!(fs.read(Path::new("/d/f")).unwrap(), b"");
    }
}
