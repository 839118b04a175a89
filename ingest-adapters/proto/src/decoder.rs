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
//!
//! Large `TIMESTEP_BATCH` frames can skip the receive buffer
//! ([`FrameDecoder::direct_batches`]): once their 9-byte header is in, `buffer_mut` hands out
//! the batch's own records buffer, so the records are written once (by the read) into the
//! `Vec` the batch then owns, instead of into the receive buffer and copied from there. The
//! caller may lend that `Vec` ([`FrameDecoder::give_records_buffer`]), e.g. one the
//! consumer of an earlier batch is done with.

use crate::batch::BATCH_HEADER_BYTES;
use crate::codec::{batch_frame, check, check_version, parse_reusing, FrameStatus};
use crate::error::ProtoError;
use crate::frame::Frame;
use crate::frame_header::{FrameType, LEN_BYTES};
use crate::version::ProtocolVersion;
use crate::wire::array_at;

/// Smallest free space [`FrameDecoder::buffer_mut`] offers (except to the rest of a batch
/// received directly, see [`FrameDecoder::direct_batches`]).
pub const MIN_READ_BYTES: usize = 64 * 1024;

/// A `TIMESTEP_BATCH` received straight into its records buffer: its header is consumed,
/// `records[..filled]` holds what arrived of its `want` bytes of records.
#[derive(Clone, Copy, Debug)]
struct Direct {
    count: u32,
    want: usize,
    filled: usize,
}

