//! [`FrameDecoder`]: a growable receive buffer that yields whole frames.
//!
//! ```
//! use wshard_ingest_proto::{encode, Frame, FrameDecoder};
//! let mut wire = Vec::new();
//! encode(&Frame::Flush, &mut wire).unwrap();
//! encode(&Frame::Durable { up_to_seq: 3 }, &mut wire).unwrap();
//! let mut dec = FrameDecoder::new(1 << 20);
//! // What a socket read loop does: read into `buffer_mut`, then `commit` the count.
//! let n = wire.len().min(dec.buffer_mut().len());
//! dec.buffer_mut()[..n].copy_from_slice(&wire[..n]);
//! dec.commit(n);
//! assert_eq!(dec.next_frame().unwrap(), Some(Frame::Flush));
//! assert_eq!(dec.next_frame().unwrap(), Some(Frame::Durable { up_to_seq: 3 }));
//! assert_eq!(dec.next_frame().unwrap(), None);
//! ```

use crate::codec::{check, parse, FrameStatus};
use crate::error::ProtoError;
use crate::frame::Frame;

/// Smallest free space [`FrameDecoder::buffer_mut`] offers.
pub const MIN_READ_BYTES: usize = 64 * 1024;

/// Accumulates bytes from a stream and splits them into frames.
///
/// After a fatal error (see [`ProtoError::is_fatal`]) the decoder keeps returning that error:
/// the stream can no longer be parsed. Non-fatal payload errors skip the bad frame.
#[derive(Debug)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    /// Start of unconsumed data.
    start: usize,
    /// End of valid data.
    end: usize,
    max_frame_bytes: u32,
    failed: Option<ProtoError>,
}

impl FrameDecoder {
    /// A decoder refusing frames whose `body_len` exceeds `max_frame_bytes`.
    #[must_use]
    pub fn new(max_frame_bytes: u32) -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            end: 0,
            max_frame_bytes,
            failed: None,
        }
    }

    /// The limit frames are checked against.
    #[must_use]
    pub fn max_frame_bytes(&self) -> u32 {
        self.max_frame_bytes
    }

    /// Bytes buffered and not yet returned as frames.
    #[must_use]
    pub fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// Append bytes (from anywhere).
    pub fn feed(&mut self, data: &[u8]) {
        self.reserve(data.len());
        self.buf[self.end..self.end + data.len()].copy_from_slice(data);
        self.end += data.len();
    }

    /// Free space to read into: at least [`MIN_READ_BYTES`], and for a large frame being
    /// received as much of what it still lacks as is already buffered, so the buffer doubles
    /// as the frame arrives (a large frame still takes few reads and few reallocations).
    /// The room grows with the bytes received, never with what a header merely announces:
    /// a peer that sends a 5-byte header for a 1 GiB frame and stalls costs no memory.
    /// Follow with [`FrameDecoder::commit`].
    pub fn buffer_mut(&mut self) -> &mut [u8] {
        let lacking = match check(&self.buf[self.start..self.end], self.max_frame_bytes) {
            Ok(FrameStatus::Incomplete { need }) => need.saturating_sub(self.buffered()),
            _ => 0,
        };
        let room = lacking.min(self.buffered()).max(MIN_READ_BYTES);
        self.reserve(room);
        &mut self.buf[self.end..]
    }

    /// Mark `n` bytes written into [`FrameDecoder::buffer_mut`] as received (clamped to the
    /// free space).
    pub fn commit(&mut self, n: usize) {
        self.end = (self.end + n).min(self.buf.len());
    }

    /// Make room for `extra` bytes after `end`: compact first, grow only if needed.
    fn reserve(&mut self, extra: usize) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.buf.len() - self.end >= extra {
            return;
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let want = self.end.saturating_add(extra);
        if self.buf.len() < want {
            self.buf.resize(want, 0);
        }
    }

    /// The next whole frame, `Ok(None)` when more bytes are needed.
    ///
    /// # Errors
    /// A fatal framing error (returned again on every later call), or a payload error for
    /// one frame, which is consumed: the next call continues with the frame after it.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, ProtoError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let avail = &self.buf[self.start..self.end];
        match check(avail, self.max_frame_bytes) {
            Ok(FrameStatus::Incomplete { .. }) => Ok(None),
            Ok(FrameStatus::Complete { len }) => {
                let result = parse(&avail[..len]);
                self.start += len;
                if self.start == self.end {
                    self.start = 0;
                    self.end = 0;
                }
                match result {
                    Ok(frame) => Ok(Some(frame)),
                    Err(e) => {
                        if e.is_fatal() {
                            self.failed = Some(e.clone());
                        }
                        Err(e)
                    }
                }
            }
            Err(e) => {
                self.failed = Some(e.clone());
                Err(e)
            }
        }
    }
}
