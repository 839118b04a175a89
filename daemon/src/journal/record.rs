//! Logical records of a journal segment. Every segment starts with a SEGMENT record (the
//! episode schema and where the chunk starts), followed by STEPS records holding timestep
//! records exactly as they arrived on the wire.

use serde_json::{json, Value};

use crate::episode::EpisodeSchema;

/// Record kind bytes.
pub mod kind {
    pub const SEGMENT: u8 = 1;
    pub const STEPS: u8 = 2;
}

/// What a SEGMENT record says.
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentHeader {
    pub schema: EpisodeSchema,
    pub chunk_index: u64,
    /// Global index (= seq) of the segment's first timestep.
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
    /// A message naming what is missing.
    pub fn decode(body: &[u8]) -> Result<Self, String> {
        let v: Value =
            serde_json::from_slice(body).map_err(|e| format!("segment header is not JSON: {e}"))?;
        if v.get("format").and_then(Value::as_str) != Some("wshardd-journal") {
            return Err("segment header: not a wshardd journal".into());
        }
        let schema =
            EpisodeSchema::from_json(v.get("schema").ok_or("segment header: schema missing")?)?;
        Ok(Self {
            schema,
            chunk_index: v
                .get("chunk_index")
                .and_then(Value::as_u64)
                .ok_or("segment header: chunk_index missing")?,
            first_timestep: v
                .get("first_timestep")
                .and_then(Value::as_u64)
                .ok_or("segment header: first_timestep missing")?,
        })
    }
}
