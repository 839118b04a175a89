//! The pending batch of an [`EpisodeWriter`]: appending steps to it, and sending it, with
//! large payloads borrowed from the caller instead of copied.

use std::time::Instant;

use wshard_ingest_proto::{
    finish_batch, push_step_record, start_batch, FrameType, ProtoError, BATCH_HEADER_BYTES,
    LEN_BYTES, RECORD_HEADER_BYTES,
};

use super::EpisodeWriter;
use crate::error::Result;

/// Payload slices at least this long (camera frames, depth maps; not joint vectors) are not
/// copied into the pending batch when the call that pushes them also sends the batch (a
/// `push` that makes it due, every `push_batch`): the frame header and the record headers
/// (and the step's small payloads) are built in the pending buffer, and the large payloads
/// go to the kernel from the caller's memory in the same vectored `sendmsg`. The bytes on
/// the wire are the same either way.
///
/// Why: the kernel copies every byte into the socket anyway, so a copy into the pending
/// buffer first is pure overhead, and for large steps it is most of the client's CPU (a
/// 2 x 640x480x3 camera step is 1.8 MB a push). Why 64 KiB: a borrowed slice costs one
/// more iovec and breaks the batch into more pieces for the kernel to walk, a fixed cost
/// of well under a microsecond, while copying 64 KiB takes several microseconds, so above
/// this size borrowing clearly wins; below it payloads are small enough to batch by the
/// dozen, where one contiguous buffer per frame is the better thing to send. And 64 KiB
/// is a quarter of the default `batch_bytes` (256 KiB), so steps this large already make
/// batches of a few steps only.
const BORROW_MIN_PAYLOAD_BYTES: usize = 64 * 1024;

/// A payload slice of the pending batch that stays in the caller's memory until the batch
/// is sent: on the wire it goes at byte `at` of `EpisodeWriter::pending`, before the bytes
/// from `at` on. Lives only within one `push` / `push_batch` call.
#[derive(Clone, Copy, Debug)]
pub(super) struct Borrowed<'p> {
    at: usize,
    data: &'p [u8],
}

