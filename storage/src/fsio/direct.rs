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
//! write are multiples of the device's logical block size. [`DirectFile`] stages writes in
//! [`DIRECT_ALIGN`]-aligned buffers of [`STAGE_BYTES`] and writes each full one at its offset;
//! the last, partial piece is padded with zeros to the alignment when the file is synced, and
//! the file is then truncated to its exact length. A filesystem that refuses `O_DIRECT` at
//! `open` (`EINVAL`, e.g. older tmpfs or overlayfs) gets a buffered file instead; one that
//! refuses the first aligned write (`EINVAL`: a larger logical block size) has `O_DIRECT`
//! switched off on that descriptor and the write retried buffered. Either way the bytes are
//! the same.
//!
//! A direct write blocks its caller until the device has the bytes. So that the caller can
//! fill (and hash) the next piece meanwhile, full pieces are written by a helper thread
//! (`direct-io`, started with the second piece) while the caller fills the other of
//! [`STAGES`] buffers. The first error of a piece is returned by the next write or by the
//! sync; nothing after it is written.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use crossbeam_channel::{Receiver, Sender};
use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};

use super::file::{fallocate_keep_size, DurableFile};

/// Alignment of the staging buffers, of every direct write's length and of its offset.
pub const DIRECT_ALIGN: usize = 4096;
/// Bytes staged before one direct write (a multiple of [`DIRECT_ALIGN`]).
pub const STAGE_BYTES: usize = 2 << 20;
/// Staging buffers per file: one being filled, one being written.
pub const STAGES: usize = 2;

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

/// One aligned staging buffer.
struct Stage {
    /// Over-allocated by [`DIRECT_ALIGN`] so that an aligned window exists inside it.
    buf: Vec<u8>,
    /// Where the aligned window starts in `buf`.
    start: usize,
}

/// Staging buffers kept for the next chunk file: a fresh one costs page faults on every
/// piece of its first fill (fresh memory is slow to touch), each chunk.
static FREE_STAGES: std::sync::Mutex<Vec<Stage>> = std::sync::Mutex::new(Vec::new());
/// Buffers kept in [`FREE_STAGES`] at most (two chunk files' worth).
const FREE_STAGES_KEPT: usize = 2 * STAGES;

impl Stage {
    /// A kept buffer, or a new one.
    fn take() -> Self {
        FREE_STAGES
            .lock()
            .ok()
            .and_then(|mut free| free.pop())
            .unwrap_or_else(Self::new)
    }

    /// Keep this buffer for a later file (or free it when enough are kept).
    fn give_back(self) {
        if let Ok(mut free) = FREE_STAGES.lock() {
            if free.len() < FREE_STAGES_KEPT {
                free.push(self);
            }
        }
    }

    fn new() -> Self {
        let buf = vec![0u8; STAGE_BYTES + DIRECT_ALIGN];
        // The distance from the buffer's address to the next aligned address.
        let misalign = buf.as_ptr() as usize % DIRECT_ALIGN;
        let start = (DIRECT_ALIGN - misalign) % DIRECT_ALIGN;
        Self { buf, start }
    }

    fn window(&self, len: usize) -> &[u8] {
        &self.buf[self.start..self.start + len]
    }

    fn window_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..self.start + STAGE_BYTES]
    }
}

/// Write `data` at `offset`, falling back to buffered writes once if the device refuses the
/// alignment (nothing of the piece is written then: the kernel checks alignment first).
/// Returns whether `O_DIRECT` was switched off.
fn write_piece(file: &File, data: &[u8], offset: u64, direct: bool) -> io::Result<bool> {
    match file.write_all_at(data, offset) {
        Err(e) if direct && e.raw_os_error() == Some(Errno::EINVAL as i32) => {
            let flags = fcntl(file.as_raw_fd(), FcntlArg::F_GETFL).map_err(io::Error::from)?;
            let flags = OFlag::from_bits_truncate(flags) & !OFlag::O_DIRECT;
            fcntl(file.as_raw_fd(), FcntlArg::F_SETFL(flags)).map_err(io::Error::from)?;
            tracing::debug!("O_DIRECT refused by the device; this chunk file is written buffered");
            file.write_all_at(data, offset)?;
            Ok(true)
        }
        r => r.map(|()| false),
    }
}

