//! One channel of one stream over the whole stream: its steps, kept as one segment per chunk.
//!
//! A segment is either a view into a memory-mapped chunk (an uncompressed block: no copy) or
//! bytes owned after decompression. [`ChannelData::contiguous`] gives the whole channel as
//! one slice when it is one segment (a single chunk), which is what zero-copy consumers
//! (NumPy arrays over the map) need; [`ChannelData::step`] reads any step across segments.

use std::borrow::Cow;
use std::sync::Arc;

use crate::episode::{DType, Lane};
use crate::read::MappedShard;

/// Where a segment's bytes live.
#[derive(Debug)]
enum SegmentBytes {
    /// `start..end` of a mapped chunk file.
    Mapped {
        shard: Arc<MappedShard>,
        start: usize,
        end: usize,
    },
    Owned(Vec<u8>),
}

#[derive(Debug)]
struct Segment {
    bytes: SegmentBytes,
    /// First step of the segment in the stream.
    first_step: u64,
}

impl Segment {
    fn bytes(&self) -> &[u8] {
        match &self.bytes {
            // The range was checked against the map when the segment was made.
            SegmentBytes::Mapped { shard, start, end } => shard
                .reader()
                .source()
                .get(*start..*end)
                .unwrap_or_default(),
            SegmentBytes::Owned(v) => v,
        }
    }
}

/// A segment whose length is not a whole number of the channel's steps.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("channel `{channel}`: {bytes} bytes are not {steps} steps of {step_bytes} bytes")]
pub struct SegmentLengthError {
    pub channel: String,
    pub bytes: u64,
    pub steps: u64,
    pub step_bytes: u64,
}

/// The steps of one channel of a stream.
#[derive(Debug)]
pub struct ChannelData {
    /// Channel id (the block name without its `signal/` or `action/` prefix).
    pub name: String,
    pub lane: Lane,
    pub dtype: DType,
    /// Per-step shape (without the step axis).
    pub shape: Vec<u64>,
    step_bytes: usize,
    segments: Vec<Segment>,
    steps: u64,
}

impl ChannelData {
    /// A channel with no steps yet.
    #[must_use]
    pub fn new(name: impl Into<String>, lane: Lane, dtype: DType, shape: Vec<u64>) -> Self {
        let step_bytes = shape
            .iter()
            .try_fold(dtype.size(), |acc, &d| {
                usize::try_from(d).ok().and_then(|d| acc.checked_mul(d))
            })
            .unwrap_or(usize::MAX);
        Self {
            name: name.into(),
            lane,
            dtype,
            shape,
            step_bytes,
            segments: Vec::new(),
            steps: 0,
        }
    }

    fn check(&self, len: usize, steps: u64) -> Result<(), SegmentLengthError> {
        let want = usize::try_from(steps)
            .ok()
            .and_then(|s| s.checked_mul(self.step_bytes));
        if want == Some(len) {
            Ok(())
        } else {
            Err(SegmentLengthError {
                channel: self.name.clone(),
                bytes: len as u64,
                steps,
                step_bytes: self.step_bytes as u64,
            })
        }
    }

    fn push(&mut self, bytes: SegmentBytes, steps: u64) {
        if steps == 0 {
            return;
        }
        self.segments.push(Segment {
            bytes,
            first_step: self.steps,
        });
        self.steps += steps;
    }

    /// Append `steps` steps held in `data` (little-endian, step-major).
    ///
    /// # Errors
    /// [`SegmentLengthError`] when `data` is not `steps` whole steps.
    pub fn push_owned(&mut self, data: Vec<u8>, steps: u64) -> Result<(), SegmentLengthError> {
        self.check(data.len(), steps)?;
        self.push(SegmentBytes::Owned(data), steps);
        Ok(())
    }