impl EpisodeWriter<'_> {
    /// Bytes of the pending batch frame, header and borrowed payloads included (every
    /// record has the same size); 0 when nothing is pending.
    pub(super) fn pending_frame_len(&self) -> usize {
        if self.pending_count == 0 {
            return 0;
        }
        let record = RECORD_HEADER_BYTES + self.step_bytes;
        (self.pending_count as usize)
            .saturating_mul(record)
            .saturating_add(BATCH_HEADER_BYTES)
    }

    /// Append one checked step to the pending batch, sending first if it would not fit.
    /// Payloads of [`BORROW_MIN_PAYLOAD_BYTES`] or more are not copied but added to
    /// `borrowed` (socket transport only): the caller must send the batch
    /// ([`EpisodeWriter::send_pending_with`]) or copy them in
    /// ([`EpisodeWriter::take_borrowed`]) before it returns.
    pub(super) fn append<'p>(
        &mut self,
        t_ns: i64,
        reward: f32,
        done: bool,
        payloads: &[&'p [u8]],
        borrowed: &mut Vec<Borrowed<'p>>,
    ) -> Result<u64> {
        let record = RECORD_HEADER_BYTES + self.step_bytes;
        if self.pending_count > 0
            && (self.pending_frame_len() + record > self.max_frame
                || self.pending_count == u32::MAX)
        {
            self.send_pending_with(borrowed)?;
        }
        if self.pending_count == 0 {
            self.pending.clear();
            start_batch(&mut self.pending);
            self.pending_since = Some(Instant::now());
        }
        let seq = self.next_seq;
        let borrow =
            self.ring.is_none() && payloads.iter().any(|p| p.len() >= BORROW_MIN_PAYLOAD_BYTES);
        if borrow {
            // The record header alone, then the small payloads copied and the large ones
            // noted where they go.
            push_step_record(&mut self.pending, seq, t_ns, reward, done, &[]);
            for &p in payloads {
                if p.len() >= BORROW_MIN_PAYLOAD_BYTES {
                    borrowed.push(Borrowed {
                        at: self.pending.len(),
                        data: p,
                    });
                } else {
                    self.pending.extend_from_slice(p);
                }
            }
        } else {
            push_step_record(&mut self.pending, seq, t_ns, reward, done, payloads);
        }
        self.pending_count += 1;
        self.next_seq += 1;
        Ok(seq)
    }

    /// Copy the `borrowed` payloads into the pending batch where they belong (the batch
    /// stays pending past the call that borrowed them).
    pub(super) fn take_borrowed(&mut self, borrowed: &mut Vec<Borrowed<'_>>) {
        let Some(first) = borrowed.first() else {
            return;
        };
        let base = first.at;
        let tail = self.pending.split_off(base.min(self.pending.len()));
        let extra: usize = borrowed.iter().map(|b| b.data.len()).sum();
        self.pending.reserve(extra + tail.len());
        let mut from = 0;
        for b in borrowed.iter() {
            let to = b.at.saturating_sub(base);
            self.pending
                .extend_from_slice(tail.get(from..to).unwrap_or_default());
            self.pending.extend_from_slice(b.data);
            from = to;
        }
        self.pending
            .extend_from_slice(tail.get(from..).unwrap_or_default());
        borrowed.clear();
    }

    pub(super) fn batch_due(&self) -> bool {
        let o = self.client.options();
        self.pending_frame_len() >= o.batch_bytes
            || self.pending_count as usize >= o.batch_steps
            || match (o.batch_delay, self.pending_since) {
                (Some(d), Some(t)) => t.elapsed() >= d,
                _ => false,
            }
    }

    /// Write the pending batch, if any (no payload borrowed).
    pub(super) fn send_pending(&mut self) -> Result<()> {
        self.send_pending_with(&mut Vec::new())
    }

    /// Write the pending batch, if any, with the `borrowed` payloads in their places
    /// (vectored, without copying them); `borrowed` is emptied.
    pub(super) fn send_pending_with(&mut self, borrowed: &mut Vec<Borrowed<'_>>) -> Result<()> {
        if self.pending_count == 0 {
            borrowed.clear();
            return Ok(());
        }
        if self.ring.is_some() {
            // `append` borrows nothing for a ring (a slot takes one contiguous copy).
            self.take_borrowed(borrowed);
        }
        if !borrowed.is_empty() {
            return self.send_pending_borrowed(borrowed);
        }
        finish_batch(&mut self.pending, self.pending_count)?;
        let r = match &mut self.ring {
            Some(ring) => {
                let client = &mut *self.client;
                let timeout = client.options().timeout;
                let records = self.pending.get(BATCH_HEADER_BYTES..).unwrap_or_default();
                ring.publish(records, self.pending_count, timeout, &mut || {
                    client.check_usable()
                })
            }
            None => self.client.write_all(&self.pending).map(|()| true),
        };
        self.sent(r)
    }

    /// [`EpisodeWriter::send_pending_with`] on the socket with payloads borrowed: the
    /// header (as `finish_batch` writes it, for the whole frame) is patched in `pending`,
    /// then the pieces of `pending` between the borrowed payloads and the payloads go out
    /// in order.
    pub(super) fn send_pending_borrowed(&mut self, borrowed: &mut Vec<Borrowed<'_>>) -> Result<()> {
        let header = match batch_header(self.pending_frame_len(), self.pending_count) {
            Ok(h) => h,
            Err(e) => {
                // As when `finish_batch` fails: the whole batch stays pending.
                self.take_borrowed(borrowed);
                return Err(e.into());
            }
        };
        if let Some(h) = self.pending.get_mut(..BATCH_HEADER_BYTES) {
            h.copy_from_slice(&header);
        }
        let mut parts: Vec<&[u8]> = Vec::with_capacity(2 * borrowed.len() + 1);
        let mut from = 0;
        for b in borrowed.iter() {
            parts.push(self.pending.get(from..b.at).unwrap_or_default());
            parts.push(b.data);
            from = b.at;
        }
        parts.push(self.pending.get(from..).unwrap_or_default());
        let r = self.client.write_all_parts(&mut parts).map(|()| true);
        borrowed.clear();
        self.sent(r)
    }

    /// The pending batch was written (`Ok(true)`), dropped by the ring's policy
    /// (`Ok(false)`) or failed: it is no longer pending.
    pub(super) fn sent(&mut self, r: Result<bool>) -> Result<()> {
        self.pending.clear();
        self.pending_count = 0;
        self.pending_since = None;
        let published = self.note(r)?;
        self.sent_seq = self.next_seq;
        if published {
            self.published_seq = self.next_seq;
        }
        Ok(())
    }

    /// `append`, then send the batch if it is due, with the step's large payloads straight
    /// from `payloads`; otherwise they are copied into the batch, which stays pending.
    pub(super) fn append_and_send_if_due(
        &mut self,
        t_ns: i64,
        reward: f32,
        done: bool,
        payloads: &[&[u8]],
    ) -> Result<u64> {
        let mut borrowed = Vec::new();
        let seq = self.append(t_ns, reward, done, payloads, &mut borrowed)?;
        if self.batch_due() {
            self.send_pending_with(&mut borrowed)?;
        } else {
            self.take_borrowed(&mut borrowed);
        }
        Ok(seq)
    }
}

/// The `TIMESTEP_BATCH` header of a frame of `frame_len` bytes holding `count` records,
/// byte for byte what [`finish_batch`] writes (which needs the whole frame in one buffer):
/// `body_len u32 | 0x04 | count u32`, little-endian.
fn batch_header(frame_len: usize, count: u32) -> Result<[u8; BATCH_HEADER_BYTES], ProtoError> {
    let body = frame_len.saturating_sub(LEN_BYTES);
    let body_len = u32::try_from(body).map_err(|_| ProtoError::TooLong {
        frame: "TIMESTEP_BATCH",
        field: "body_len".to_owned(),
        len: body,
        max: u32::MAX as usize,
    })?;
    let mut h = [0u8; BATCH_HEADER_BYTES];
    h[..4].copy_from_slice(&body_len.to_le_bytes());
    h[4] = FrameType::TimestepBatch.code();
    h[5..].copy_from_slice(&count.to_le_bytes());
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proto_batch_header_is_what_finish_batch_writes() {
        for (count, record, payload) in [(1u32, 21usize, 0u8), (3, 53, 7), (2, 1_843_249, 9)] {
            let mut frame = Vec::new();
            start_batch(&mut frame);
            frame.resize(BATCH_HEADER_BYTES + count as usize * record, payload);
            finish_batch(&mut frame, count).unwrap();
            let header = batch_header(frame.len(), count).unwrap();
            assert_eq!(header[..], frame[..BATCH_HEADER_BYTES]);
        }
        assert!(batch_header(LEN_BYTES + u32::MAX as usize + 1, 1).is_err());
    }
}