/// A piece for the helper thread.
struct Job {
    stage: Stage,
    len: usize,
    offset: u64,
    direct: bool,
}

/// A piece written (or not) by the helper thread, with its buffer back.
struct Done {
    stage: Stage,
    result: io::Result<bool>,
}

/// The helper thread writing full pieces.
struct Writer {
    jobs: Sender<Job>,
    done: Receiver<Done>,
    handle: Option<std::thread::JoinHandle<()>>,
    in_flight: usize,
}

impl Writer {
    fn start(file: &File) -> io::Result<Self> {
        let file = file.try_clone()?;
        let (jobs, job_rx) = crossbeam_channel::bounded::<Job>(STAGES);
        let (done_tx, done) = crossbeam_channel::bounded::<Done>(STAGES);
        let handle = std::thread::Builder::new()
            .name("direct-io".into())
            .spawn(move || {
                for job in job_rx {
                    let result =
                        write_piece(&file, job.stage.window(job.len), job.offset, job.direct);
                    if done_tx
                        .send(Done {
                            stage: job.stage,
                            result,
                        })
                        .is_err()
                    {
                        break;
                    }
                }
            })?;
        Ok(Self {
            jobs,
            done,
            handle: Some(handle),
            in_flight: 0,
        })
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closing the job channel ends the thread after the piece it is writing.
        let (closed, _) = crossbeam_channel::bounded(0);
        drop(std::mem::replace(&mut self.jobs, closed));
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// A write-once, sequential file written with `O_DIRECT`; see the module docs. Seeking is
/// limited to asking the position. The last partial piece reaches the file at the first
/// `sync_data` / `sync_all`, after which the file takes no more writes.
pub struct DirectFile {
    file: File,
    /// The buffer being filled (`None` only while a piece is handed over).
    stage: Option<Stage>,
    /// A free buffer.
    spare: Option<Stage>,
    /// Bytes staged in `stage`.
    fill: usize,
    /// Bytes written by the caller (the logical length).
    pos: u64,
    /// File offset of the staged bytes (a multiple of [`STAGE_BYTES`]).
    stage_offset: u64,
    /// Whether the descriptor still has `O_DIRECT`.
    direct: bool,
    /// The helper thread, once a second piece is needed.
    writer: Option<Writer>,
    /// The first error of a piece; every later write or sync returns it again.
    failed: Option<(io::ErrorKind, String)>,
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
        Self {
            file,
            stage: Some(Stage::take()),
            spare: None,
            fill: 0,
            pos: 0,
            stage_offset: 0,
            direct: true,
            writer: None,
            failed: None,
            sealed: false,
        }
    }

    fn check_failed(&self) -> io::Result<()> {
        match &self.failed {
            Some((kind, msg)) => Err(io::Error::new(*kind, msg.clone())),
            None => Ok(()),
        }
    }

    /// Record the outcome of one piece; its buffer becomes the spare.
    fn take_done(&mut self, done: Done) {
        if let Some(w) = &mut self.writer {
            w.in_flight -= 1;
        }
        match done.result {
            Ok(disabled) => self.direct &= !disabled,
            Err(e) => {
                if self.failed.is_none() {
                    self.failed = Some((e.kind(), format!("direct chunk file write: {e}")));
                }
            }
        }
        self.spare = Some(done.stage);
    }

    /// Wait for one piece in flight.
    fn wait_one(&mut self) -> io::Result<()> {
        let done = match &self.writer {
            Some(w) if w.in_flight > 0 => w
                .done
                .recv()
                .map_err(|_| io::Error::other("direct chunk file: the writing thread stopped"))?,
            _ => return Ok(()),
        };
        self.take_done(done);
        Ok(())
    }

    /// Wait for every piece in flight.
    fn drain(&mut self) -> io::Result<()> {
        while self.writer.as_ref().is_some_and(|w| w.in_flight > 0) {
            self.wait_one()?;
        }
        Ok(())
    }

    /// Hand the full staged piece to the helper thread and continue in a free buffer.
    fn submit_full(&mut self) -> io::Result<()> {
        let Some(stage) = self.stage.take() else {
            return Err(io::Error::other("direct chunk file: no staging buffer"));
        };
        if self.writer.is_none() {
            match Writer::start(&self.file) {
                Ok(w) => self.writer = Some(w),
                Err(e) => {
                    // No helper thread: write this piece here.
                    tracing::debug!("no chunk writing thread, writing inline: {e}");
                    let r = write_piece(
                        &self.file,
                        stage.window(STAGE_BYTES),
                        self.stage_offset,
                        self.direct,
                    );
                    self.stage = Some(stage);
                    self.direct &= !r?;
                    self.stage_offset += STAGE_BYTES as u64;
                    self.fill = 0;
                    return Ok(());
                }
            }
        }
        let job = Job {
            stage,
            len: STAGE_BYTES,
            offset: self.stage_offset,
            direct: self.direct,
        };
        if let Some(w) = &mut self.writer {
            w.jobs
                .send(job)
                .map_err(|_| io::Error::other("direct chunk file: the writing thread stopped"))?;
            w.in_flight += 1;
        }
        self.stage_offset += STAGE_BYTES as u64;
        self.fill = 0;
        if self.spare.is_none() && self.writer.as_ref().is_some_and(|w| w.in_flight >= STAGES) {
            self.wait_one()?;
        }
        self.stage = Some(self.spare.take().unwrap_or_else(Stage::take));
        self.check_failed()
    }

    /// Write the staged tail (padded to the alignment when direct) after every piece before
    /// it, and set the exact length.
    fn seal(&mut self) -> io::Result<()> {
        if self.sealed {
            return Ok(());
        }
        self.drain()?;
        self.check_failed()?;
        if self.fill > 0 {
            let Some(stage) = self.stage.as_mut() else {
                return Err(io::Error::other("direct chunk file: no staging buffer"));
            };
            let len = if self.direct {
                let padded = self.fill.div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN;
                stage.window_mut()[self.fill..padded].fill(0);
                padded
            } else {
                self.fill
            };
            let disabled = write_piece(
                &self.file,
                stage.window(len),
                self.stage_offset,
                self.direct,
            )?;
            self.direct &= !disabled;
            self.fill = 0;
        }
        self.file.set_len(self.pos)?;
        self.writer = None;
        self.sealed = true;
        self.release_stages();
        Ok(())
    }

    /// Give the staging buffers back for the next file (none is in flight).
    fn release_stages(&mut self) {
        if self.writer.as_ref().is_some_and(|w| w.in_flight > 0) {
            return;
        }
        for stage in [self.stage.take(), self.spare.take()].into_iter().flatten() {
            stage.give_back();
        }
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

impl Drop for DirectFile {
    fn drop(&mut self) {
        // Joins the writing thread (after the piece it is writing), then keeps the buffers.
        self.writer = None;
        self.release_stages();
    }
}

impl Write for DirectFile {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.refuse_after_seal()?;
        self.check_failed()?;
        let Some(stage) = self.stage.as_mut() else {
            return Err(io::Error::other("direct chunk file: no staging buffer"));
        };
        let room = STAGE_BYTES - self.fill;
        let n = data.len().min(room);
        stage.window_mut()[self.fill..self.fill + n].copy_from_slice(&data[..n]);
        self.fill += n;
        self.pos += n as u64;
        if self.fill == STAGE_BYTES {
            self.submit_full()?;
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
        fallocate_keep_size(&self.file, len)
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
            3 * STAGE_BYTES,
            5 * STAGE_BYTES + 4097,
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

    /// A piece the helper thread cannot write (the descriptor is read-only) fails the file:
    /// a later write or the sync returns the error, naming the direct write.
    #[test]
    fn fault_direct_file_piece_error_reaches_the_caller() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ro");
        std::fs::write(&path, b"").unwrap();
        let mut f = DirectFile::new(File::open(&path).unwrap());
        let data = bytes(STAGE_BYTES, 1);
        let mut failed = None;
        for _ in 0..2 * STAGES + 1 {
            if let Err(e) = f.write_all(&data) {
                failed = Some(e);
                break;
            }
        }
        let e = match failed {
            Some(e) => e,
            None => f.sync_all().unwrap_err(),
        };
        assert!(e.to_string().contains("direct chunk file write"), "{e}");
        assert!(f.sync_all().is_err(), "the failure sticks");
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
