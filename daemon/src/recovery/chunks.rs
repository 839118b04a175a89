//! Finalized chunk files: verifying one, and adopting those the manifest does not list yet
//! (a crash between their rename and the manifest commit).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use wshard::episode::Episode;
use wshard::manifest::ChunkRef;
use wshard::read::ShardReader;

use super::changes::{file_name, Run};
use super::plan::Action;
use crate::chunk::digest::sha256_of;
use crate::chunk::{gaps, SeqGaps};
use crate::error::StorageError;
use wshard_storage::fsio::Fs;

/// A finalized chunk read back for adoption, `None` unless it verifies: every block is
/// read (CRC32C-checked) and every index entry's name matches its stored hash. Without the
/// latter a damaged name of an optional block (`time/timestamps_ns`) reads as an unknown
/// auxiliary block, and the chunk would be adopted without it.
pub(super) fn read_chunk(fs: &dyn Fs, path: &Path) -> Option<Episode> {
    let r = ShardReader::from_bytes(fs.read(path).ok()?).ok()?;
    let index = r.index();
    if index
        .names()
        .zip(index.entries())
        .any(|(n, e)| e.name_hash != wshard::hash::name_hash(n))
    {
        return None;
    }
    Episode::read(&r).ok()
}

/// What is wrong with a chunk file a manifest lists.
#[derive(Debug, thiserror::Error)]
pub(super) enum ListedChunkProblem {
    #[error(transparent)]
    BadUri(#[from] wshard::FormatError),
    #[error("{uri} is missing")]
    Missing { uri: String },
    #[error(transparent)]
    Unreadable(#[from] StorageError),
    #[error("{uri} has sha256 {found}, the manifest lists {listed}")]
    Sha256 {
        uri: String,
        found: String,
        listed: String,
    },
}

/// Whether the file a manifest entry lists is the one that was published: it exists and
/// its SHA-256 is the one listed (which `wshard verify` checks too). `Err` says what is
/// wrong with it.
pub(super) fn check_listed(
    fs: &dyn Fs,
    dir: &Path,
    entry: &ChunkRef,
) -> Result<(), ListedChunkProblem> {
    wshard::manifest::validate_uri(&entry.uri)?;
    let path = dir.join(&entry.uri);
    if !fs.exists(&path) {
        return Err(ListedChunkProblem::Missing {
            uri: entry.uri.clone(),
        });
    }
    let sha = sha256_of(fs, &path)?;
    if sha != entry.sha256 {
        return Err(ListedChunkProblem::Sha256 {
            uri: entry.uri.clone(),
            found: sha,
            listed: entry.sha256.clone(),
        });
    }
    Ok(())
}

/// Adopt finalized chunks the manifest does not list and no journal can re-derive, in
/// order, while they verify and continue the episode; the first that does not is
/// quarantined and ends the adoption.
pub(super) fn adopt_unlisted(
    run: &mut Run<'_>,
    chunks: &BTreeMap<u64, PathBuf>,
    journals: &BTreeMap<u64, PathBuf>,
) -> Result<(), StorageError> {
    for (&k, path) in chunks.range(run.listed..) {
        if journals.contains_key(&k) || k != run.listed {
            break;
        }
        let ep = read_chunk(run.fs, path).filter(|ep| {
            (ep.timestep_range.map(|r| r[0]) == Some(run.next_timestep) || ep.length == 0)
                && SeqGaps::of_episode(ep).is_ok()
        });
        let Some(ep) = ep else {
            run.quarantine(
                path,
                "an unlisted finalized chunk that fails verification or does not continue the episode",
            )?;
            break;
        };
        let dropped = SeqGaps::of_episode(&ep).map_or(0, |g| g.total());
        let mut chunk = ChunkRef {
            chunk_index: k,
            uri: file_name(path),
            sha256: sha256_of(run.fs, path)?,
            timestep_range: [
                run.next_timestep,
                (run.next_timestep + ep.length).saturating_sub(1),
            ],
            length_t: ep.length,
            extra: serde_json::Map::new(),
        };
        gaps::set_chunk_dropped(&mut chunk, dropped);
        if run.manifest.env_id.is_empty() {
            run.manifest.env_id.clone_from(&ep.env_id);
        }
        run.next_timestep += ep.length;
        run.next_seq = run
            .next_seq
            .saturating_add(ep.length)
            .saturating_add(dropped);
        run.manifest.push_chunk(chunk);
        run.listed += 1;
        run.report.chunks_recovered += 1;
        run.report.actions.push(Action::AdoptChunk {
            chunk_index: k,
            path: path.clone(),
        });
    }
    Ok(())
}
