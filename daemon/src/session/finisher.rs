//! The finisher of a session (thread `fin-EPISODE`): takes each chunk file the chunk writer
//! wrote ([`super::chunk_writer`]), strictly in order, and
//!
//! 1. makes it durable under its final name ([`finalize_chunk`]: fsync, rename, directory
//!    fsync);
//! 2. lists it in the manifest and commits the manifest ([`commit_manifest`]), with the
//!    final status on the episode's last chunk;
//! 3. deletes the chunk's journal segment (its timesteps are now in a durable, listed chunk);
//! 4. advances the durable watermark (the only DURABLE for durability `chunk`).
//!
//! It also builds the episode's first manifest ([`recorder_manifest`]), committed at open.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use crossbeam_channel::Receiver;
use serde_json::json;
use wshard::manifest::Manifest;

use super::failure::SessionFailure;
use super::flight_ring::RingChunk;
use super::parts::{NextPart, SPLIT_MANIFEST_KEY};
use super::shared::{FinalStatus, SessionShared};
use crate::chunk::chunk_file::{finalize_chunk, PartialChunk};
use crate::chunk::gaps;
use crate::chunk::manifest_commit::commit_manifest;
use crate::episode::EpisodeSchema;

/// The manifest as the recorder writes it.
#[must_use]
pub(crate) fn recorder_manifest(shared: &SessionShared) -> Manifest {
    recorder_manifest_of(&shared.schema)
}

/// The manifest as the recorder writes it for an episode (or a part) with `schema`.
#[must_use]
pub(crate) fn recorder_manifest_of(schema: &EpisodeSchema) -> Manifest {
    let mut m = Manifest::new(schema.episode_id.clone(), schema.env_id.clone());
    m.status = Some("recording".into());
    m.extra
        .insert("durability".into(), json!(schema.durability.as_str()));
    m.extra.insert(
        "recorder".into(),
        json!(concat!("wshardd/", env!("CARGO_PKG_VERSION"))),
    );
    m
}

/// A chunk on its way from the chunk writer to the finisher.
pub(crate) struct Handoff {
    /// The chunk file, written and hashed; `None` for an empty last chunk or after a failure.
    pub(crate) partial: Option<PartialChunk>,
    /// Seqs dropped (shared-memory drop policies) inside this chunk.
    pub(crate) dropped: u64,
    /// The chunk's journal segment, deleted once the chunk is in the manifest.
    pub(crate) journal: Option<PathBuf>,
    /// Set on the last chunk of the episode.
    pub(crate) final_status: Option<FinalStatus>,
    /// One past the last seq in this chunk.
    pub(crate) seq_end: u64,
    /// On a split part's last chunk: the part recording next.
    pub(crate) next: Option<Box<NextPart>>,
    /// `t_ns` of the chunk's first and last timesteps.
    pub(crate) t_range: Option<(i64, i64)>,
}

/// The key of a flight stream's chunk entry holding its `[first, last]` `t_ns`.
pub const CHUNK_T_NS_KEY: &str = "t_ns";

