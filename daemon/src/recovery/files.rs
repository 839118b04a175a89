//! Recovering the files of one episode, or of one stream of a multi-stream episode (the
//! same files in the stream's folder): list them, start from the report a cut run left, and
//! take the steps of the module doc of `recovery` in order.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use wshard::manifest::Manifest;
use wshard::read::ShardReader;

use super::changes::{file_name, Run, RECOVERING};
use super::plan::{Action, RecoveryMode};
use super::report::{self, RecoveryReport};
use super::{chunks, journals};
use crate::chunk::gaps;
use crate::error::StorageError;
use crate::session::SessionSettings;
use wshard_storage::fsio::Fs;
use wshard_storage::layout::EpisodeLayout;

/// The manifest at `path`, read through `fs`; `None` when it is missing or unreadable.
fn read_manifest(fs: &dyn Fs, path: &Path) -> Option<Manifest> {
    let bytes = fs.read(path).ok()?;
    Manifest::read(&ShardReader::from_bytes(bytes).ok()?).ok()
}

/// Manifest statuses after which nothing is left to do.
pub(crate) const FINAL_STATUSES: [&str; 4] = ["complete", "aborted", "interrupted", "recovered"];

/// The files of an episode directory, by kind.
#[derive(Debug, Default)]
struct DirFiles {
    journals: BTreeMap<u64, PathBuf>,
    partials: BTreeMap<u64, PathBuf>,
    chunks: BTreeMap<u64, PathBuf>,
    /// The manifest's temporary file (a commit cut before its rename), if there is one;
    /// no other `.tmp` file in the directory is the daemon's.
    temps: Vec<PathBuf>,
}

fn list(fs: &dyn Fs, layout: &EpisodeLayout) -> Result<DirFiles, StorageError> {
    let mut out = DirFiles::default();
    let chunk_prefix = format!("{}_chunk_", layout.episode_id);
    let mut manifest_tmp = layout.manifest().into_os_string();
    manifest_tmp.push(".tmp");
    for p in fs
        .read_dir(&layout.dir)
        .map_err(|e| StorageError::io("list episode directory", &layout.dir, e))?
    {
        let name = file_name(&p);
        if let Some(k) = EpisodeLayout::journal_index(&p) {
            out.journals.insert(k, p);
        } else if let Some(k) = layout.partial_index(&p) {
            out.partials.insert(k, p);
        } else if p.as_os_str() == manifest_tmp {
            out.temps.push(p);
        } else if let Some(k) = name
            .strip_prefix(&chunk_prefix)
            .and_then(|s| s.strip_suffix(".wshard"))
            .and_then(|s| s.parse().ok())
        {
            out.chunks.insert(k, p);
        }
    }
    Ok(out)
}

/// The report to start from: the one a cut recovery left in a `recovering` manifest, or
/// a fresh one.
fn starting_report(episode_id: &str, existing: Option<&Manifest>) -> RecoveryReport {
    let status = existing.and_then(|m| m.status.clone());
    existing
        .filter(|_| status.as_deref() == Some(RECOVERING))
        .and_then(|m| m.extra.get(report::MANIFEST_KEY))
        .and_then(|earlier| RecoveryReport::resume(episode_id, earlier))
        .unwrap_or_else(|| RecoveryReport::new(episode_id, status))
}

/// Recover the episode (or stream) files of `layout`; its report is named `report_id`.
///
/// # Errors
/// A storage step that failed; recovery can be run again.
pub(crate) fn recover_layout(
    fs: &Arc<dyn Fs>,
    data_dir: &Path,
    layout: EpisodeLayout,
    report_id: &str,
    settings: &SessionSettings,
    mode: RecoveryMode,
) -> Result<Option<RecoveryReport>, StorageError> {
    let fs_ref: &dyn Fs = &**fs;
    let episode_id = report_id;
    let files = list(fs_ref, &layout)?;
    let existing = if fs_ref.exists(&layout.manifest()) {
        read_manifest(fs_ref, &layout.manifest())
    } else {
        None
    };
    let settled = existing
        .as_ref()
        .and_then(|m| m.status.as_deref())
        .is_some_and(|s| FINAL_STATUSES.contains(&s));
    // Chunk files a flight ring evicted: the committed manifest says the series starts
    // past them, so they are the daemon's and hold nothing the episode still lists (a cut
    // between the manifest commit and their removal).
    let ring_first = existing.as_ref().map_or(0, |m| m.ring_start().0);
    let evicted: Vec<PathBuf> = files
        .chunks
        .range(..ring_first)
        .map(|(_, p)| p.clone())
        .collect();
    if settled && files.journals.is_empty() && files.partials.is_empty() && files.temps.is_empty() {
        if mode.applies() {
            for p in &evicted {
                fs_ref
                    .remove_file(p)
                    .map_err(|e| StorageError::io("remove evicted chunk", p, e))?;
            }
        }
        return Ok(None);
    }
    let report = starting_report(episode_id, existing.as_ref());
    let unreadable = existing.is_none() && fs_ref.exists(&layout.manifest());
    let manifest = existing.unwrap_or_else(|| Manifest::new(layout.id(), ""));
    let mut run = Run::new(fs_ref, data_dir, layout, settings, mode, manifest, report);
    // Temporary files first: every manifest this run commits is written under the
    // manifest's temporary name, so a stale one must be gone before the first commit.
    for t in &files.temps {
        run.remove(t)?;
    }
    if unreadable {
        let path = run.layout.manifest();
        run.quarantine(&path, "the manifest cannot be read")?;
        // Its replacement names it from now on, should this run be cut.
        run.save_progress()?;
    }
    for p in &evicted {
        run.remove(p)?;
    }
    run.listed = run.manifest.next_chunk_index();
    run.next_timestep = run.manifest.total_timesteps;
    // Seqs differ from timesteps by the seqs dropped before them (drop policies).
    run.next_seq = run
        .next_timestep
        .saturating_add(gaps::manifest_dropped(&run.manifest));

    chunks::adopt_unlisted(&mut run, &files.chunks, &files.journals)?;

    // Partial chunks without a journal are moved aside; the others go with their journal.
    for (&k, path) in &files.partials {
        if !files.journals.contains_key(&k) {
            run.quarantine(path, "a partial chunk with no journal to re-derive it from")?;
        }
    }
    for (&k, path) in &files.journals {
        journals::settle_journal(
            &mut run,
            k,
            path,
            files.partials.get(&k).map(PathBuf::as_path),
        )?;
    }

    // Finalized chunks still unlisted (after one that could not be adopted, or no longer
    // continuing the episode) are moved aside: never left behind unreported, never deleted.
    for path in files.chunks.range(run.listed..).map(|(_, p)| p) {
        let done = run
            .report
            .actions
            .iter()
            .any(|a| matches!(a, Action::Quarantine { from, .. } if from == path));
        if !done {
            run.quarantine(path, "a finalized chunk that does not continue the episode")?;
        }
    }

    gaps::update_manifest(&mut run.manifest, false);
    run.commit("recovered")?;
    Ok(Some(run.report))
}
