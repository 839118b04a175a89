//! An episode's chunk memory budget (`rotation.max_bytes`) and how its chunks share it:
//! the one place that turns the budget into the bytes one chunk may hold.

use wshard::codec::Codec;

use crate::episode::EpisodeSchema;

/// Chunks of one episode held in memory at once (raw channel bytes): the open chunk, and the
/// sealed one being compressed or written. The writer opens a chunk only with a free slot;
/// the chunk writer frees a sealed chunk's slot right after compressing it when it no longer
/// needs the raw bytes (see [`crate::chunk::chunk_file::write_partial_chunk`]), else once it is written.
pub(crate) const CHUNKS_IN_MEMORY: u64 = 2;

/// The raw channel bytes one chunk of an episode with `schema` may hold, for a chunk memory
/// budget of `budget` bytes (`rotation.max_bytes`).
///
/// The budget bounds the chunk bytes one episode holds in memory at once: the open chunk
/// (filled by the writer), the sealed chunk (compressed and written by the chunk writer) and,
/// when a channel is compressed, the sealed chunk's compressed copy while it is written (at
/// most as large as its raw bytes: a block is stored compressed only when that is smaller).
/// So the budget is split into [`CHUNKS_IN_MEMORY`] equal shares, one per raw chunk (rounded
/// down, at least 1 byte); when a channel is compressed, those shares are split again in
/// `CHUNKS_IN_MEMORY + 1`: two raw chunks and one compressed copy.
#[must_use]
pub(crate) fn chunk_byte_limit(budget: u64, schema: &EpisodeSchema) -> u64 {
    let share = (budget / CHUNKS_IN_MEMORY).max(1);
    let compressed = schema.channels.iter().any(|c| c.codec != Codec::None);
    if compressed {
        (share.saturating_mul(CHUNKS_IN_MEMORY) / (CHUNKS_IN_MEMORY + 1)).max(1)
    } else {
        share
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::Map;
    use wshard::episode::{DType, Lane, Timebase};

    use super::*;
    use crate::episode::Durability;

    fn schema(codecs: &[Codec]) -> EpisodeSchema {
        let channels = codecs
            .iter()
            .enumerate()
            .map(|(i, c)| (format!("c{i}"), Lane::Signal, DType::U8, vec![4], *c, None))
            .collect();
        EpisodeSchema::new(
            "e".into(),
            String::new(),
            Timebase::ticks(1.0),
            Durability::Chunk,
            channels,
            Map::new(),
        )
        .unwrap()
    }

    /// Two raw chunks plus one compressed copy stay within the budget of two raw chunks.
    #[test]
    fn compressed_episodes_split_the_chunk_budget_in_three() {
        let per_chunk = 32 << 20;
        let budget = per_chunk * CHUNKS_IN_MEMORY;
        assert_eq!(chunk_byte_limit(budget, &schema(&[Codec::None])), per_chunk);
        for codecs in [&[Codec::zstd()][..], &[Codec::None, Codec::Lz4]] {
            let limit = chunk_byte_limit(budget, &schema(codecs));
            assert!(limit * (CHUNKS_IN_MEMORY + 1) <= budget, "{codecs:?}");
            assert!(limit * (CHUNKS_IN_MEMORY + 1) > budget - 3, "{codecs:?}");
        }
        assert_eq!(chunk_byte_limit(0, &schema(&[Codec::Lz4])), 1);
    }
}
