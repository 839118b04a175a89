//! Checks of the values inside timesteps that the schema constrains (docs/PROTOCOL.md,
//! "Timestep values"): every element of a `bool` channel is 0 or 1, and `t_ns` never
//! decreases within an episode (equal timestamps are allowed). Sizes, seqs and `done` are
//! [`crate::TimestepBatch::steps`]' job; these checks run on steps that passed it.
//!
//! The `t_ns` rule spans batches, so [`StepValues`] keeps the last accepted timestep. A
//! batch is checked whole first ([`StepValues::check`]) and only remembered once the
//! receiver accepted it ([`StepValues::commit`]): a refused batch leaves no trace.
//!
//! ```
//! use wshard::episode::{DType, Lane};
//! use wshard_ingest_proto::{ChannelSpec, ErrorCode, StepValues, TimestepRef};
//! let channels = [ChannelSpec::new("grip", Lane::Signal, DType::Bool, vec![2])];
//! let mut values = StepValues::new(&channels).unwrap();
//! let step = |seq, t_ns, payload| TimestepRef { seq, t_ns, reward: 0.0, done: false, payload };
//! let mark = values.check([step(0, 100, &[0, 1][..]), step(1, 100, &[1, 1])]).unwrap();
//! values.commit(mark);
//! let e = values.check([step(2, 99, &[0, 0][..])]).unwrap_err();
//! assert_eq!(e.error_code(), ErrorCode::TimestampOrder);
//! let e = values.check([step(2, 200, &[0, 2][..])]).unwrap_err();
//! assert_eq!(e.error_code(), ErrorCode::MalformedFrame);
//! ```

use wshard::episode::DType;

use crate::error::ProtoError;
use crate::schema::ChannelSpec;
use crate::timestep::TimestepRef;

/// The bytes of one `bool` channel inside a step's payload.
#[derive(Clone, Debug, PartialEq, Eq)]
struct BoolChannel {
    name: String,
    offset: usize,
    len: usize,
}

/// The last timestep a batch leaves behind: `(seq, t_ns)`, or `None` for an empty batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "a checked batch is remembered only once committed"]
pub struct StepMark(Option<(u64, i64)>);

/// The value checks of one episode (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepValues {
    bools: Vec<BoolChannel>,
    /// `(seq, t_ns)` of the last timestep accepted.
    last: Option<(u64, i64)>,
}

impl StepValues {
    /// The checks for `channels` (the `OPEN` schema, in schema order), before any timestep.
    ///
    /// # Errors
    /// [`ProtoError::BadSchema`] when a channel's step size overflows (as
    /// [`ChannelSpec::step_bytes`]).
    pub fn new(channels: &[ChannelSpec]) -> Result<Self, ProtoError> {
        let mut bools = Vec::new();
        let mut offset = 0usize;
        for c in channels {
            let len = c.step_bytes()?;
            if c.dtype == DType::Bool {
                bools.push(BoolChannel {
                    name: c.name.clone(),
                    offset,
                    len,
                });
            }
            offset = offset.saturating_add(len);
        }
        Ok(Self { bools, last: None })
    }

    /// `(seq, t_ns)` of the last timestep committed.
    #[must_use]
    pub fn last(&self) -> Option<(u64, i64)> {
        self.last
    }

    /// Check `steps` (consecutive timesteps of one batch, sizes already checked) against
    /// the rules and the last committed timestep, without remembering anything.
    ///
    /// # Errors
    /// [`ProtoError::BadValue`] (`MALFORMED_FRAME`) naming the seq, channel, element and
    /// value of a `bool` element other than 0 or 1; [`ProtoError::TimestampOrder`]
    /// (`TIMESTAMP_ORDER`) naming both seqs and both `t_ns` when `t_ns` decreases.
    pub fn check<'a>(
        &self,
        steps: impl IntoIterator<Item = TimestepRef<'a>>,
    ) -> Result<StepMark, ProtoError> {
        let mut last = self.last;
        for s in steps {
            if let Some((prev_seq, prev_t_ns)) = last {
                if s.t_ns < prev_t_ns {
                    return Err(ProtoError::TimestampOrder {
                        seq: s.seq,
                        t_ns: s.t_ns,
                        prev_seq,
                        prev_t_ns,
                    });
                }
            }
            for b in &self.bools {
                let bytes = s.payload.get(b.offset..b.offset + b.len).unwrap_or(&[]);
                if let Some(i) = bytes.iter().position(|&v| v > 1) {
                    return Err(ProtoError::BadValue {
                        frame: "TIMESTEP",
                        field: format!("seq {} channel {} element {i}", s.seq, b.name),
                        value: u64::from(bytes[i]),
                        expected: "0 or 1 (dtype bool)",
                    });
                }
            }
            last = Some((s.seq, s.t_ns));
        }
        Ok(StepMark(last))
    }

    /// Remember a batch [`StepValues::check`] passed, once it is accepted.
    pub fn commit(&mut self, mark: StepMark) {
        if mark.0.is_some() {
            self.last = mark.0;
        }
    }
}
