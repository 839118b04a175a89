//! Writing to the connection's socket without `SIGPIPE` (`sendmsg` with `MSG_NOSIGNAL`):
//! several buffers back to back in vectored writes, and one frame with file descriptors
//! attached (`SCM_RIGHTS`, for `SHM_ATTACH`).

use std::io::{self, IoSlice, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;

use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};

/// Most slices one `sendmsg` takes (Linux's `UIO_MAXIOV`); longer lists take several calls.
const MAX_IOV: usize = 1024;

/// Send every byte of `parts`, in order, with `sendmsg(MSG_NOSIGNAL)`: vectored like
/// `writev`, and like std's `UnixStream::write` (which `write_all` uses) a closed peer is
/// an `EPIPE` error, never a `SIGPIPE`.
pub(crate) fn send_all_parts(stream: &UnixStream, parts: &mut [&[u8]]) -> io::Result<()> {
    let fd = stream.as_raw_fd();
    write_all_parts_with(parts, |iov| {
        sendmsg::<()>(fd, iov, &[], MsgFlags::MSG_NOSIGNAL, None).map_err(io::Error::from)
    })
}

/// Write every byte of `parts`, in order, with `write_vectored` (up to [`MAX_IOV`] slices a
/// call): short writes (the socket's write timeout ended with part of the data taken, a
/// signal) continue where they stopped, `Interrupted` retries, a write of 0 is `WriteZero`.
fn write_all_parts_with(
    mut parts: &mut [&[u8]],
    mut write_vectored: impl FnMut(&[IoSlice<'_>]) -> io::Result<usize>,
) -> io::Result<()> {
    advance(&mut parts, 0);
    let mut iov: Vec<IoSlice<'_>> = Vec::with_capacity(parts.len().min(MAX_IOV));
    while !parts.is_empty() {
        iov.clear();
        iov.extend(parts.iter().take(MAX_IOV).map(|p| IoSlice::new(p)));
        match write_vectored(&iov) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => advance(&mut parts, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Drop the first `n` bytes of `parts`: the slices they cover entirely (and empty ones),
/// then the front of the next. What `IoSlice::advance_slices` does, which needs Rust 1.81
/// (this workspace's `rust-version` is 1.80).
fn advance<'a>(parts: &mut &mut [&'a [u8]], mut n: usize) {
    let mut whole = 0;
    for p in parts.iter() {
        if p.len() > n {
            break;
        }
        n -= p.len();
        whole += 1;
    }
    let rest = std::mem::take(parts);
    *parts = rest.get_mut(whole..).unwrap_or_default();
    if let Some(first) = parts.first_mut() {
        let s: &'a [u8] = first;
        *first = s.get(n..).unwrap_or_default();
    }
}

/// Write `bytes` (one encoded frame) to `stream` with `fds` attached to its first byte
/// (`SCM_RIGHTS`); the rest, if the kernel takes only part, with plain writes.
///
/// # Errors
/// The socket error.
pub(crate) fn send_with_fds(
    stream: &mut UnixStream,
    bytes: &[u8],
    fds: &[RawFd],
) -> io::Result<()> {
    let cmsg = [ControlMessage::ScmRights(fds)];
    let n = loop {
        match sendmsg::<()>(
            stream.as_raw_fd(),
            &[IoSlice::new(bytes)],
            &cmsg,
            MsgFlags::MSG_NOSIGNAL,
            None,
        ) {
            Ok(n) => break n,
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(io::Error::from(e)),
        }
    };
    stream.write_all(&bytes[n.min(bytes.len())..])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run `write_all_parts_with` on `parts` with a writer that takes at most `max` bytes a
    /// call and fails with `Interrupted` every third call; returns the bytes and the calls.
    fn gather(parts: &[&[u8]], max: usize) -> (Vec<u8>, usize) {
        let mut parts = parts.to_vec();
        let mut out = Vec::new();
        let mut calls = 0;
        write_all_parts_with(&mut parts, |iov| {
            calls += 1;
            assert!(iov.len() <= MAX_IOV);
            assert!(
                !iov.first().is_some_and(|s| s.is_empty()),
                "leading empty slice"
            );
            if calls % 3 == 0 {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let mut left = max;
            for s in iov {
                let n = s.len().min(left);
                out.extend_from_slice(&s[..n]);
                left -= n;
                if left == 0 {
                    break;
                }
            }
            Ok(max - left)
        })
        .unwrap();
        (out, calls)
    }

    #[test]
    fn proto_write_all_parts_survives_short_and_interrupted_writes() {
        let a: Vec<u8> = (0..100u8).collect();
        let b: Vec<u8> = (100..=255u8).collect();
        let parts: [&[u8]; 6] = [&[], &a, &[], &[], &b, &[7]];
        let want = [&a[..], &b[..], &[7]].concat();
        for max in [1, 2, 3, 7, 99, 100, 101, 156, 256, 257, 1000] {
            let (got, _) = gather(&parts, max);
            assert_eq!(got, want, "max {max}");
        }
        let (got, calls) = gather(&[&[], &[]], 5);
        assert!(got.is_empty());
        assert_eq!(calls, 0, "nothing to write: no call");
    }

    #[test]
    fn proto_write_all_parts_more_slices_than_one_call_takes() {
        let bytes: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
        let parts: Vec<&[u8]> = bytes.chunks(1).collect();
        let (got, calls) = gather(&parts, usize::MAX);
        assert_eq!(got, bytes);
        assert_eq!(calls, 4, "1024 + 1024 + (Interrupted) + 952 slices");
    }

    #[test]
    fn proto_write_all_parts_write_zero_and_errors() {
        let mut parts: [&[u8]; 1] = [b"abc"];
        let e = write_all_parts_with(&mut parts, |_| Ok(0)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WriteZero);
        let mut parts: [&[u8]; 1] = [b"abc"];
        let e = write_all_parts_with(&mut parts, |_| Err(io::ErrorKind::BrokenPipe.into()))
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe);
    }

    #[test]
    fn proto_advance_drops_whole_then_partial_slices() {
        let (a, b, c): (&[u8], &[u8], &[u8]) = (b"abc", b"", b"defg");
        let mut store = [a, b, c];
        let mut parts: &mut [&[u8]] = &mut store;
        advance(&mut parts, 3);
        assert_eq!(
            parts,
            [b"defg" as &[u8]],
            "a whole slice and the empty one after it"
        );
        advance(&mut parts, 1);
        assert_eq!(parts, [b"efg" as &[u8]]);
        advance(&mut parts, 3);
        assert!(parts.is_empty());
        advance(&mut parts, 0);
        assert!(parts.is_empty());
    }
}
