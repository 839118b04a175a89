//! The chunk writer of a session (thread `chunk-EPISODE`): compresses each chunk the writer
//! sealed and writes its file to the `.partial` ([`write_partial_chunk`]), then hands it to
//! the finisher ([`super::finisher`], thread `fin-EPISODE`), which makes the chunks durable
//! strictly in order, commits the manifest after each one, and only then deletes the
//! chunk's journal segment.

use std::path::PathBuf;
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use wshard::manifest::Manifest;

use super::failure::SessionFailure;
use super::finisher::{self, Handoff};
use super::parts::NextPart;
use super::shared::{FinalStatus, SessionShared};
use crate::chunk::chunk_file::{write_partial_chunk, ChunkTarget};
use crate::chunk::ChunkColumns;
use wshard_storage::layout::EpisodeLayout;

/// A chunk the writer sealed (see [`super::rotation`]), handed to the chunk writer.
pub(crate) struct SealedChunk {
    pub(crate) columns: ChunkColumns,
    /// The journal segment holding the same timesteps, deleted once the chunk is in the manifest.
    pub(crate) journal: Option<PathBuf>,
    /// Set on the last chunk of the episode.
    pub(crate) final_status: Option<FinalStatus>,
    /// One past the last seq in this chunk.
    pub(crate) seq_end: u64,
    /// On a split part's last chunk: the part recording next (see `super::split`).
    pub(crate) next: Option<Box<NextPart>>,
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
    rx: &Receiver<SealedChunk>,
    recycle: &Sender<Vec<Vec<u8>>>,
    manifest: Manifest,
) -> Manifest {
    // Capacity 0: this thread starts chunk k+2 only once the finisher has taken chunk k+1.
    let (to_finisher, finisher_rx) = crossbeam_channel::bounded::<Handoff>(0);
    std::thread::scope(|s| {
        let name = std::thread::current()
            .name()
            .map_or_else(|| "fin".to_owned(), |n| n.replacen("chunk-", "fin-", 1));
        let start = manifest.clone();
        let finisher = std::thread::Builder::new()
            .name(name)
            .spawn_scoped(s, move || finisher::run(shared, &finisher_rx, start));
        let finisher = match finisher {
            Ok(f) => f,
            Err(e) => {
                // No chunk is finalized; the journal stays for recovery.
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
        // The part whose chunks are written: the episode's, then each next part's.
        let mut layout = shared.layout.clone();
        for sealed in rx {
            let next_layout = sealed.next.as_ref().map(|n| n.layout.clone());
            let handoff = write_sealed(shared, &layout, sealed, recycle);
            if let Some(l) = next_layout {
                layout = l;
            }
            if to_finisher.send(handoff).is_err() {
                break;
            }
        }
        drop(to_finisher);
        finisher.join().unwrap_or(manifest)
    })
}

/// Compress and write one sealed chunk (unless the session has failed).
fn write_sealed(
    shared: &SessionShared,
    layout: &EpisodeLayout,
    sealed: SealedChunk,
    recycle: &Sender<Vec<Vec<u8>>>,
) -> Handoff {
    let SealedChunk {
        columns,
        journal,
        final_status,
        seq_end,
        next,
    } = sealed;
    let dropped = columns.gaps.total();
    let t_range = columns
        .t_ns
        .first()
        .copied()
        .zip(columns.t_ns.last().copied());
    let mut partial = None;
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
            layout,
            opts: &shared.settings.write_options,
            workers: shared.settings.compression_workers,
            preallocate: shared.settings.preallocate,
        };
        match write_partial_chunk(&to, &mut ep, &crcs, &mut |ep| give_back(ep)) {
            Ok(p) => partial = Some(p),
            Err(e) => shared.fail(SessionFailure::WriteChunk((&e).into())),
        }
    } else {
        let _ = recycle.try_send(Vec::new());
    }
    Handoff {
        partial,
        dropped,
        journal,
        final_status,
        seq_end,
        next,
        t_range,
    }
}
