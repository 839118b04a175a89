//! The open chunk, held column by column in memory until rotation.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use wshard::episode::{Channel, ChunkInfo, Episode};

use super::gaps::SeqGaps;
use crate::episode::EpisodeSchema;
use wshard_ingest_proto::TimestepRef;

/// `meta/wshard` key of a stream's chunk naming its multi-stream episode.
pub const META_EPISODE_KEY: &str = "episode";
/// `meta/wshard` key of a stream's chunk naming the stream.
pub const META_STREAM_KEY: &str = "stream";

/// The timesteps of one chunk, one growable buffer per channel.
#[derive(Debug)]
pub(crate) struct ChunkColumns {
    pub(crate) schema: Arc<EpisodeSchema>,
    pub(crate) chunk_index: u64,
    /// Global index of the chunk's first timestep (its first seq, unless seqs were
    /// dropped before it: see [`SeqGaps`]).
    pub(crate) first_timestep: u64,
    pub(crate) channels: Vec<Vec<u8>>,
    /// The CRC32C of each channel column so far and the bytes it covers, extended as each
    /// timestep's bytes are appended (while they are in cache), so writing the chunk file
    /// does not read the columns again for it.
    crcs: Vec<(u32, usize)>,
    pub(crate) reward: Vec<f32>,
    pub(crate) done: Vec<bool>,
    pub(crate) t_ns: Vec<i64>,
    /// Payload bytes held (channels + 8-byte timestamp per step).
    pub(crate) bytes: u64,
    /// When the first timestep arrived (creation time while empty).
    pub(crate) opened: Instant,
    /// Seqs dropped before this chunk's timesteps (shared-memory drop policies), stored as
    /// the block `time/dropped_seq_ranges` when there are any.
    pub(crate) gaps: SeqGaps,
}

impl ChunkColumns {
    /// An empty chunk.
    #[must_use]
    pub(crate) fn new(schema: Arc<EpisodeSchema>, chunk_index: u64, first_timestep: u64) -> Self {
        let n = schema.channels.len();
        Self {
            schema,
            chunk_index,
            first_timestep,
            channels: vec![Vec::new(); n],
            crcs: vec![(0, 0); n],
            reward: Vec::new(),
            done: Vec::new(),
            t_ns: Vec::new(),
            bytes: 0,
            opened: Instant::now(),
            gaps: SeqGaps::new(),
        }
    }

    /// Take over `buffers` (emptied; their capacity is kept) as the channel columns, when
    /// there is one per channel and nothing is held yet. Reusing the previous chunk's
    /// buffers spares the page faults and zeroing of fresh memory for every chunk.
    pub(crate) fn reuse_buffers(&mut self, mut buffers: Vec<Vec<u8>>) {
        if self.is_empty() && buffers.len() == self.channels.len() {
            for b in &mut buffers {
                b.clear();
            }
            self.channels = buffers;
        }
    }

    /// Number of timesteps held.
    #[must_use]
    pub(crate) fn len(&self) -> u64 {
        self.reward.len() as u64
    }

    /// True when no timestep is held.
    #[must_use]
    pub(crate) fn is_empty(&self) -> bool {
        self.reward.is_empty()
    }

    /// Append one timestep whose payload has the schema's step size (checked by the caller).
    /// The chunk's age (for `rotation.max_seconds`) counts from its first timestep.
    pub(crate) fn push(&mut self, step: &TimestepRef<'_>) {
        if self.reward.is_empty() {
            self.opened = Instant::now();
        }
        let mut off = 0;
        for ((col, crc), ch) in self
            .channels
            .iter_mut()
            .zip(&mut self.crcs)
            .zip(&self.schema.channels)
        {
            let bytes = &step.payload[off..off + ch.step_bytes];
            col.extend_from_slice(bytes);
            *crc = (crc32c::crc32c_append(crc.0, bytes), crc.1 + bytes.len());
            off += ch.step_bytes;
        }
        self.reward.push(step.reward);
        self.done.push(step.done);
        self.t_ns.push(step.t_ns);
        self.bytes += step.payload.len() as u64 + 8;
    }

    /// The chunk as a WShard episode (moves the buffers; no copy).
    #[must_use]
    pub(crate) fn into_episode(self) -> Episode {
        self.into_episode_with_crcs().0
    }

