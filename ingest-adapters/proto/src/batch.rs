//! Writing `TIMESTEP_BATCH` frames straight into an output buffer, without building
//! [`crate::Frame`]s or copying payloads twice.
//!
//! Layout written: `body_len u32 | 0x04 | count u32 | records...`; the header is reserved by
//! [`start_batch`] and patched by [`finish_batch`] once the records are in place.

use crate::error::ProtoError;
use crate::frame_header::{code, LEN_BYTES};
use crate::record::push_step_record;

/// Bytes of a `TIMESTEP_BATCH` body before its records: frame_type 1 + count 4.
pub const BATCH_OVERHEAD_BYTES: usize = 5;

/// Bytes of `body_len | frame_type | count` before the first record.
pub const BATCH_HEADER_BYTES: usize = 9;

// A batch body starts with its frame type and count; the frame, with `body_len` before it.
const _: () = {
    use std::mem::size_of;
    assert!(BATCH_OVERHEAD_BYTES == size_of::<u8>() + size_of::<u32>());
    assert!(BATCH_HEADER_BYTES == LEN_BYTES + BATCH_OVERHEAD_BYTES);
};

/// Reserve a batch header at the end of `out`; returns its offset for [`finish_batch`].
pub fn start_batch(out: &mut Vec<u8>) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0u8; BATCH_HEADER_BYTES]);
    start
}

/// Patch the header of the batch that starts at `frame[0]` and runs to the end of `frame`.
///
/// # Errors
/// [`ProtoError::BadValue`] when `count` is 0, [`ProtoError::TooLong`] when the body does
/// not fit `u32` or `frame` is shorter than a header.
pub fn finish_batch(frame: &mut [u8], count: u32) -> Result<(), ProtoError> {
    const FRAME: &str = "TIMESTEP_BATCH";
    if count == 0 {
        return Err(ProtoError::BadValue {
            frame: FRAME,
            field: "count".to_owned(),
            value: 0,
            expected: ">= 1",
        });
    }
    if frame.len() < BATCH_HEADER_BYTES {
        return Err(ProtoError::Truncated {
            frame: FRAME,
            field: "header".to_owned(),
            need: BATCH_HEADER_BYTES,
            have: frame.len(),
        });
    }
    let body = frame.len() - LEN_BYTES;
    let body_len = u32::try_from(body).map_err(|_| ProtoError::TooLong {
        frame: FRAME,
        field: "body_len".to_owned(),
        len: body,
        max: u32::MAX as usize,
    })?;
    frame[0..4].copy_from_slice(&body_len.to_le_bytes());
    frame[4] = code::TIMESTEP_BATCH;
    frame[5..9].copy_from_slice(&count.to_le_bytes());
    Ok(())
}

/// Builds one `TIMESTEP_BATCH` frame at the end of a borrowed buffer.
///
/// Dropping the encoder without [`BatchEncoder::finish`] removes what it wrote.
///
/// ```
/// use wshard_ingest_proto::{BatchEncoder, FrameDecoder, Frame};
/// let mut out = Vec::new();
/// let mut enc = BatchEncoder::new(&mut out);
/// enc.push_step(0, 100, 0.5, false, &[&[1, 2], &[3]]);
/// enc.push_step(1, 200, 0.0, true, &[&[4, 5], &[6]]);
/// enc.finish().unwrap();
/// let mut dec = FrameDecoder::new(1 << 20);
/// dec.feed(&out);
/// let Some(Frame::TimestepBatch(batch)) = dec.next_frame().unwrap() else { panic!() };
/// let steps: Vec<_> = batch.steps(3).unwrap().collect();
/// assert_eq!(steps[1].payload, &[4, 5, 6]);
/// ```
#[derive(Debug)]
pub struct BatchEncoder<'a> {
    out: &'a mut Vec<u8>,
    start: usize,
    count: u64,
    finished: bool,
}

impl<'a> BatchEncoder<'a> {
    /// Start a batch at the end of `out`.
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        let start = start_batch(out);
        Self {
            out,
            start,
            count: 0,
            finished: false,
        }
    }

    /// Append one step; `payloads` are the channels' payloads in schema order.
    pub fn push_step(&mut self, seq: u64, t_ns: i64, reward: f32, done: bool, payloads: &[&[u8]]) {
        push_step_record(self.out, seq, t_ns, reward, done, payloads);
        self.count += 1;
    }

    /// Steps pushed so far.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Bytes of the frame so far, header included.
    #[must_use]
    pub fn frame_len(&self) -> usize {
        self.out.len() - self.start
    }

    /// Patch the header. With no step pushed nothing stays in `out` and 0 is returned;
    /// otherwise the frame's length in bytes.
    ///
    /// # Errors
    /// [`ProtoError::TooLong`] when the batch exceeds what `count`/`body_len` can express;
    /// the partial frame is removed from `out`.
    pub fn finish(mut self) -> Result<usize, ProtoError> {
        if self.count == 0 {
            return Ok(0);
        }
        let count = u32::try_from(self.count).map_err(|_| ProtoError::TooLong {
            frame: "TIMESTEP_BATCH",
            field: "count".to_owned(),
            len: usize::try_from(self.count).unwrap_or(usize::MAX),
            max: u32::MAX as usize,
        })?;
        finish_batch(&mut self.out[self.start..], count)?;
        self.finished = true;
        Ok(self.out.len() - self.start)
    }
}

impl Drop for BatchEncoder<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.out.truncate(self.start);
        }
    }
}
