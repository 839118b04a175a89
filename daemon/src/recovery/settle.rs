//! Applying a [`JournalFate`]: the segment file removed or quarantined, and the `.partial`
//! of the same chunk with it.

use std::path::Path;

use super::changes::Run;
use super::fate::{journal_fate, Coverage, JournalFate};
use crate::error::StorageError;
use crate::journal::segment::SegmentContents;

/// Settle a segment none of whose timesteps are used (and its partial).
pub(super) fn settle(
    run: &mut Run<'_>,
    path: &Path,
    partial: Option<&Path>,
    seg: &SegmentContents,
    coverage: &Coverage,
) -> Result<(), StorageError> {
    let fate = journal_fate(seg, coverage);
    settle_partial(run, partial, seg, &fate)?;
    settle_file(run, path, seg, fate)
}

/// Remove chunk `k`'s `.partial` when its journal reads cleanly and is removed (everything
/// the partial can hold is then in the chunk); else quarantine it.
pub(super) fn settle_partial(
    run: &mut Run<'_>,
    partial: Option<&Path>,
    seg: &SegmentContents,
    fate: &JournalFate,
) -> Result<(), StorageError> {
    let Some(p) = partial else {
        return Ok(());
    };
    match fate {
        JournalFate::Remove if seg.scan.first_damage.is_none() => run.remove(p),
        JournalFate::Remove => run.quarantine(
            p,
            "a partial chunk whose journal is damaged: it may hold timesteps the journal lost",
        ),
        JournalFate::Quarantine(why) => run.quarantine(
            p,
            &format!("a partial chunk whose journal is kept too: {why}"),
        ),
    }
}

/// Remove or quarantine the segment file as decided. A removal is preceded by a commit of
/// the report when the segment reported anything, so that a cut cannot lose the record.
pub(super) fn settle_file(
    run: &mut Run<'_>,
    path: &Path,
    seg: &SegmentContents,
    fate: JournalFate,
) -> Result<(), StorageError> {
    match fate {
        JournalFate::Remove => {
            if !(seg.scan.corruptions.is_empty() && seg.problems.is_empty()) {
                run.save_progress()?;
            }
            run.remove(path)
        }
        JournalFate::Quarantine(why) => run.quarantine(path, &why),
    }
}
