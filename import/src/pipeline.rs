//! Reading, encoding and committing on three threads: a reader produces batches (one
//! source format's iterator: what it read of the source), the caller's thread turns each
//! into episodes and encodes and writes them under their staging directories
//! ([`EpisodeSink::stage_batch`]), a committer syncs and renames the previous batch
//! ([`EpisodeSink::commit_batch`]). One batch in flight between each pair, so memory stays
//! at about three batches.

use std::path::Path;
use std::sync::mpsc::sync_channel;

use wshard::episode::Episode;

use crate::error::{ImportError, Result};
use crate::sink::{EpisodeSink, StagedBatch, WrittenEpisode};

/// Batches waiting between two stages.
const DEPTH: usize = 1;

/// Write every batch `batches` yields into `sink`, in order. Stops at the first error (a
/// reading error of the source, or a write error), after the batches before it were
/// committed; the failing batch leaves no episode.
///
/// # Errors
/// The first error.
pub fn write_all<I>(
    sink: &EpisodeSink<'_>,
    source: &Path,
    batches: I,
) -> Result<Vec<WrittenEpisode>>
where
    I: Iterator<Item = Result<Vec<Episode>>> + Send,
{
    write_all_with(sink, source, batches, Ok)
}

/// As [`write_all`], the reader's items turned into episodes by `build` on the caller's
/// thread (so that the reader thread only reads).
///
/// # Errors
/// The first error.
pub fn write_all_with<I, T, F>(
    sink: &EpisodeSink<'_>,
    source: &Path,
    batches: I,
    build: F,
) -> Result<Vec<WrittenEpisode>>
where
    I: Iterator<Item = Result<T>> + Send,
    T: Send,
    F: Fn(T) -> Result<Vec<Episode>>,
{
    let (read_tx, read_rx) = sync_channel::<Result<T>>(DEPTH);
    let (stage_tx, stage_rx) = sync_channel::<StagedBatch>(DEPTH);
    std::thread::scope(|s| {
        s.spawn(move || {
            for b in batches {
                let failed = b.is_err();
                if read_tx.send(b).is_err() || failed {
                    break;
                }
            }
        });
        let committer = s.spawn(move || {
            let mut out = Vec::new();
            for batch in stage_rx {
                out.extend(sink.commit_batch(batch)?);
            }
            Ok::<_, ImportError>(out)
        });
        let mut staged = Ok(());
        for b in read_rx {
            let r = b
                .and_then(&build)
                .and_then(|eps| sink.stage_batch(&eps, source));
            match r {
                Ok(batch) => {
                    if let Err(e) = stage_tx.send(batch) {
                        // The committer stopped on an error (it reports it).
                        sink.abandon_batch(e.0);
                        break;
                    }
                }
                Err(e) => {
                    staged = Err(e);
                    break;
                }
            }
        }
        drop(stage_tx);
        let committed = committer
            .join()
            .unwrap_or_else(|_| Err(ImportError::Usage("the commit thread panicked".into())));
        // A commit error came first (its batch was staged earlier).
        let out = committed?;
        staged?;
        Ok(out)
    })
}
