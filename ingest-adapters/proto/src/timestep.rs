//! Decoded timesteps: [`Timestep`], [`TimestepRef`], [`TimestepBatch`] and iterating
//! records ([`Steps`]); one record's layout is [`crate::record`]'s.
//!
//! A `TIMESTEP_BATCH` is decoded into one owned buffer holding its records back to back
//! ([`TimestepBatch`]); iterating yields borrowed [`TimestepRef`]s, so decoding never
//! allocates per step or per channel. The payload size depends on the schema, so sizes are
//! checked by [`TimestepBatch::steps`] / [`TimestepBatch::validate`], not by the parser.

use crate::error::ProtoError;
use crate::record::{
    push_step_record, DONE_OFFSET, RECORD_HEADER_BYTES, REWARD_OFFSET, SEQ_OFFSET, T_NS_OFFSET,
};
use crate::wire::array_at;

/// One timestep, borrowed from a frame or a caller's buffer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimestepRef<'a> {
    pub seq: u64,
    pub t_ns: i64,
    pub reward: f32,
    pub done: bool,
    /// Every channel's payload in schema order, back to back.
    pub payload: &'a [u8],
}

/// A decoded `TIMESTEP` frame (one allocation: the payload).
#[derive(Clone, Debug, PartialEq)]
pub struct Timestep {
    pub seq: u64,
    pub t_ns: i64,
    pub reward: f32,
    pub done: bool,
    pub payload: Vec<u8>,
}

impl Timestep {
    /// Borrow as a [`TimestepRef`].
    #[must_use]
    pub fn as_ref(&self) -> TimestepRef<'_> {
        TimestepRef {
            seq: self.seq,
            t_ns: self.t_ns,
            reward: self.reward,
            done: self.done,
            payload: &self.payload,
        }
    }

    /// Check the payload against the schema's step size.
    ///
    /// # Errors
    /// [`ProtoError::PayloadSize`] naming the seq and both sizes.
    pub fn validate(&self, step_payload_bytes: usize) -> Result<(), ProtoError> {
        if self.payload.len() == step_payload_bytes {
            Ok(())
        } else {
            Err(ProtoError::PayloadSize {
                seq: self.seq,
                got: self.payload.len(),
                want: step_payload_bytes,
            })
        }
    }
}

/// A decoded `TIMESTEP_BATCH`: `count >= 1` records back to back in one buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct TimestepBatch {
    count: u32,
    records: Vec<u8>,
}

impl TimestepBatch {
    /// A batch from raw records (as [`push_step_record`] writes them).
    ///
    /// # Errors
    /// [`ProtoError::BadValue`] when `count` is 0 (`MALFORMED_FRAME`),
    /// [`ProtoError::BatchTooShort`] when `records` is shorter than `count` record headers
    /// (`PAYLOAD_SIZE`, as [`TimestepBatch::steps`] answers any other `count` that does not
    /// match the bytes).
    pub fn from_records(count: u32, records: Vec<u8>) -> Result<Self, ProtoError> {
        const FRAME: &str = "TIMESTEP_BATCH";
        if count == 0 {
            return Err(ProtoError::BadValue {
                frame: FRAME,
                field: "count".to_owned(),
                value: 0,
                expected: ">= 1",
            });
        }
        let need = u64::from(count) * RECORD_HEADER_BYTES as u64;
        if (records.len() as u64) < need {
            return Err(ProtoError::BatchTooShort {
                count,
                got: records.len(),
            });
        }
        Ok(Self { count, records })
    }

