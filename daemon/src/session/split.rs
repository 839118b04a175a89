//! Splitting a recording episode at a step boundary (see [`super::parts`]): the writer
//! syncs the journal, creates the next part durably (directory, `recording` manifest linked
//! to the part before, journal segment 0), then seals the open chunk as the finished part's
//! last chunk with status `complete` and a `NextPart` (`super::parts`) for the chunk writer and the
//! finisher, which switch to the next part's layout and manifest after it. Chunks of both
//! parts go through the same chunk writer and finisher, strictly in order, so the DURABLE
//! watermark never moves backwards across the cut.
//!
//! Seqs: a part is a normal episode whose seqs start at 0. The writer rebases each record's
//! seq by the part's `first_seq` (kept in the manifest's `split` object: the producer's seq
//! that is the part's seq 0, the one after the part before's last; seqs a ring dropped
//! right at the cut are the part's gap) before the journal and the columns see it; DURABLE
//! stays in the producer's seqs.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use wshard::manifest::Manifest;
use wshard_ingest_proto::SEQ_OFFSET;

use super::finisher::recorder_manifest_of;
use super::parts::{manifest_links, SplitError, SPLIT_MANIFEST_KEY};
use super::shared::SessionShared;
use crate::chunk::manifest_commit::commit_manifest;
use crate::episode::{Durability, EpisodeSchema};
use crate::journal::record::SegmentHeader;
use crate::journal::segment::JournalSegment;
use wshard_storage::layout::EpisodeLayout;

/// The part the writer records into.
#[derive(Clone, Debug)]
pub(crate) struct PartTarget {
    /// The part's episode id (`EP`, `EP.0001`, ...; for a stream, its episode's part).
    pub(crate) name: String,
    /// Part number: 0 for the producer's episode id, then 1, 2, ...
    pub(crate) number: u64,
    pub(crate) layout: EpisodeLayout,
    /// The episode's schema under the part's id.
    pub(crate) schema: Arc<EpisodeSchema>,
    /// The producer's seq that is the part's seq 0 (its first timestep's, unless the
    /// producer dropped seqs right at the cut).
    pub(crate) first_seq: u64,
    /// The part before this one.
    pub(crate) previous: Option<String>,
}

impl PartTarget {
    /// Part 0: the episode as opened.
    pub(crate) fn first(shared: &SessionShared) -> Self {
        Self {
            name: shared.parts.current(),
            number: 0,
            layout: shared.layout.clone(),
            schema: shared.schema.clone(),
            first_seq: 0,
            previous: None,
        }
    }

    /// The part's id.
    pub(crate) fn id(&self) -> &str {
        &self.name
    }

    /// This part's `split` object, linked to `next`.
    pub(crate) fn links(&self, base: &str, next: Option<&str>) -> Value {
        manifest_links(
            base,
            self.number,
            self.first_seq,
            self.previous.as_deref(),
            next,
        )
    }
}

/// A part created on disk, ready to record into.
pub(crate) struct CreatedPart {
    pub(crate) target: PartTarget,
    pub(crate) journal: Option<JournalSegment>,
    pub(crate) manifest: Manifest,
}

/// Where a part goes: its number and id, its directory, and the episode it is a part of
/// (the producer's episode id; for a stream, its multi-stream episode's).
pub(crate) struct PartPlace {
    pub(crate) number: u64,
    pub(crate) id: String,
    pub(crate) layout: EpisodeLayout,
    pub(crate) base: String,
}

/// Create part `place` after `previous`, its seq 0 being producer seq `first_seq`: the
/// directory (and a parent fsync), the `recording` manifest with its
/// `split` links, and journal segment 0 for durability `ack`. Crash-safe in this order:
/// an empty part left by a power cut is recovered like any episode with no timestep.
///
/// # Errors
/// [`SplitError::PartExists`] when the directory exists, [`SplitError::Storage`] for a
/// failed step (what was created stays for recovery; the episode records on in `previous`).
pub(crate) fn create_part(
    shared: &SessionShared,
    previous: &PartTarget,
    place: PartPlace,
    first_seq: u64,
) -> Result<CreatedPart, SplitError> {
    let PartPlace {
        number,
        id,
        layout,
        base,
    } = place;
    let id = id.as_str();
    let storage = |what: &str, path: &Path, e: &dyn std::fmt::Display| SplitError::Storage {
        episode: base.clone(),
        reason: format!("creating part `{id}`: {what} {}: {e}", path.display()),
    };
    let data_dir = layout
        .dir
        .parent()
        .map_or_else(|| std::path::PathBuf::from("."), Path::to_path_buf);
    match shared.fs.create_dir(&layout.dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(SplitError::PartExists {
                episode: base,
                part: id.to_owned(),
            })
        }
        Err(e) => return Err(storage("create directory", &layout.dir, &e)),
    }
    shared
        .fs
        .sync_dir(&data_dir)
        .map_err(|e| storage("fsync directory", &data_dir, &e))?;
    let mut schema = (*previous.schema).clone();
    if schema.stream_of().is_some() {
        // A stream keeps its name; it belongs to the episode's next part now.
        schema = schema.in_episode(id);
    } else {
        schema.episode_id = id.to_owned();
    }
    let target = PartTarget {
        name: id.to_owned(),
        number,
        layout,
        schema: Arc::new(schema),
        first_seq,
        previous: Some(previous.id().to_owned()),
    };
    let mut manifest = recorder_manifest_of(&target.schema);
    manifest
        .extra
        .insert(SPLIT_MANIFEST_KEY.into(), target.links(&base, None));
    commit_manifest(&*shared.fs, &target.layout, &manifest)
        .map_err(|e| storage("commit manifest", &target.layout.manifest(), &e))?;
    let journal = match target.schema.durability {
        Durability::Ack => {
            let header = SegmentHeader {
                schema: (*target.schema).clone(),
                chunk_index: 0,
                first_timestep: 0,
            };
            let path = target.layout.journal(0);
            Some(
                JournalSegment::create(&*shared.fs, &path, &header)
                    .map_err(|e| storage("create journal", &path, &e))?,
            )
        }
        Durability::Chunk => None,
    };
    Ok(CreatedPart {
        target,
        journal,
        manifest,
    })
}

/// Rewrite the seq of every record of `records` (each `record_len` bytes) from the
/// producer's seq to the part's, `seq - base` (explicit little-endian). Records below
/// `base` cannot occur (the intake checked the order); they would saturate at 0.
pub(crate) fn rebase_seqs(records: &mut [u8], record_len: usize, base: u64) {
    if base == 0 || record_len < SEQ_OFFSET + 8 {
        return;
    }
    for rec in records.chunks_exact_mut(record_len) {
        let field = &mut rec[SEQ_OFFSET..SEQ_OFFSET + 8];
        let mut b = [0u8; 8];
        b.copy_from_slice(field);
        let local = u64::from_le_bytes(b).saturating_sub(base);
        field.copy_from_slice(&local.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_rebase_seqs_little_endian() {
        let len = 24;
        let mut recs = vec![0u8; len * 2];
        recs[..8].copy_from_slice(&105u64.to_le_bytes());
        recs[len..len + 8].copy_from_slice(&106u64.to_le_bytes());
        recs[8] = 0xAB;
        rebase_seqs(&mut recs, len, 100);
        assert_eq!(&recs[..8], &5u64.to_le_bytes());
        assert_eq!(&recs[len..len + 8], &6u64.to_le_bytes());
        assert_eq!(recs[8], 0xAB);
    }
}
