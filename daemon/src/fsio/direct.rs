//! Chunk files written with `O_DIRECT`: the bytes go from an aligned staging buffer straight
//! to the device, not through the page cache.
//!
//! A finished chunk is written once, sequentially, and never read back by the recorder (its
//! SHA-256 is computed from memory). Through the page cache that costs a kernel copy into
//! freshly faulted pages plus the writeback work the fsync does in the caller; with
//! `O_DIRECT` it costs one user-space copy into a reused buffer, and the fsync only has the
//! metadata and the device cache flush left. It also keeps camera streams from evicting
//! everything else on the robot from the page cache.
//!
//! Rules of `O_DIRECT` (Linux): the buffer address, the length and the file offset of every
//! write are multiples of the device's logical block size. [`DirectFile`] stages writes in a
//! [`DIRECT_ALIGN`]-aligned buffer and writes it in whole [`STAGE_BYTES`] pieces; the last,
//! partial piece is padded with zeros to the alignment when the file is synced, and the file
//! is then truncated to its exact length. A filesystem that refuses `O_DIRECT` at `open`
//! (`EINVAL`, e.g. older tmpfs or overlayfs) gets a buffered file instead; one that refuses
//! the first aligned write (`EINVAL`: a larger logical block size) has `O_DIRECT` switched
//! off on that descriptor and the write retried buffered. Either way the bytes are the same.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};

use super::DurableFile;

/// Alignment of the staging buffer, of every direct write's length and of its offset.
pub const DIRECT_ALIGN: usize = 4096;
/// Bytes staged before one direct write (a multiple of [`DIRECT_ALIGN`]).
pub const STAGE_BYTES: usize = 4 << 20;

/// Open `path` (create or truncate, mode 0644) for direct writes; `Ok(None)` when the
/// filesystem does not support `O_DIRECT`.
///
/// # Errors
/// The OS error of `open`.
pub fn create(path: &Path) -> io::Result<Option<DirectFile>> {
    let opened = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(nix::libc::O_DIRECT)
        .open(path);
    match opened {
        Ok(file) => Ok(Some(DirectFile::new(file))),
        Err(e) if e.raw_os_error() == Some(Errno::EINVAL as i32) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A write-once, sequential file written with `O_DIRECT`; see the module docs. Seeking is
/// limited to asking the position. The last partial piece reaches the file at the first
/// `sync_data` / `sync_all`, after which the file takes no more writes.
pub struct DirectFile {
    file: File,
    /// Over-allocated by [`DIRECT_ALIGN`] so that an aligned window exists inside it.
    buf: Vec<u8>,
    /// Where the aligned window starts in `buf`.
    start: usize,
    /// Bytes staged in the window.
    fill: usize,
    /// Bytes written by the caller (the logical length).
    pos: u64,
    /// Whether the descriptor still has `O_DIRECT`.
    direct: bool,
    /// The tail was written and the length set: no more writes.
    sealed: bool,
}

impl std::fmt::Debug for DirectFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectFile")
            .field("pos", &self.pos)
            .field("direct", &self.direct)
            .field("sealed", &self.sealed)
            .finish_non_exhaustive()
    }
}

impl DirectFile {
    fn new(file: File) -> Self {
        let buf = vec![0u8; STAGE_BYTES + DIRECT_ALIGN];
        // The distance from the buffer's address to the next aligned address.
        let misalign = buf.as_ptr() as usize % DIRECT_ALIGN;
        let start = (DIRECT_ALIGN - misalign) % DIRECT_ALIGN;
        Self {
            file,
            buf,
            start,
            fill: 0,
            pos: 0,
            direct: true,
            sealed: false,
        }
    }

    /// Whether writes still bypass the page cache (false after a fallback).
    #[must_use]
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// Write `len` staged bytes (from the window's start) to the file, falling back to
    /// buffered writes once if the device refuses the alignment.
    fn write_window(&mut self, len: usize) -> io::Result<()> {
        let r = self.file.write_all(&self.buf[self.start..self.start + len]);
        match r {
            Err(e) if self.direct && e.raw_os_error() == Some(Errno::EINVAL as i32) => {
                // Nothing of this piece was written (the kernel checks alignment first).
                self.disable_direct()?;
                self.file.write_all(&self.buf[self.start..self.start + len])
            }
            r => r,
        }
    }

