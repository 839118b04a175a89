//! File descriptors on the ingest socket (docs/PROTOCOL.md, "Shared-memory transport"):
//! received with `recvmsg` (`SCM_RIGHTS`) into a connection's [`FdQueue`], and the
//! eventfds of `SHM_ATTACH` checked before anything is mapped (the ring fd's rule, a sealed
//! memfd of exactly the announced size, is `wshard_shm_ring::check_ring_fd`).
//!
//! Eventfd check: `/proc/self/fdinfo/N` of an eventfd has an `eventfd-count:` line (since
//! Linux 3.8); nothing else has.
//!
//! The one `unsafe` here takes ownership of the fds the kernel just installed.
#![allow(unsafe_code)]

use std::collections::VecDeque;
use std::io::{self, IoSliceMut};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags};
use wshard_ingest_proto::ring::SHM_ATTACH_FDS;
use wshard_ingest_proto::ProtoError;

/// The most fds one `sendmsg` can pass (Linux `SCM_MAX_FD`): the control buffer holds
/// that many, so the kernel never truncates it (a truncated `SCM_RIGHTS` could not be
/// iterated and its fds would leak).
const SCM_MAX_FD: usize = 253;

/// Received fds kept for the next `SHM_ATTACH` (exactly what it needs); more are closed at
/// once and counted, so a client cannot pile up descriptors in the daemon.
pub(crate) const MAX_QUEUED_FDS: usize = SHM_ATTACH_FDS;

/// File descriptors received on a connection, in arrival order, for `SHM_ATTACH`.
#[derive(Debug, Default)]
pub(crate) struct FdQueue {
    fds: VecDeque<OwnedFd>,
    /// Fds closed unused because the queue was full or the control data was truncated.
    dropped: usize,
    cmsg: Vec<u8>,
}

impl FdQueue {
    /// Take every queued fd (and the count of those dropped before), emptying the queue.
    pub(crate) fn take_all(&mut self) -> (Vec<OwnedFd>, usize) {
        let dropped = std::mem::take(&mut self.dropped);
        (self.fds.drain(..).collect(), dropped)
    }

    fn push(&mut self, fd: OwnedFd) {
        if self.fds.len() < MAX_QUEUED_FDS {
            self.fds.push_back(fd);
        } else {
            self.dropped += 1; // closed here, by drop
        }
    }
}

/// Read from `stream` like `read(2)`, but with `recvmsg(2)`, so that file descriptors
/// passed with `SCM_RIGHTS` are received (and queued in `queue`) instead of being
/// silently closed by the kernel.
///
/// # Errors
/// The socket error (a timeout is `WouldBlock`).
pub(crate) fn recv_with_fds(
    stream: &UnixStream,
    buf: &mut [u8],
    queue: &mut FdQueue,
) -> io::Result<usize> {
    if queue.cmsg.is_empty() {
        queue.cmsg = nix::cmsg_space!([RawFd; SCM_MAX_FD]);
    }
    let mut iov = [IoSliceMut::new(buf)];
    let mut cmsg = std::mem::take(&mut queue.cmsg);
    let result = recvmsg::<()>(
        stream.as_raw_fd(),
        &mut iov,
        Some(&mut cmsg),
        MsgFlags::MSG_CMSG_CLOEXEC,
    );
    let outcome = match result {
        Ok(msg) => {
            let mut received = Vec::new();
            match msg.cmsgs() {
                Ok(cmsgs) => {
                    for c in cmsgs {
                        if let ControlMessageOwned::ScmRights(fds) = c {
                            received.extend(fds);
                        }
                    }
                }
                Err(_) => {
                    tracing::warn!("control data truncated: passed fds lost");
                    queue.dropped += 1;
                }
            }
            Ok((msg.bytes, received))
        }
        Err(e) => Err(io::Error::from(e)),
    };
    queue.cmsg = cmsg;
    let (n, received) = outcome?;
    for fd in received {
        // SAFETY: `fd` was just installed in this process's fd table by the kernel for
        // this `recvmsg` (SCM_RIGHTS); nothing else knows it, so taking ownership (and
        // closing it on drop) is sound.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        queue.push(owned);
    }
    Ok(n)
}

/// A `BAD_SHM` error with `message`.
pub(super) fn bad_shm(message: String) -> ProtoError {
    ProtoError::BadShm { message }
}

/// Check that `fd` is an eventfd: its `/proc/self/fdinfo` entry has `eventfd-count:`.
pub(super) fn check_eventfd(fd: &OwnedFd, what: &str) -> Result<(), ProtoError> {
    let raw = fd.as_raw_fd();
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{raw}"))
        .map_err(|e| bad_shm(format!("SHM_ATTACH {what} fd: cannot read its fdinfo: {e}")))?;
    if info.lines().any(|l| l.starts_with("eventfd-count:")) {
        return Ok(());
    }
    let kind = std::fs::read_link(format!("/proc/self/fd/{raw}"))
        .map_or_else(|_| "unknown".into(), |p| p.display().to_string());
    Err(bad_shm(format!(
        "SHM_ATTACH {what} fd is not an eventfd (it is {kind})"
    )))
}