    /// [`ChunkColumns::into_episode`], plus the CRC32C of every channel block, by block
    /// name, for [`crate::chunk::chunk_file::write_partial_chunk`].
    #[must_use]
    pub(crate) fn into_episode_with_crcs(self) -> (Episode, BlockCrcs) {
        let crcs = self.crcs.clone();
        let s = &self.schema;
        let mut ep = Episode::new(s.episode_id.clone(), s.env_id.clone(), s.timebase);
        ep.length = self.len();
        ep.chunk = Some(ChunkInfo {
            chunk_index: self.chunk_index,
            total_chunks: None,
        });
        if ep.length > 0 {
            ep.timestep_range = Some([self.first_timestep, self.first_timestep + ep.length - 1]);
        }
        ep.metadata.clone_from(&s.metadata);
        if let Some(episode) = &s.stream_of {
            // A stream's chunk names its episode and itself (`episode_id` is the stream).
            ep.wshard_extra
                .insert(META_EPISODE_KEY.into(), serde_json::json!(episode));
            ep.wshard_extra
                .insert(META_STREAM_KEY.into(), serde_json::json!(s.episode_id));
        }
        for (data, ch) in self.channels.into_iter().zip(&s.channels) {
            let mut c = Channel::new(ch.name.clone(), ch.lane, ch.dtype, ch.shape.clone(), data)
                .with_codec(ch.codec);
            c.modality.clone_from(&ch.modality);
            ep.channels.push(c);
        }
        ep.reward = self.reward;
        ep.done = self.done;
        ep.timestamps_ns = Some(self.t_ns);
        ep.aux.extend(self.gaps.to_block());
        let known = ep
            .channels
            .iter()
            .zip(crcs)
            // A column changed other than through `push` is hashed again when written.
            .filter(|(c, (_, covered))| c.data.len() == *covered)
            .map(|(c, (crc, _))| (c.block_name(), crc))
            .collect();
        (ep, BlockCrcs(known, HashMap::new()))
    }
}

/// CRC32C values of blocks already computed, by block name; and blocks already stored
/// elsewhere (a flight ring's chunk copied into a window), taken as they are.
#[derive(Clone, Debug, Default)]
pub(crate) struct BlockCrcs(
    HashMap<String, u32>,
    HashMap<String, wshard::write::PreparedBlock<'static>>,
);

impl BlockCrcs {
    /// None known.
    #[must_use]
    pub(crate) fn none() -> Self {
        Self::default()
    }

    /// Blocks whose stored bytes (compressed or not), codec and CRC32C are known: written
    /// as they are, without compressing again, when their original length is the block's.
    #[must_use]
    pub(crate) fn stored(blocks: Vec<wshard::write::PreparedBlock<'static>>) -> Self {
        Self(
            HashMap::new(),
            blocks.into_iter().map(|b| (b.name.clone(), b)).collect(),
        )
    }

    /// The CRC32C of block `name`, if known.
    #[must_use]
    pub(crate) fn get(&self, name: &str) -> Option<u32> {
        self.0.get(name).copied()
    }

    /// Block `name` as stored elsewhere, if it is known and `orig_len` bytes long.
    #[must_use]
    pub(crate) fn stored_block(
        &self,
        name: &str,
        orig_len: usize,
    ) -> Option<&wshard::write::PreparedBlock<'static>> {
        self.1
            .get(name)
            .filter(|b| b.meta.orig_size == orig_len as u64)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::Map;
    use wshard::codec::Codec;
    use wshard::episode::{DType, Lane, Timebase};

    use super::*;
    use crate::episode::{Durability, EpisodeSchema};
    use wshard_ingest_proto::TimestepRef;

    /// The running CRC of every channel equals the CRC32C of the block as written, also
    /// when the buffers of an earlier chunk are reused.
    #[test]
    fn running_channel_crcs_equal_the_blocks_crcs() {
        let channel = |name: &str, n: u64| {
            let lane = Lane::Signal;
            (name.to_owned(), lane, DType::U8, vec![n], Codec::None, None)
        };
        let schema = EpisodeSchema::new(
            "e".into(),
            String::new(),
            Timebase::ticks(10.0),
            Durability::Chunk,
            vec![channel("a", 3), channel("b", 5)],
            Map::new(),
        )
        .unwrap();
        let schema = Arc::new(schema);
        let mut cols = ChunkColumns::new(schema.clone(), 0, 0);
        cols.reuse_buffers(vec![vec![9; 40], vec![7; 3]]);
        for i in 0..17u8 {
            let payload: Vec<u8> = (0..8).map(|j| i.wrapping_mul(13) ^ j).collect();
            cols.push(&TimestepRef {
                seq: u64::from(i),
                t_ns: i64::from(i),
                reward: 0.0,
                done: false,
                payload: &payload,
            });
        }
        let (ep, crcs) = cols.into_episode_with_crcs();
        assert_eq!(ep.channels.len(), 2);
        for c in &ep.channels {
            assert_eq!(
                crcs.get(&c.block_name()),
                Some(crc32c::crc32c(&c.data)),
                "{}",
                c.block_name()
            );
        }
        assert_eq!(crcs.get("reward"), None);
    }
}
