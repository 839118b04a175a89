//! Rotation: when the open chunk is full (`rotation.max_timesteps`, the bytes one chunk may
//! hold) or old (`rotation.max_age`), the writer thread seals it. Sealing creates the next
//! journal segment (when the episode has a journal), hands the chunk and its segment to the
//! chunk writer, and gives the next chunk a chunk slot: a spare one, else the next one the
//! chunk writer frees (at most [`CHUNKS_IN_MEMORY`] chunks are in memory).
//!
//! The writer decides when (it calls [`ChunkRotation::room`] for every batch and
//! [`ChunkRotation::is_due`] on every tick) and syncs the journal first; this file does the
//! sealing.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use wshard_ingest_proto::RECORD_HEADER_BYTES;

use super::chunk_writer::SealedChunk;
use super::failure::SessionFailure;
use super::memory::{chunk_byte_limit, CHUNKS_IN_MEMORY};
use super::parts::NextPart;
use super::settings::Rotation;
use super::shared::{FinalStatus, SessionShared};
use super::split::PartTarget;
use crate::chunk::ChunkColumns;
use crate::episode::EpisodeSchema;
use crate::journal::record::SegmentHeader;
use crate::journal::segment::JournalSegment;

/// The open chunk's limits, and the way out for sealed chunks.
pub(crate) struct ChunkRotation {
    limits: Rotation,
    /// Raw bytes a chunk may hold ([`chunk_byte_limit`]).
    chunk_max_bytes: u64,
    to_chunk_writer: Sender<SealedChunk>,
    /// Chunk slots given back by the chunk writer, with the buffers of the chunk that held
    /// them (empty when it had none to give), reused by the next chunk.
    recycled: Receiver<Vec<Vec<u8>>>,
    /// Free chunk slots held here besides the open chunk's (see [`CHUNKS_IN_MEMORY`]).
    spare_slots: u64,
}

impl ChunkRotation {
    /// Rotation of an episode with `schema` under `limits`; the open chunk holds a slot.
    pub(crate) fn new(
        limits: Rotation,
        schema: &EpisodeSchema,
        to_chunk_writer: Sender<SealedChunk>,
        recycled: Receiver<Vec<Vec<u8>>>,
    ) -> Self {
        Self {
            limits,
            chunk_max_bytes: chunk_byte_limit(limits.max_bytes, schema),
            to_chunk_writer,
            recycled,
            spare_slots: CHUNKS_IN_MEMORY.saturating_sub(1),
        }
    }

    /// How many more records of `record_len` bytes fit in the `open` chunk. A chunk always
    /// takes at least one, even one larger than the byte limit; 0 means: seal it first.
    pub(crate) fn room(&self, open: &ChunkColumns, record_len: usize) -> u64 {
        let by_count = self.limits.max_timesteps.saturating_sub(open.len());
        let step_bytes = record_len as u64 - RECORD_HEADER_BYTES as u64 + 8;
        let by_bytes = self.chunk_max_bytes.saturating_sub(open.bytes) / step_bytes.max(1);
        by_count.min(by_bytes).max(u64::from(open.is_empty()))
    }

    /// When the `open` chunk reaches its age limit (none while it is empty).
    pub(crate) fn deadline(&self, open: &ChunkColumns) -> Option<Instant> {
        (!open.is_empty()).then(|| open.opened + self.limits.max_age)
    }

    /// Whether the `open` chunk has reached its age limit.
    pub(crate) fn is_due(&self, open: &ChunkColumns) -> bool {
        !open.is_empty() && open.opened.elapsed() >= self.limits.max_age
    }