/// Accumulates bytes from a stream and splits them into frames.
///
/// A decoder knows the frame types of one protocol version
/// ([`FrameDecoder::set_protocol_version`]), version 1 until told otherwise: a frame type of
/// a later version is a fatal `UNKNOWN_FRAME`, as on a server of that version. A server
/// sets the version its `HELLO_OK` answered before it asks for the next frame.
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
    /// The frame types known are this version's.
    version: ProtocolVersion,
    failed: Option<ProtoError>,
    /// Batches with at least this many bytes of records are received directly.
    direct_min: Option<usize>,
    /// The batch being received directly, into `records`.
    direct: Option<Direct>,
    /// The records of the batch in `direct`; only `..filled` is its data, bytes past that
    /// are left from a lent buffer's earlier use and are overwritten, never returned.
    records: Vec<u8>,
    /// A lent buffer for the next batch's records.
    spare: Option<Vec<u8>>,
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
            version: ProtocolVersion::V1,
            failed: None,
            direct_min: None,
            direct: None,
            records: Vec::new(),
            spare: None,
        }
    }

    /// Receive `TIMESTEP_BATCH` frames with at least `min_records` bytes of records
    /// directly: once the frame's header (`body_len`, type, `count`) is buffered and the
    /// rest has not all arrived, what arrived of the records moves to the batch's records
    /// buffer (a lent one if any), and [`FrameDecoder::buffer_mut`] hands out the free part
    /// of that buffer, up to the batch's last byte and never past it (the next frame is
    /// read into the receive buffer again). The frames, errors and their order are the same
    /// as without it; the records buffer grows with the bytes received, as the receive
    /// buffer does.
    #[must_use]
    pub fn direct_batches(mut self, min_records: usize) -> Self {
        self.direct_min = Some(min_records);
        self
    }

    /// The same decoder, knowing the frame types of `version`.
    #[must_use]
    pub fn with_protocol_version(mut self, version: ProtocolVersion) -> Self {
        self.version = version;
        self
    }

    /// Know the frame types of `version` from the next frame on (frames already returned
    /// stay returned; the bytes buffered after them are checked against `version`).
    pub fn set_protocol_version(&mut self, version: ProtocolVersion) {
        self.version = version;
    }

    /// The version whose frame types are known.
    #[must_use]
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.version
    }

    /// The limit frames are checked against.
    #[must_use]
    pub fn max_frame_bytes(&self) -> u32 {
        self.max_frame_bytes
    }

    /// Bytes buffered and not yet returned as frames (those of a batch being received
    /// directly included).
    #[must_use]
    pub fn buffered(&self) -> usize {
        let direct = self
            .direct
            .map_or(0, |d| BATCH_HEADER_BYTES.saturating_add(d.filled));
        self.end - self.start + direct
    }

    /// `true` when no buffer is lent: [`FrameDecoder::give_records_buffer`] would keep one.
    #[must_use]
    pub fn needs_records_buffer(&self) -> bool {
        self.spare.is_none()
    }

    /// Lend a buffer for the records of the next `TIMESTEP_BATCH` (whatever its size, and
    /// whether received directly or not), to reuse its allocation. Its contents do not
    /// matter: the batch gets exactly its own records. The decoder keeps one such buffer;
    /// `buf` is dropped when it already has one.
    pub fn give_records_buffer(&mut self, buf: Vec<u8>) {
        if self.spare.is_none() {
            self.spare = Some(buf);
        }
    }

    /// Append bytes (from anywhere).
    pub fn feed(&mut self, mut data: &[u8]) {
        if let Some(d) = &mut self.direct {
            let n = (d.want - d.filled).min(data.len());
            let end = d.filled + n;
            if self.records.len() < end {
                self.records.resize(end, 0);
            }
            self.records[d.filled..end].copy_from_slice(&data[..n]);
            d.filled = end;
            data = &data[n..];
        }
        if data.is_empty() {
            return;
        }
        self.reserve(data.len());
        self.buf[self.end..self.end + data.len()].copy_from_slice(data);
        self.end += data.len();
    }

    /// Free space to read into: at least [`MIN_READ_BYTES`], and for a large frame being
    /// received as much of what it still lacks as is already buffered, so the buffer doubles
    /// as the frame arrives (a large frame still takes few reads and few reallocations).
    /// The room grows with the bytes received, never with what a header merely announces:
    /// a peer that sends a 5-byte header for a 1 GiB frame and stalls costs no memory.
    /// While a batch is received directly ([`FrameDecoder::direct_batches`]), the room is in
    /// its records buffer, grows the same way (or is what a lent buffer already holds), and
    /// ends where the batch ends: it may then be smaller than [`MIN_READ_BYTES`], never
    /// empty.
    /// Follow with [`FrameDecoder::commit`].
    pub fn buffer_mut(&mut self) -> &mut [u8] {
        if self.direct.is_none() {
            self.start_direct();
        }
        match self.direct {
            Some(d) if d.filled < d.want => {
                let lacking = d.want - d.filled;
                let received = BATCH_HEADER_BYTES.saturating_add(d.filled);
                let grown = d.filled + lacking.min(received.max(MIN_READ_BYTES));
                // A lent buffer's length is memory already there: use it whole.
                let end = grown.max(self.records.len().min(d.want));
                if self.records.len() < end {
                    self.records.resize(end, 0);
                }
                &mut self.records[d.filled..end]
            }
            _ => self.buffer_room(),
        }
    }

    /// The receive buffer's free space (see [`FrameDecoder::buffer_mut`]).
    fn buffer_room(&mut self) -> &mut [u8] {
        let held = self.end - self.start;
        let lacking = match check(&self.buf[self.start..self.end], self.max_frame_bytes) {
            Ok(FrameStatus::Incomplete { need }) => need.saturating_sub(held),
            _ => 0,
        };
        let room = lacking.min(held).max(MIN_READ_BYTES);
        self.reserve(room);
        &mut self.buf[self.end..]
    }

    /// Mark `n` bytes written into [`FrameDecoder::buffer_mut`] as received (clamped to the
    /// free space).
    pub fn commit(&mut self, n: usize) {
        match &mut self.direct {
            Some(d) if d.filled < d.want => {
                let room_end = self.records.len().min(d.want);
                d.filled = d.filled.saturating_add(n).min(room_end);
            }
            _ => self.end = (self.end + n).min(self.buf.len()),
        }
    }

    /// When direct batches are on and the buffered bytes are the start of a large enough
    /// `TIMESTEP_BATCH` (header whole, records not), move its records to their own buffer.
    fn start_direct(&mut self) {
        let Some(min) = self.direct_min else { return };
        if self.failed.is_some() {
            return;
        }
        let avail = &self.buf[self.start..self.end];
        if avail.len() < BATCH_HEADER_BYTES || avail[LEN_BYTES] != FrameType::TimestepBatch.code() {
            return;
        }
        // The size limit and type are checked as for any frame; a frame that errors or is
        // complete is left to `next_frame`.
        let Ok(FrameStatus::Incomplete { need }) = check(avail, self.max_frame_bytes) else {
            return;
        };
        let Some(want) = need.checked_sub(BATCH_HEADER_BYTES) else {
            return;
        };
        if want < min {
            return;
        }
        let count = u32::from_le_bytes(array_at(avail, LEN_BYTES + 1));
        // Incomplete: everything buffered belongs to this frame, and is less than it.
        let have = &avail[BATCH_HEADER_BYTES..];
        let mut records = self.spare.take().unwrap_or_default();
        if records.len() < have.len() {
            records.resize(have.len(), 0);
        }
        records[..have.len()].copy_from_slice(have);
        self.direct = Some(Direct {
            count,
            want,
            filled: have.len(),
        });
        self.records = records;
        self.start = 0;
        self.end = 0;
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
        if let Some(d) = self.direct {
            if d.filled < d.want {
                return Ok(None);
            }
            self.direct = None;
            let mut records = std::mem::take(&mut self.records);
            // A lent buffer may be longer than this batch: keep exactly its records.
            records.truncate(d.want);
            return self.finish_frame(batch_frame(d.count, records));
        }
        let avail = &self.buf[self.start..self.end];
        match check_version(avail, self.max_frame_bytes, self.version) {
            Ok(FrameStatus::Incomplete { .. }) => Ok(None),
            Ok(FrameStatus::Complete { len }) => {
                let result = parse_reusing(&avail[..len], &mut self.spare);
                self.start += len;
                if self.start == self.end {
                    self.start = 0;
                    self.end = 0;
                }
                self.finish_frame(result)
            }
            Err(e) => {
                self.failed = Some(e.clone());
                Err(e)
            }
        }
    }

    /// A parsed frame, or its error (remembered when fatal).
    fn finish_frame(
        &mut self,
        result: Result<Frame, ProtoError>,
    ) -> Result<Option<Frame>, ProtoError> {
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
}