    fn disable_direct(&mut self) -> io::Result<()> {
        let flags = fcntl(self.file.as_raw_fd(), FcntlArg::F_GETFL).map_err(io::Error::from)?;
        let flags = OFlag::from_bits_truncate(flags) & !OFlag::O_DIRECT;
        fcntl(self.file.as_raw_fd(), FcntlArg::F_SETFL(flags)).map_err(io::Error::from)?;
        self.direct = false;
        tracing::debug!("O_DIRECT refused by the device; this chunk file is written buffered");
        Ok(())
    }

    /// Write the staged tail (padded to the alignment when direct) and set the exact length.
    fn seal(&mut self) -> io::Result<()> {
        if self.sealed {
            return Ok(());
        }
        if self.fill > 0 {
            let len = if self.direct {
                let padded = self.fill.div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN;
                self.buf[self.start + self.fill..self.start + padded].fill(0);
                padded
            } else {
                self.fill
            };
            self.write_window(len)?;
            self.fill = 0;
        }
        self.file.set_len(self.pos)?;
        self.sealed = true;
        Ok(())
    }

    fn refuse_after_seal(&self) -> io::Result<()> {
        if self.sealed {
            Err(io::Error::other(
                "direct chunk file: written after its final sync",
            ))
        } else {
            Ok(())
        }
    }
}

impl Write for DirectFile {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.refuse_after_seal()?;
        let room = STAGE_BYTES - self.fill;
        let n = data.len().min(room);
        let at = self.start + self.fill;
        self.buf[at..at + n].copy_from_slice(&data[..n]);
        self.fill += n;
        self.pos += n as u64;
        if self.fill == STAGE_BYTES {
            self.write_window(STAGE_BYTES)?;
            self.fill = 0;
        }
        Ok(n)
    }

    /// Nothing: whole pieces are written as they fill, the tail at the first sync.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for DirectFile {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        match pos {
            SeekFrom::Current(0) => Ok(self.pos),
            SeekFrom::Start(p) if p == self.pos => Ok(self.pos),
            _ => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "direct chunk file: sequential writes only",
            )),
        }
    }
}

impl DurableFile for DirectFile {
    fn sync_data(&mut self) -> io::Result<()> {
        self.seal()?;
        self.file.sync_data()
    }

    fn sync_all(&mut self) -> io::Result<()> {
        self.seal()?;
        self.file.sync_all()
    }

    fn file_len(&mut self) -> io::Result<u64> {
        Ok(self.pos)
    }

    fn set_len(&mut self, _len: u64) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "direct chunk file: the length is set by the final sync",
        ))
    }

    fn preallocate(&mut self, len: u64) -> io::Result<()> {
        super::fallocate_keep_size(&self.file, len)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn bytes(n: usize, seed: u8) -> Vec<u8> {
        (0..n).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect()
    }

    /// Odd-sized writes across piece boundaries, then a sync: the file holds exactly the
    /// bytes written, whatever the tail.
    #[test]
    fn direct_file_holds_exactly_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        for (i, total) in [
            0usize,
            1,
            4095,
            4096,
            4097,
            STAGE_BYTES,
            STAGE_BYTES + 12_345,
        ]
        .into_iter()
        .enumerate()
        {
            let path = dir.path().join(format!("f{i}"));
            let Some(mut f) = create(&path).unwrap() else {
                eprintln!("O_DIRECT unsupported here; the buffered fallback is used instead");
                return;
            };
            let data = bytes(total, i as u8);
            for piece in data.chunks(7_777) {
                f.write_all(piece).unwrap();
            }
            assert_eq!(f.stream_position().unwrap(), total as u64);
            f.preallocate(total as u64 + 10_000).unwrap();
            f.sync_all().unwrap();
            assert!(f.write_all(b"x").is_err(), "no writes after the final sync");
            drop(f);
            assert_eq!(std::fs::read(&path).unwrap(), data, "total {total}");
        }
    }

    #[test]
    fn direct_file_refuses_seeks_and_resizes() {
        let dir = tempfile::tempdir().unwrap();
        let Some(mut f) = create(&dir.path().join("f")).unwrap() else {
            return;
        };
        f.write_all(b"abc").unwrap();
        assert_eq!(f.seek(SeekFrom::Start(3)).unwrap(), 3);
        assert!(f.seek(SeekFrom::Start(0)).is_err());
        assert!(f.set_len(1).is_err());
        assert_eq!(f.file_len().unwrap(), 3);
    }

    #[test]
    fn direct_file_open_error_names_nothing_but_the_os_error() {
        let e = create(Path::new("/nonexistent-dir-wshard/x"))
            .err()
            .unwrap();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