    /// Seal the `open` chunk, whose journal segment is `journal` (already synced) and whose
    /// last seq is below `seq_end`: create the next segment, starting at global timestep
    /// `timesteps`; hand the chunk to the chunk writer (blocking while the previous one is
    /// still being written); and open the next chunk in `open`, in a free slot.
    ///
    /// # Errors
    /// The failure the episode fails with: the next segment could not be created (then
    /// `journal` is `None`), or the chunk writer is gone.
    pub(crate) fn seal(
        &mut self,
        shared: &SessionShared,
        part: &PartTarget,
        open: &mut ChunkColumns,
        journal: &mut Option<JournalSegment>,
        timesteps: u64,
        seq_end: u64,
    ) -> Result<(), SessionFailure> {
        let next_index = open.chunk_index + 1;
        let next_first = timesteps;
        let old_journal = journal.take().map(|j| j.path().to_path_buf());
        if old_journal.is_some() {
            let header = SegmentHeader {
                schema: (*part.schema).clone(),
                chunk_index: next_index,
                first_timestep: next_first,
            };
            let next =
                JournalSegment::create(&*shared.fs, &part.layout.journal(next_index), &header)
                    .map_err(|e| SessionFailure::Storage((&e).into()))?;
            *journal = Some(next);
        }
        let columns = std::mem::replace(
            open,
            ChunkColumns::new(part.schema.clone(), next_index, next_first),
        );
        let sealed = SealedChunk {
            columns,
            journal: old_journal,
            final_status: None,
            seq_end,
            next: None,
        };
        if self.to_chunk_writer.send(sealed).is_err() {
            return Err(SessionFailure::ChunkWriterStopped);
        }
        self.take_slot(open)
    }

    /// Seal the `open` chunk as the last chunk of its part (status `complete`, journal
    /// segment `journal`, already synced), the chunk writer and the finisher then moving
    /// on to `next`; the next chunk opens in `open` as chunk 0 of the part with `schema`.
    ///
    /// # Errors
    /// [`SessionFailure::ChunkWriterStopped`] when the chunk writer is gone.
    pub(crate) fn seal_split(
        &mut self,
        open: &mut ChunkColumns,
        journal: Option<PathBuf>,
        schema: Arc<EpisodeSchema>,
        seq_end: u64,
        next: Box<NextPart>,
    ) -> Result<(), SessionFailure> {
        let columns = std::mem::replace(open, ChunkColumns::new(schema, 0, 0));
        let sealed = SealedChunk {
            columns,
            journal,
            final_status: Some(FinalStatus::Complete),
            seq_end,
            next: Some(next),
        };
        if self.to_chunk_writer.send(sealed).is_err() {
            return Err(SessionFailure::ChunkWriterStopped);
        }
        self.take_slot(open)
    }

    /// Give the just-opened chunk `open` a slot (see [`ChunkRotation::seal`]).
    fn take_slot(&mut self, open: &mut ChunkColumns) -> Result<(), SessionFailure> {
        // The new chunk needs a slot: a spare one, else the next one the chunk writer frees
        // (blocking: at most CHUNKS_IN_MEMORY chunks are in memory). It fills the buffers
        // that came with the slot instead of fresh memory.
        if self.spare_slots > 0 {
            self.spare_slots -= 1;
        } else {
            let buffers = self
                .recycled
                .recv()
                .map_err(|_| SessionFailure::ChunkWriterStopped)?;
            open.reuse_buffers(buffers);
        }
        Ok(())
    }

    /// Seal the episode's last chunk `columns` with its journal segment and final `status`,
    /// and hand it to the chunk writer; no next chunk opens.
    ///
    /// # Errors
    /// [`SessionFailure::ChunkWriterStopped`] when the chunk writer is gone.
    pub(crate) fn seal_last(
        &self,
        columns: ChunkColumns,
        journal: Option<PathBuf>,
        status: FinalStatus,
        seq_end: u64,
    ) -> Result<(), SessionFailure> {
        let sealed = SealedChunk {
            columns,
            journal,
            final_status: Some(status),
            seq_end,
            next: None,
        };
        self.to_chunk_writer
            .send(sealed)
            .map_err(|_| SessionFailure::ChunkWriterStopped)
    }
}
