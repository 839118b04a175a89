//! `COUNTERS` (version 2): a stream's producer counters (name -> `u64`), sent by the
//! producer on the connection that records the stream (or a single-stream episode), with
//! no answer. The daemon keeps the latest value of each name for as long as the stream
//! records, and shows them in `status` and the metrics (docs/PROTOCOL.md, "COUNTERS").
//!
//! Payload, little-endian:
//!
//! ```text
//! count  u16                  0..=MAX_COUNTERS_PER_FRAME
//! count x { name  str16       1..=MAX_COUNTER_NAME_BYTES bytes of [a-z0-9_]
//!           value u64 }
//! ```
//!
//! Names are unique within a frame. The layout is read and written only here
//! (`Counters::parse`, `Counters::encode`).

use std::collections::BTreeSet;

use crate::error::{BadCounterName, ProtoError};
use crate::frame_header::FrameType;
use crate::wire::{put_str16, Reader};

/// The most counters one `COUNTERS` frame carries.
pub const MAX_COUNTERS_PER_FRAME: usize = 32;

/// The most distinct counter names the daemon keeps per stream (over all its `COUNTERS`
/// frames); a frame that would add a name beyond them is refused whole (`LIMIT`).
pub const MAX_COUNTERS_PER_STREAM: usize = 256;

pub use crate::payload_limits::MAX_COUNTER_NAME_BYTES;

/// What a decoder expects of `COUNTERS.count` (the message of a count that does not parse).
pub const COUNTERS_COUNT_EXPECTED: &str = "0..=32 (the most counters a COUNTERS frame carries)";

/// Bytes of one counter besides its name: the name's `u16` length and the `u64` value.
pub const COUNTER_FIXED_BYTES: usize = 2 + 8;

/// Bytes of a `COUNTERS` payload besides its counters: `count`.
pub const COUNTERS_HEADER_BYTES: usize = 2;

/// One producer counter.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Counter {
    /// `[a-z0-9_]{1,32}`, e.g. `received`, `joints_dropped`.
    pub name: String,
    /// The producer's latest value.
    pub value: u64,
}

/// A `COUNTERS` frame: the counters in the order sent.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Counters {
    pub counters: Vec<Counter>,
}

impl Counters {
    /// Counters from `(name, value)` pairs, in that order (not checked: see
    /// [`Counters::validate`]).
    #[must_use]
    pub fn new<'a>(pairs: impl IntoIterator<Item = (&'a str, u64)>) -> Self {
        Self {
            counters: pairs
                .into_iter()
                .map(|(name, value)| Counter {
                    name: name.to_owned(),
                    value,
                })
                .collect(),
        }
    }

    /// Check the frame's rules: at most [`MAX_COUNTERS_PER_FRAME`] counters, each name
    /// valid ([`validate_counter_name`]) and unique in the frame.
    ///
    /// # Errors
    /// [`ProtoError::BadValue`] for too many counters (field `count`),
    /// [`ProtoError::BadCounter`] naming the counter (its index and name) otherwise; both
    /// `MALFORMED_FRAME`.
    pub fn validate(&self) -> Result<(), ProtoError> {
        if self.counters.len() > MAX_COUNTERS_PER_FRAME {
            return Err(ProtoError::BadValue {
                frame: FrameType::Counters.name(),
                field: "count".to_owned(),
                value: u64::try_from(self.counters.len()).unwrap_or(u64::MAX),
                expected: COUNTERS_COUNT_EXPECTED,
            });
        }
        let mut seen = BTreeSet::new();
        for (index, c) in self.counters.iter().enumerate() {
            validate_counter_name(&c.name).map_err(|reason| ProtoError::BadCounter {
                index,
                name: shown_name(&c.name),
                reason,
            })?;
            if !seen.insert(c.name.as_str()) {
                return Err(ProtoError::BadCounter {
                    index,
                    name: shown_name(&c.name),
                    reason: BadCounterName::Repeated,
                });
            }
        }
        Ok(())
    }

    /// Read a `COUNTERS` payload (the cursor is at `count`) and check it. A `count` over
    /// the limit is refused before any counter is read.
    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, ProtoError> {
        let count = r.u16("count")?;
        if usize::from(count) > MAX_COUNTERS_PER_FRAME {
            return Err(r.bad_value("count", count.into(), COUNTERS_COUNT_EXPECTED));
        }
        let mut counters = Vec::with_capacity(usize::from(count));
        for i in 0..count {
            let name = r.str16(&format!("counters[{i}].name"))?;
            let value = r.u64(&format!("counters[{i}].value"))?;
            counters.push(Counter { name, value });
        }
        let out = Self { counters };
        out.validate()?;
        Ok(out)
    }

    /// Append the payload (checked first: a frame that would not parse is not written).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        self.validate()?;
        let frame = FrameType::Counters.name();
        let count = u16::try_from(self.counters.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&count.to_le_bytes());
        for (i, c) in self.counters.iter().enumerate() {
            put_str16(out, &c.name, frame, &format!("counters[{i}].name"))?;
            out.extend_from_slice(&c.value.to_le_bytes());
        }
        Ok(())
    }

    /// Bytes of the payload (what `Counters::encode` appends).
    #[must_use]
    pub fn payload_len(&self) -> usize {
        self.counters
            .iter()
            .map(|c| COUNTER_FIXED_BYTES + c.name.len())
            .sum::<usize>()
            + COUNTERS_HEADER_BYTES
    }
}

/// A name for messages: at most 64 bytes of it, cut on a char boundary.
fn shown_name(name: &str) -> String {
    let mut s = name.to_owned();
    crate::wire::truncate_utf8(&mut s, 2 * MAX_COUNTER_NAME_BYTES);
    s
}

/// The counter-name rule: 1..=[`MAX_COUNTER_NAME_BYTES`] bytes, each of `[a-z0-9_]`.
///
/// # Errors
/// Why the name is refused: [`BadCounterName::Empty`] (`is empty`),
/// [`BadCounterName::TooLong`] (`is 40 bytes (must be 1..=32 bytes)`),
/// [`BadCounterName::BadChar`] (`has 'A' at byte 0 (allowed: a-z, 0-9, _)`).
pub fn validate_counter_name(name: &str) -> Result<(), BadCounterName> {
    if name.is_empty() {
        return Err(BadCounterName::Empty);
    }
    if name.len() > MAX_COUNTER_NAME_BYTES {
        return Err(BadCounterName::TooLong { len: name.len() });
    }
    match name
        .char_indices()
        .find(|(_, c)| !matches!(c, 'a'..='z' | '0'..='9' | '_'))
    {
        Some((at, found)) => Err(BadCounterName::BadChar { found, at }),
        None => Ok(()),
    }
}