    /// A batch of `steps` (for tests and tools; clients use [`crate::BatchEncoder`]).
    ///
    /// # Errors
    /// As [`TimestepBatch::from_records`]; also when there are more than `u32::MAX` steps.
    pub fn from_steps<'a>(
        steps: impl IntoIterator<Item = TimestepRef<'a>>,
    ) -> Result<Self, ProtoError> {
        let mut records = Vec::new();
        let mut count = 0u64;
        for s in steps {
            push_step_record(&mut records, s.seq, s.t_ns, s.reward, s.done, &[s.payload]);
            count += 1;
        }
        let count = u32::try_from(count).map_err(|_| ProtoError::TooLong {
            frame: "TIMESTEP_BATCH",
            field: "count".to_owned(),
            len: usize::try_from(count).unwrap_or(usize::MAX),
            max: u32::MAX as usize,
        })?;
        Self::from_records(count, records)
    }

    /// Number of steps.
    #[must_use]
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The raw records, back to back.
    #[must_use]
    pub fn records(&self) -> &[u8] {
        &self.records
    }

    /// The records buffer, e.g. to reuse its allocation.
    #[must_use]
    pub fn into_records(self) -> Vec<u8> {
        self.records
    }

    /// The first record's seq.
    #[must_use]
    pub fn first_seq(&self) -> u64 {
        u64::from_le_bytes(array_at(&self.records, SEQ_OFFSET))
    }

    /// The seq after the last step (`first_seq + count`, saturating).
    #[must_use]
    pub fn end_seq(&self) -> u64 {
        self.first_seq().saturating_add(u64::from(self.count))
    }

    /// Check sizes against the schema, `done` flags and consecutive seqs, then iterate.
    ///
    /// # Errors
    /// [`ProtoError::PayloadSize`] (seq, per-step payload and schema size) when the records
    /// split evenly but into the wrong size, [`ProtoError::BatchSize`] when they do not split
    /// evenly, [`ProtoError::BadValue`] for a `done` other than 0/1 and
    /// [`ProtoError::Sequence`] when the seqs inside the batch are not consecutive.
    pub fn steps(&self, step_payload_bytes: usize) -> Result<Steps<'_>, ProtoError> {
        let count = usize::try_from(self.count).unwrap_or(usize::MAX);
        let first_seq = self.first_seq();
        let rec_len = RECORD_HEADER_BYTES.saturating_add(step_payload_bytes);
        if rec_len.checked_mul(count) != Some(self.records.len()) {
            let got = self.records.len();
            return Err(if got % count == 0 {
                ProtoError::PayloadSize {
                    seq: first_seq,
                    got: got / count - RECORD_HEADER_BYTES,
                    want: step_payload_bytes,
                }
            } else {
                ProtoError::BatchSize {
                    first_seq,
                    count: self.count,
                    got,
                    want: step_payload_bytes,
                }
            });
        }
        for (i, rec) in self.records.chunks_exact(rec_len).enumerate() {
            let seq = u64::from_le_bytes(array_at(rec, SEQ_OFFSET));
            match first_seq.checked_add(i as u64) {
                Some(expected) if expected == seq => {}
                expected => {
                    return Err(ProtoError::Sequence {
                        expected: expected.unwrap_or(u64::MAX),
                        got: seq,
                    })
                }
            }
            let done = rec[DONE_OFFSET];
            if done > 1 {
                return Err(ProtoError::BadValue {
                    frame: "TIMESTEP_BATCH",
                    field: format!("seq {seq} done"),
                    value: u64::from(done),
                    expected: "0 or 1",
                });
            }
        }
        Ok(Steps {
            inner: self.records.chunks_exact(rec_len),
        })
    }

    /// [`TimestepBatch::steps`] without the iterator.
    ///
    /// # Errors
    /// As [`TimestepBatch::steps`].
    pub fn validate(&self, step_payload_bytes: usize) -> Result<(), ProtoError> {
        self.steps(step_payload_bytes).map(|_| ())
    }

    /// Check that the batch starts at the seq the server expects next.
    ///
    /// # Errors
    /// [`ProtoError::Sequence`] naming both seqs.
    pub fn check_sequence(&self, expected: u64) -> Result<(), ProtoError> {
        check_sequence(expected, self.first_seq())
    }
}

/// Check that `got` is the seq the server expects next.
///
/// # Errors
/// [`ProtoError::Sequence`] naming both seqs.
pub fn check_sequence(expected: u64, got: u64) -> Result<(), ProtoError> {
    if expected == got {
        Ok(())
    } else {
        Err(ProtoError::Sequence { expected, got })
    }
}

/// Iterate over back-to-back records of `RECORD_HEADER_BYTES + step_payload_bytes` bytes
/// each, without checks (for records checked before, e.g. a journal's or the writer's). A
/// trailing partial record is ignored: callers check `len % record_len` first.
#[must_use]
pub fn iter_records(records: &[u8], step_payload_bytes: usize) -> Steps<'_> {
    Steps {
        inner: records.chunks_exact(RECORD_HEADER_BYTES.saturating_add(step_payload_bytes)),
    }
}

/// Iterator over the records of a [`TimestepBatch`] (validated) or of [`iter_records`].
#[derive(Clone, Debug)]
pub struct Steps<'a> {
    inner: std::slice::ChunksExact<'a, u8>,
}

impl<'a> Iterator for Steps<'a> {
    type Item = TimestepRef<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        let rec = self.inner.next()?;
        Some(TimestepRef {
            seq: u64::from_le_bytes(array_at(rec, SEQ_OFFSET)),
            t_ns: i64::from_le_bytes(array_at(rec, T_NS_OFFSET)),
            reward: f32::from_le_bytes(array_at(rec, REWARD_OFFSET)),
            done: rec[DONE_OFFSET] != 0,
            payload: &rec[RECORD_HEADER_BYTES..],
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl ExactSizeIterator for Steps<'_> {}
