//! The rule a ring memfd must keep before it is mapped (docs/PROTOCOL.md, "Shared-memory
//! transport"): a regular file (a memfd), sealed against shrinking and growing, of exactly
//! the size its geometry gives. The size is read after the seals are seen: from then on it
//! cannot change, so a mapping of it can never extend past the end of the file (no
//! `SIGBUS`, whatever the other process does).

use std::os::fd::{AsRawFd, BorrowedFd};

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, SealFlag};
use nix::libc::mode_t;
use nix::sys::stat::{fstat, SFlag};

/// Why a ring fd may not be mapped. The text names the fd as `SHM_ATTACH` does, so that a
/// server can send it as the message of `ERROR{BAD_SHM}`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RingFdError {
    #[error("SHM_ATTACH ring fd: fstat: {0}")]
    Stat(Errno),
    #[error("SHM_ATTACH ring fd is not a memfd (st_mode {mode:#o})")]
    NotMemfd { mode: mode_t },
    #[error("SHM_ATTACH ring fd has no seals (not a memfd?): {0}")]
    NoSeals(Errno),
    #[error("SHM_ATTACH ring fd seals {seals:?} lack F_SEAL_SHRINK | F_SEAL_GROW")]
    Unsealed { seals: SealFlag },
    #[error("SHM_ATTACH ring fd is {size} bytes, expected {want} (4096 + slot_size x slot_count)")]
    Size { size: u64, want: u64 },
}

/// Check the ring memfd `fd`: a regular file, sealed against shrinking and growing, of
/// exactly `want` bytes (`ring::ring_bytes` of its geometry).
///
/// # Errors
/// [`RingFdError`] naming the first rule broken.
pub fn check_ring_fd(fd: BorrowedFd<'_>, want: u64) -> Result<(), RingFdError> {
    let stat = || fstat(fd.as_raw_fd()).map_err(RingFdError::Stat);
    let st = stat()?;
    let kind = SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits());
    if kind != SFlag::S_IFREG {
        return Err(RingFdError::NotMemfd { mode: st.st_mode });
    }
    let seals = fcntl(fd.as_raw_fd(), FcntlArg::F_GET_SEALS).map_err(RingFdError::NoSeals)?;
    let seals = SealFlag::from_bits_truncate(seals);
    if !seals.contains(SealFlag::F_SEAL_SHRINK | SealFlag::F_SEAL_GROW) {
        return Err(RingFdError::Unsealed { seals });
    }
    let size = u64::try_from(stat()?.st_size).unwrap_or(0);
    if size != want {
        return Err(RingFdError::Size { size, want });
    }
    Ok(())
}