/// The finisher: make each written chunk durable, list it, commit the manifest, drop the
/// journal segment, advance the durable mark. Runs until the chunk writer drops its sender;
/// returns the manifest as last committed.
pub(crate) fn run(
    shared: &SessionShared,
    rx: &Receiver<Handoff>,
    mut manifest: Manifest,
) -> Manifest {
    // The part being finished: the episode's directory, then each next part's.
    let mut layout = shared.layout.clone();
    for h in rx {
        if shared.is_failed() {
            // Leave the journal and any written `.partial` for recovery; nothing more is
            // finalized.
            continue;
        }
        let Handoff {
            partial,
            dropped,
            journal,
            final_status,
            seq_end,
            next,
            t_range,
        } = h;
        let ring = shared.flight();
        let mut evicted = Vec::new();
        if let Some(mut p) = partial {
            let bytes = if ring.is_some() { p.file_len() } else { 0 };
            match finalize_chunk(&*shared.fs, &layout, p) {
                Ok(mut chunk) => {
                    gaps::set_chunk_dropped(&mut chunk, dropped);
                    if let (Some(ring), Some((t_first, t_last))) = (ring, t_range) {
                        chunk
                            .extra
                            .insert(CHUNK_T_NS_KEY.into(), json!([t_first, t_last]));
                        let gone = ring.admit(RingChunk {
                            chunk_index: chunk.chunk_index,
                            t_first,
                            t_last,
                            bytes,
                        });
                        manifest.push_chunk(chunk);
                        let dropped_before = gaps::ring_dropped(&manifest);
                        evicted = manifest.evict_front(gone.len());
                        gaps::note_evicted(&mut manifest, dropped_before, &evicted);
                    } else {
                        manifest.push_chunk(chunk);
                    }
                }
                Err(e) => {
                    shared.fail(SessionFailure::WriteChunk((&e).into()));
                    continue;
                }
            }
        }
        let policy = shared.ring_policy();
        gaps::update_manifest(&mut manifest, policy.drops());
        if policy.drops() {
            manifest
                .extra
                .insert("ring_policy".into(), json!(policy.name()));
        }
        if let Some(status) = &final_status {
            manifest.status = Some(status.name().into());
            if let FinalStatus::Interrupted(reason) = status {
                manifest.extra.insert("reason".into(), json!(reason));
            }
            if policy.drops() {
                // What the producer's own ring counters said: untrusted, and it also counts
                // batches dropped after the last timestep recorded (no later seq revealed
                // them as a gap).
                let (steps, batches) = shared.producer_dropped();
                manifest
                    .extra
                    .insert("producer_dropped_steps".into(), json!(steps));
                manifest
                    .extra
                    .insert("producer_dropped_batches".into(), json!(batches));
            }
        }
        if let Some(n) = &next {
            manifest
                .extra
                .insert(SPLIT_MANIFEST_KEY.into(), n.finished_links.clone());
        }
        if let Err(e) = commit_manifest(&*shared.fs, &layout, &manifest) {
            shared.fail(SessionFailure::CommitManifest((&e).into()));
            continue;
        }
        shared
            .stats
            .chunks
            .store(manifest.chunks.len() as u64, Ordering::Relaxed);
        if let Some(j) = journal {
            // The chunk is durable and listed: its journal is redundant. A failed removal
            // only costs disk space; recovery deletes segments the manifest already covers.
            if let Err(e) = shared.fs.remove_file(&j) {
                tracing::warn!(path = %j.display(), "could not remove journal segment: {e}");
            } else if final_status.is_some() {
                // The last removal is made durable here (earlier ones are by the next
                // chunk's directory fsync): otherwise a power cut after CLOSE brings the
                // segment back and recovery rewrites a final manifest as `recovered`.
                // Everything else is already durable, so a failure only costs that.
                let dir = &layout.dir;
                if let Err(e) = shared.fs.sync_dir(dir) {
                    tracing::warn!(path = %dir.display(), "could not fsync the directory after removing the last journal segment: {e}");
                }
            }
        }
        // A listed chunk is durable whatever the class (for `ack` with fsync `never` this is
        // the only DURABLE); the watermark never moves backwards.
        shared.advance_durable(seq_end);
        // Chunks that fell out of the flight ring: the manifest just committed no longer
        // lists them (and says where the ring starts), so their files can go. A failed
        // removal costs disk space until recovery removes what the manifest evicted.
        for gone in &evicted {
            let path = layout.dir.join(&gone.uri);
            if let Err(e) = shared.fs.remove_file(&path) {
                tracing::warn!(path = %path.display(), "could not remove a chunk evicted from the flight ring: {e}");
            }
        }
        if final_status.is_some() || next.is_some() {
            // The episode (or a split part) is final: the uploader takes it now.
            shared.settings.handoff.finished(&layout.dir);
        }
        if let Some(n) = next {
            // The part is finalized: the chunks that follow are the next part's.
            let parts = &shared.parts;
            parts
                .finished_steps
                .fetch_add(manifest.total_timesteps, Ordering::Relaxed);
            parts
                .finished_chunks
                .fetch_add(manifest.chunks.len() as u64, Ordering::Relaxed);
            parts.parts_finalized.fetch_add(1, Ordering::Release);
            let NextPart {
                layout: next_layout,
                manifest: next_manifest,
                ..
            } = *n;
            layout = next_layout;
            manifest = next_manifest;
        }
        if let (Some(ring), Some(_)) = (ring, &final_status) {
            ring.set_ended();
        }
    }
    if let Some(ring) = shared.flight() {
        // Nothing more is finalized (closed, or failed): windows stop waiting for it.
        ring.set_ended();
    }
    manifest
}
