//! [`DurableFile`]: a file opened for writing through an [`Fs`](super::Fs), implemented
//! by the real file ([`super::RealFs`]), the `O_DIRECT` file ([`super::direct`]) and the
//! simulated one; [`fallocate_keep_size`], the preallocation both real files use.

use std::fs::File;
use std::io::{self, Seek, Write};

/// A file opened for writing through an `Fs`.
pub trait DurableFile: Write + Seek + Send {
    /// `fdatasync`: the data written so far (and the size) is on stable storage.
    ///
    /// # Errors
    /// The OS error; the caller must not retry.
    fn sync_data(&mut self) -> io::Result<()>;

    /// `fsync`: data and all metadata.
    ///
    /// # Errors
    /// The OS error; the caller must not retry.
    fn sync_all(&mut self) -> io::Result<()>;

    /// Current length.
    ///
    /// # Errors
    /// The OS error.
    fn file_len(&mut self) -> io::Result<u64>;

    /// Truncate or extend to `len`.
    ///
    /// # Errors
    /// The OS error.
    fn set_len(&mut self, len: u64) -> io::Result<()>;

    /// Reserve room for the first `len` bytes (`fallocate` with `FALLOC_FL_KEEP_SIZE`): the
    /// file's size and content do not change, so a file never ends in preallocated zeros,
    /// but later writes within `len` cannot fail for lack of space. A filesystem that cannot
    /// preallocate (`EOPNOTSUPP`, `ENOSYS`) is not an error: nothing is reserved. Nothing is
    /// made durable.
    ///
    /// # Errors
    /// The OS error, `ENOSPC` when the room is not there.
    fn preallocate(&mut self, len: u64) -> io::Result<()>;
}

/// `fallocate(FALLOC_FL_KEEP_SIZE)` of the first `len` bytes; see
/// [`DurableFile::preallocate`].
pub(super) fn fallocate_keep_size(file: &File, len: u64) -> io::Result<()> {
    use nix::errno::Errno;
    use nix::fcntl::{fallocate, FallocateFlags};
    let Ok(len) = i64::try_from(len) else {
        return Err(io::Error::from(Errno::EFBIG));
    };
    if len == 0 {
        return Ok(());
    }
    let fd = std::os::fd::AsRawFd::as_raw_fd(file);
    loop {
        match fallocate(fd, FallocateFlags::FALLOC_FL_KEEP_SIZE, 0, len) {
            Err(Errno::EINTR) => {}
            // This filesystem cannot reserve: writes allocate as they go.
            Err(Errno::EOPNOTSUPP | Errno::ENOSYS) => return Ok(()),
            r => return r.map_err(io::Error::from),
        }
    }
}
