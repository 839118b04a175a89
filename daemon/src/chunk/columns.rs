//! The open chunk, held column by column in memory until rotation.

use std::sync::Arc;
use std::time::Instant;

use wshard::episode::{Channel, ChunkInfo, Episode};

use super::gaps::SeqGaps;
use super::step::StepRef;
use crate::episode::EpisodeSchema;

/// The timesteps of one chunk, one growable buffer per channel.
#[derive(Debug)]
pub struct ChunkColumns {
    pub schema: Arc<EpisodeSchema>,
    pub chunk_index: u64,
    /// Global index of the chunk's first timestep (its first seq, unless seqs were
    /// dropped before it: see [`SeqGaps`]).
    pub first_timestep: u64,
    pub channels: Vec<Vec<u8>>,
    pub reward: Vec<f32>,
    pub done: Vec<bool>,
    pub t_ns: Vec<i64>,
    /// Payload bytes held (channels + 8-byte timestamp per step).
    pub bytes: u64,
    /// When the first timestep arrived (creation time while empty).
    pub opened: Instant,
    /// Seqs dropped before this chunk's timesteps (shared-memory drop policies), stored as
    /// the block `time/dropped_seq_ranges` when there are any.
    pub gaps: SeqGaps,
}

impl ChunkColumns {
    /// An empty chunk.
    #[must_use]
    pub fn new(schema: Arc<EpisodeSchema>, chunk_index: u64, first_timestep: u64) -> Self {
        let n = schema.channels.len();
        Self {
            schema,
            chunk_index,
            first_timestep,
            channels: vec![Vec::new(); n],
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
    pub fn reuse_buffers(&mut self, mut buffers: Vec<Vec<u8>>) {
        if self.is_empty() && buffers.len() == self.channels.len() {
            for b in &mut buffers {
                b.clear();
            }
            self.channels = buffers;
        }
    }

    /// Number of timesteps held.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.reward.len() as u64
    }

    /// True when no timestep is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.reward.is_empty()
    }

    /// Append one timestep whose payload has the schema's step size (checked by the caller).
    /// The chunk's age (for `rotation.max_seconds`) counts from its first timestep.
    pub fn push(&mut self, step: &StepRef<'_>) {
        if self.reward.is_empty() {
            self.opened = Instant::now();
        }
        let mut off = 0;
        for (col, ch) in self.channels.iter_mut().zip(&self.schema.channels) {
            col.extend_from_slice(&step.payload[off..off + ch.step_bytes]);
            off += ch.step_bytes;
        }
        self.reward.push(step.reward);
        self.done.push(step.done);
        self.t_ns.push(step.t_ns);
        self.bytes += step.payload.len() as u64 + 8;
    }

    /// The chunk as a WShard episode (moves the buffers; no copy).
    #[must_use]
    pub fn into_episode(self) -> Episode {
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
        ep
    }
}
