//! Logical records of a journal segment. Every segment starts with a SEGMENT record (the
//! episode schema and where the chunk starts), followed by STEPS records holding timestep
//! records exactly as they arrived on the wire. A GAP record (`start u64 | end u64`,
//! little-endian) says that the seqs `[start, end)` were dropped by a shared-memory
//! producer (drop policies); it comes right before the STEPS record whose first timestep
//! has seq `end`, in the same segment, so replay accepts exactly the seq jumps the live
//! recorder accepted and rebuilds the same gap record.

use serde_json::{json, Value};

use crate::episode::{EpisodeSchema, SchemaError};

/// Why a journal record's body does not decode.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    #[error("GAP record of {len} bytes, expected {GAP_BODY_BYTES}")]
    GapSize { len: usize },
    #[error("GAP record [{start}, {end}) is empty")]
    EmptyGap { start: u64, end: u64 },
    #[error("segment header is not JSON: {0}")]
    HeaderNotJson(String),
    #[error("segment header: not a wshardd journal")]
    NotAJournal,
    #[error("segment header: {0} missing")]
    HeaderFieldMissing(&'static str),
    #[error(transparent)]
    Schema(#[from] SchemaError),
}

/// Bytes of a GAP record's body: `start u64 | end u64`.
pub const GAP_BODY_BYTES: usize = 16;

/// Record kind bytes.
pub mod kind {
    pub const SEGMENT: u8 = 1;
    pub const STEPS: u8 = 2;
    pub(crate) const GAP: u8 = 3;
}

/// A GAP record body (after the kind byte): `start u64 | end u64`.
#[must_use]
pub(crate) fn encode_gap(start: u64, end: u64) -> [u8; GAP_BODY_BYTES] {
    let mut out = [0u8; GAP_BODY_BYTES];
    out[..8].copy_from_slice(&start.to_le_bytes());
    out[8..].copy_from_slice(&end.to_le_bytes());
    out
}

/// Decode a GAP record body (after the kind byte): `[start, end)` with `start < end`.
///
/// # Errors
/// [`RecordError::GapSize`] or [`RecordError::EmptyGap`].
pub(crate) fn decode_gap(body: &[u8]) -> Result<[u64; 2], RecordError> {
    let (Some(a), Some(b)) = (body.get(..8), body.get(8..GAP_BODY_BYTES)) else {
        return Err(RecordError::GapSize { len: body.len() });
    };
    if body.len() != GAP_BODY_BYTES {
        return Err(RecordError::GapSize { len: body.len() });
    }
    let mut x = [0u8; 8];
    x.copy_from_slice(a);
    let start = u64::from_le_bytes(x);
    x.copy_from_slice(b);
    let end = u64::from_le_bytes(x);
    if end <= start {
        return Err(RecordError::EmptyGap { start, end });
    }
    Ok([start, end])
}

/// What a SEGMENT record says.
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentHeader {
    pub schema: EpisodeSchema,
    pub chunk_index: u64,
    /// Global index of the segment's first timestep (its seq too, unless seqs were
    /// dropped before it: see GAP records).
    pub first_timestep: u64,
}

impl SegmentHeader {
    /// Encode as a record body (kind byte + JSON).
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let v = json!({
            "format": "wshardd-journal",
            "version": 1,
            "schema": self.schema.to_json(),
            "chunk_index": self.chunk_index,
            "first_timestep": self.first_timestep,
        });
        let mut out = vec![kind::SEGMENT];
        out.extend_from_slice(v.to_string().as_bytes());
        out
    }

    /// Decode a SEGMENT record body (after the kind byte).
    ///
    /// # Errors
    /// A [`RecordError`] naming what is missing or bad.
    pub fn decode(body: &[u8]) -> Result<Self, RecordError> {
        let v: Value =
            serde_json::from_slice(body).map_err(|e| RecordError::HeaderNotJson(e.to_string()))?;
        if v.get("format").and_then(Value::as_str) != Some("wshardd-journal") {
            return Err(RecordError::NotAJournal);
        }
        let field = |name: &'static str| {
            v.get(name)
                .and_then(Value::as_u64)
                .ok_or(RecordError::HeaderFieldMissing(name))
        };
        let schema = EpisodeSchema::from_json(
            v.get("schema")
                .ok_or(RecordError::HeaderFieldMissing("schema"))?,
        )?;
        Ok(Self {
            schema,
            chunk_index: field("chunk_index")?,
            first_timestep: field("first_timestep")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gap_record_round_trip() {
        let body = encode_gap(7, 19);
        assert_eq!(decode_gap(&body).ok(), Some([7, 19]));
        assert_eq!(
            decode_gap(&body[..15]).map_err(|e| e.to_string()),
            Err("GAP record of 15 bytes, expected 16".to_owned())
        );
        let mut long = body.to_vec();
        long.push(0);
        assert!(decode_gap(&long).is_err());
        assert_eq!(
            decode_gap(&encode_gap(5, 5)).map_err(|e| e.to_string()),
            Err("GAP record [5, 5) is empty".to_owned())
        );
        assert!(decode_gap(&encode_gap(6, 5)).is_err());
    }
}
