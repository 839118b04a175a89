//! Reading one bounded request from a stream before a deadline, so that a slow or hostile
//! client costs one thread for a few seconds and never more than a few KiB.

use std::io::{ErrorKind, Read};
use std::time::{Duration, Instant};

/// How long each `read` may block (the stream's read timeout must be at most this).
pub const READ_SLICE: Duration = Duration::from_millis(100);

/// Why no complete request was read.
#[derive(Debug)]
pub enum ReadFailure {
    /// `max` bytes arrived without the terminator.
    TooLarge {
        max: usize,
    },
    /// The deadline passed first.
    TimedOut {
        after: Duration,
    },
    /// The peer closed without sending anything.
    Closed,
    Io(std::io::Error),
}

/// Read until `terminator` (returned without it and what follows), at most `max` bytes in
/// all, before `timeout`. End of stream after some bytes counts as the end of the request.
///
/// # Errors
/// [`ReadFailure`].
pub fn read_request(
    r: &mut impl Read,
    terminator: &[u8],
    max: usize,
    timeout: Duration,
) -> Result<Vec<u8>, ReadFailure> {
    let start = Instant::now();
    let mut buf: Vec<u8> = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(end) = find(&buf, terminator) {
            buf.truncate(end);
            return Ok(buf);
        }
        if buf.len() >= max {
            return Err(ReadFailure::TooLarge { max });
        }
        if start.elapsed() >= timeout {
            return Err(ReadFailure::TimedOut { after: timeout });
        }
        let room = (max - buf.len()).min(chunk.len());
        match r.read(&mut chunk[..room]) {
            Ok(0) if buf.is_empty() => return Err(ReadFailure::Closed),
            Ok(0) => return Ok(buf),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(ReadFailure::Io(e)),
        }
    }
}

/// After the reply: read and discard what the peer still sends (at most `max_bytes`, for
/// at most `max_time`, until it closes), so closing does not reset the connection and
/// destroy the reply before the peer has read it.
pub fn drain(r: &mut impl Read, max_bytes: usize, max_time: Duration) {
    let start = Instant::now();
    let mut left = max_bytes;
    let mut chunk = [0u8; 4096];
    while left > 0 && start.elapsed() < max_time {
        match r.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => left = left.saturating_sub(n),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(_) => return,
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_read_request_bounds() {
        let t = Duration::from_secs(1);
        let mut ok: &[u8] = b"{\"verb\":\"status\"}\nrest";
        assert_eq!(
            read_request(&mut ok, b"\n", 64, t).ok(),
            Some(b"{\"verb\":\"status\"}".to_vec())
        );
        let mut eof: &[u8] = b"abc";
        assert_eq!(
            read_request(&mut eof, b"\n", 64, t).ok(),
            Some(b"abc".to_vec())
        );
        let mut empty: &[u8] = b"";
        assert!(matches!(
            read_request(&mut empty, b"\n", 64, t),
            Err(ReadFailure::Closed)
        ));
        let big = vec![b'x'; 100];
        assert!(matches!(
            read_request(&mut big.as_slice(), b"\n", 64, t),
            Err(ReadFailure::TooLarge { max: 64 })
        ));
        let mut http: &[u8] = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
        assert_eq!(
            read_request(&mut http, b"\r\n\r\n", 64, t).ok(),
            Some(b"GET /metrics HTTP/1.1\r\nHost: x".to_vec())
        );
    }
}
