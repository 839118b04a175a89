//! The publisher thread of a session: finalizes sealed chunks strictly in order, commits
//! the manifest after each one, and only then deletes the chunk's journal segment.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use serde_json::json;
use wshard::manifest::Manifest;

use super::shared::{FinalStatus, SessionShared};
use crate::chunk::gaps;
use crate::chunk::publish::{commit_manifest, publish_chunk};
use crate::chunk::ChunkColumns;

/// A chunk handed over by the writer.
pub struct Sealed {
    pub columns: ChunkColumns,
    /// The journal segment holding the same timesteps, deleted once the chunk is in the manifest.
    pub journal: Option<PathBuf>,
    /// Set on the last chunk of the episode.
    pub final_status: Option<FinalStatus>,
    /// One past the last seq in this chunk.
    pub seq_end: u64,
}

/// The manifest as the recorder writes it.
#[must_use]
pub fn recorder_manifest(shared: &SessionShared) -> Manifest {
    let mut m = Manifest::new(
        shared.schema.episode_id.clone(),
        shared.schema.env_id.clone(),
    );
    m.status = Some("recording".into());
    m.extra
        .insert("durability".into(), json!(shared.schema.durability.name()));
    m.extra.insert(
        "recorder".into(),
        json!(concat!("wshardd/", env!("CARGO_PKG_VERSION"))),
    );
    m
}

/// Run until the writer drops its sender. Returns the manifest as last committed. Each
/// published chunk's channel buffers go back to the writer through `recycle`, for the next
/// chunk to fill (dropped when the writer has not taken the previous ones).
pub fn run(
    shared: &Arc<SessionShared>,
    rx: &Receiver<Sealed>,
    recycle: &Sender<Vec<Vec<u8>>>,
    mut manifest: Manifest,
) -> Manifest {
    for sealed in rx {
        if shared.is_failed() {
            // Leave the journal for recovery; nothing more is published.
            continue;
        }
        let Sealed {
            columns,
            journal,
            final_status,
            seq_end,
        } = sealed;
        if !columns.is_empty() {
            let dropped = columns.gaps.total();
            let ep = columns.into_episode();
            match publish_chunk(
                &*shared.fs,
                &shared.layout,
                &ep,
                &shared.settings.write_options,
                shared.settings.compression_workers,
                shared.settings.preallocate,
            ) {
                Ok(mut chunk) => {
                    gaps::set_chunk_dropped(&mut chunk, dropped);
                    manifest.push_chunk(chunk);
                }
                Err(e) => {
                    shared.fail(format!("publishing a chunk failed: {e}"));
                    continue;
                }
            }
            let _ = recycle.try_send(ep.channels.into_iter().map(|c| c.data).collect());
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
        if let Err(e) = commit_manifest(&*shared.fs, &shared.layout, &manifest) {
            shared.fail(format!("committing the manifest failed: {e}"));
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
                let dir = &shared.layout.dir;
                if let Err(e) = shared.fs.sync_dir(dir) {
                    tracing::warn!(path = %dir.display(), "could not fsync the directory after removing the last journal segment: {e}");
                }
            }
        }
        // A listed chunk is durable whatever the class (for `ack` with fsync `never` this is
        // the only DURABLE); the watermark never moves backwards.
        shared.advance_durable(seq_end);
    }
    manifest
}
