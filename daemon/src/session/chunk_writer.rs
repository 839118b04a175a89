//! The publisher of a session: writes sealed chunks (publisher thread) and finalizes them
//! strictly in order (finisher thread), commits the manifest after each one, and only then
//! deletes the chunk's journal segment.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use serde_json::json;
use wshard::manifest::Manifest;

use super::failure::SessionFailure;
use super::shared::{FinalStatus, SessionShared};
use crate::chunk::chunk_file::{finalize_chunk, write_partial_chunk, ChunkTarget, PartialChunk};
use crate::chunk::gaps;
use crate::chunk::manifest_commit::commit_manifest;
use crate::chunk::ChunkColumns;

/// A chunk handed over by the writer.
pub(crate) struct Sealed {
    pub(crate) columns: ChunkColumns,
    /// The journal segment holding the same timesteps, deleted once the chunk is in the manifest.
    pub(crate) journal: Option<PathBuf>,
    /// Set on the last chunk of the episode.
    pub(crate) final_status: Option<FinalStatus>,
    /// One past the last seq in this chunk.
    pub(crate) seq_end: u64,
}

/// The manifest as the recorder writes it.
#[must_use]
pub(crate) fn recorder_manifest(shared: &SessionShared) -> Manifest {
    let mut m = Manifest::new(
        shared.schema.episode_id.clone(),
        shared.schema.env_id.clone(),
    );
    m.status = Some("recording".into());
    m.extra.insert(
        "durability".into(),
        json!(shared.schema.durability.as_str()),
    );
    m.extra.insert(
        "recorder".into(),
        json!(concat!("wshardd/", env!("CARGO_PKG_VERSION"))),
    );
    m
}

/// A chunk on its way from the publisher to the finisher.
struct Handoff {
    /// The chunk file, written and hashed; `None` for an empty last chunk or after a failure.
    written: Option<PartialChunk>,
    /// Seqs dropped (shared-memory drop policies) inside this chunk.
    dropped: u64,
    journal: Option<PathBuf>,
    final_status: Option<FinalStatus>,
    seq_end: u64,
}

/// Run until the writer drops its sender. Returns the manifest as last committed.
///
/// Two stages, so that the disk and the CPU work at once: this thread compresses and writes
/// chunk k+1 (and hashes it from memory) while the finisher thread makes chunk k durable
/// (fsync, rename, directory fsync), lists it in the manifest and drops its journal segment.
/// Chunks are finished strictly in order, one at a time; a chunk is in the manifest only once
/// its file is durable under its final name. Each written chunk's channel buffers go back to
/// the writer through `recycle`, for the next chunk to fill (dropped when the writer has not
/// taken the previous ones).
pub(crate) fn run(
    shared: &Arc<SessionShared>,
    rx: &Receiver<Sealed>,
    recycle: &Sender<Vec<Vec<u8>>>,
    manifest: Manifest,
) -> Manifest {
    // Capacity 0: this thread starts chunk k+2 only once the finisher has taken chunk k+1.
    let (to_finisher, finisher_rx) = crossbeam_channel::bounded::<Handoff>(0);
    std::thread::scope(|s| {
        let name = std::thread::current()
            .name()
            .map_or_else(|| "fin".to_owned(), |n| n.replacen("pub-", "fin-", 1));
        let start = manifest.clone();
        let finisher = std::thread::Builder::new()
            .name(name)
            .spawn_scoped(s, move || finish_loop(shared, &finisher_rx, start));
        let finisher = match finisher {
            Ok(f) => f,
            Err(e) => {
                // Nothing is published; the journal stays for recovery.
                shared.fail(SessionFailure::FinisherNotStarted {
                    reason: e.to_string(),
                });
                // Every sealed chunk's slot goes back, or the writer would wait for it.
                for _ in rx {
                    let _ = recycle.try_send(Vec::new());
                }
                return manifest;
            }
        };
        for sealed in rx {
            let handoff = write_stage(shared, sealed, recycle);
            if to_finisher.send(handoff).is_err() {
                break;
            }
        }
        drop(to_finisher);
        finisher.join().unwrap_or(manifest)
    })
}

/// Compress and write one sealed chunk (unless the session has failed).
fn write_stage(shared: &SessionShared, sealed: Sealed, recycle: &Sender<Vec<Vec<u8>>>) -> Handoff {
    let Sealed {
        columns,
        journal,
        final_status,
        seq_end,
    } = sealed;
    let dropped = columns.gaps.total();
    let mut written = None;
    // The chunk's memory slot goes back to the writer exactly once per sealed chunk, with
    // the channel buffers when there are any: early (right after compression) when the
    // chunk is compressed, otherwise once it is written.
    let give_back = |ep: &mut wshard::episode::Episode| {
        let buffers = ep
            .channels
            .iter_mut()
            .map(|c| std::mem::take(&mut c.data))
            .collect();
        let _ = recycle.try_send(buffers);
    };
    if !columns.is_empty() && !shared.is_failed() {
        let (mut ep, crcs) = columns.into_episode_with_crcs();
        let to = ChunkTarget {
            fs: &*shared.fs,
            layout: &shared.layout,
            opts: &shared.settings.write_options,
            workers: shared.settings.compression_workers,
            preallocate: shared.settings.preallocate,
        };
        match write_partial_chunk(&to, &mut ep, &crcs, &mut |ep| give_back(ep)) {
            Ok(w) => written = Some(w),
            Err(e) => shared.fail(SessionFailure::PublishChunk((&e).into())),
        }
    } else {
        let _ = recycle.try_send(Vec::new());
    }
    Handoff {
        written,
        dropped,
        journal,
        final_status,
        seq_end,
    }
}

/// The finisher: make each written chunk durable, list it, commit the manifest, drop the
/// journal segment, advance the durable mark.
fn finish_loop(shared: &SessionShared, rx: &Receiver<Handoff>, mut manifest: Manifest) -> Manifest {
    for h in rx {
        if shared.is_failed() {
            // Leave the journal and any written `.partial` for recovery; nothing more is
            // published.
            continue;
        }
        let Handoff {
            written,
            dropped,
            journal,
            final_status,
            seq_end,
        } = h;
        if let Some(w) = written {
            match finalize_chunk(&*shared.fs, &shared.layout, w) {
                Ok(mut chunk) => {
                    gaps::set_chunk_dropped(&mut chunk, dropped);
                    manifest.push_chunk(chunk);
                }
                Err(e) => {
                    shared.fail(SessionFailure::PublishChunk((&e).into()));
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
        if let Err(e) = commit_manifest(&*shared.fs, &shared.layout, &manifest) {
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