    /// Append `steps` steps held in `shard`'s map at `start..end`.
    pub(crate) fn push_mapped(
        &mut self,
        shard: Arc<MappedShard>,
        start: usize,
        end: usize,
        steps: u64,
    ) -> Result<(), SegmentLengthError> {
        let len = end.saturating_sub(start);
        if shard.reader().source().get(start..end).is_none() {
            return Err(SegmentLengthError {
                channel: self.name.clone(),
                bytes: len as u64,
                steps,
                step_bytes: self.step_bytes as u64,
            });
        }
        self.check(len, steps)?;
        self.push(SegmentBytes::Mapped { shard, start, end }, steps);
        Ok(())
    }

    /// Number of steps.
    #[must_use]
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Bytes per step (`dtype` size x product of `shape`).
    #[must_use]
    pub fn step_bytes(&self) -> usize {
        self.step_bytes
    }

    /// Elements per step (product of `shape`).
    #[must_use]
    pub fn step_elements(&self) -> usize {
        self.step_bytes / self.dtype.size()
    }

    /// The bytes of step `i`, or `None` past the end.
    #[must_use]
    pub fn step(&self, i: u64) -> Option<&[u8]> {
        if i >= self.steps {
            return None;
        }
        let k = self
            .segments
            .partition_point(|s| s.first_step <= i)
            .checked_sub(1)?;
        let seg = self.segments.get(k)?;
        let within = usize::try_from(i - seg.first_step).ok()?;
        let start = within.checked_mul(self.step_bytes)?;
        seg.bytes().get(start..start.checked_add(self.step_bytes)?)
    }

    /// The whole channel as one slice, when it is held in at most one segment (then, for a
    /// mapped chunk, without any copy).
    #[must_use]
    pub fn contiguous(&self) -> Option<&[u8]> {
        match self.segments.as_slice() {
            [] => Some(&[]),
            [one] => Some(one.bytes()),
            _ => None,
        }
    }

    /// The whole channel as one slice: borrowed when [`ChannelData::contiguous`] allows,
    /// else the segments concatenated.
    #[must_use]
    pub fn to_contiguous(&self) -> Cow<'_, [u8]> {
        match self.contiguous() {
            Some(b) => Cow::Borrowed(b),
            None => Cow::Owned(
                self.segments
                    .iter()
                    .flat_map(Segment::bytes)
                    .copied()
                    .collect(),
            ),
        }
    }

    /// The segments' bytes in order (one per chunk that holds steps).
    pub fn segments(&self) -> impl Iterator<Item = &[u8]> {
        self.segments.iter().map(Segment::bytes)
    }

    /// True when every segment is a view into a memory map (no step was copied).
    #[must_use]
    pub fn is_zero_copy(&self) -> bool {
        self.segments
            .iter()
            .all(|s| matches!(s.bytes, SegmentBytes::Mapped { .. }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_steps_across_segments() {
        let mut c = ChannelData::new("q", Lane::Signal, DType::U16, vec![2]);
        assert_eq!(c.step_bytes(), 4);
        assert_eq!(c.contiguous(), Some(&[][..]));
        c.push_owned(vec![0, 1, 2, 3], 1).unwrap();
        assert_eq!(c.contiguous(), Some(&[0, 1, 2, 3][..]));
        c.push_owned(Vec::new(), 0).unwrap();
        c.push_owned((4..12).collect(), 2).unwrap();
        assert_eq!(c.steps(), 3);
        assert_eq!(c.step(0), Some(&[0, 1, 2, 3][..]));
        assert_eq!(c.step(1), Some(&[4, 5, 6, 7][..]));
        assert_eq!(c.step(2), Some(&[8, 9, 10, 11][..]));
        assert_eq!(c.step(3), None);
        assert_eq!(c.contiguous(), None);
        assert_eq!(c.to_contiguous().as_ref(), (0..12).collect::<Vec<u8>>());
        assert_eq!(c.segments().count(), 2);
        assert!(!c.is_zero_copy());
        assert_eq!(c.step_elements(), 2);
        let e = c.push_owned(vec![0; 5], 1).unwrap_err();
        assert_eq!(e.bytes, 5);
        assert!(e.to_string().contains("channel `q`"));
    }
}
