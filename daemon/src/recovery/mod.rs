//! Recovery: finishing the episodes a stopped or crashed daemon left open.
//! It may call `session`, `episode_files`, `journal`, `chunk`, `episode`, `fsio` and `error`;
//! never `ingest`.
//!
//! Recovery on start (and offline, for `wshard recover`): every episode whose manifest is
//! not final gets its journal replayed past the last finalized chunk, the rest finalized,
//! and its manifest committed with `status: recovered` and a report.
//!
//! Every step is atomic and ordered like the live path (publish chunk, commit manifest,
//! then delete the journal), so recovery can be killed at any point and run again; the
//! report of a run that was cut is carried forward by the next (`report`).
//!
//! Nothing that may hold the only copy of data is deleted: a journal segment is removed
//! only when `fate::journal_fate` finds everything intact in it in a listed chunk, and a
//! listed chunk is verified before the journal that could rebuild it goes (`listed`).
//!
//! With [`RecoveryMode::DryRun`] every decision is the same but no file changes: each step
//! that would change one is only recorded in [`RecoveryReport::actions`].

mod changes;
mod chunks;
pub(crate) mod fate;
mod journals;
mod listed;
pub mod multi;
pub(crate) mod plan;
pub(crate) mod replay;
pub(crate) mod report;
mod settle;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use wshard::manifest::Manifest;
use wshard::read::ShardReader;

pub use multi::MultiRecovery;
pub use plan::{Action, RecoveryMode};
pub use report::{Discarded, RecoveryReport};

use crate::chunk::gaps;
use crate::episode::layout::{
    validate_episode_id, EpisodeLayout, MAX_EPISODE_ID_BYTES, QUARANTINE_DIR,
};
use crate::error::StorageError;
use crate::fsio::Fs;
use crate::session::SessionSettings;
use changes::{file_name, Run, RECOVERING};

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
    temps: Vec<PathBuf>,
}

fn list(fs: &dyn Fs, layout: &EpisodeLayout) -> Result<DirFiles, StorageError> {
    let mut out = DirFiles::default();
    let chunk_prefix = format!("{}_chunk_", layout.episode_id);
    for p in fs
        .read_dir(&layout.dir)
        .map_err(|e| StorageError::io("list episode directory", &layout.dir, e))?
    {
        let name = file_name(&p);
        if let Some(k) = EpisodeLayout::journal_index(&p) {
            out.journals.insert(k, p);
        } else if let Some(k) = layout.partial_index(&p) {
            out.partials.insert(k, p);
        } else if name.ends_with(".tmp") && !multi::is_episode_file_tmp(&name, layout.id()) {
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

/// Recover one episode directory. Returns `None` when it needed nothing.
///
/// # Errors
/// A storage step that failed; recovery can be run again.
pub fn recover_episode(
    fs: &Arc<dyn Fs>,
    data_dir: &Path,
    episode_id: &str,
    settings: &SessionSettings,
) -> Result<Option<RecoveryReport>, StorageError> {
    recover_episode_with(fs, data_dir, episode_id, settings, RecoveryMode::Apply)
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

/// [`recover_episode`], or with [`RecoveryMode::DryRun`] the same decisions without
/// changing any file (the report then says what would be done).
///
/// # Errors
/// A storage step that failed (in a dry run, reading or validating); recovery can be run
/// again.
pub fn recover_episode_with(
    fs: &Arc<dyn Fs>,
    data_dir: &Path,
    episode_id: &str,
    settings: &SessionSettings,
    mode: RecoveryMode,
) -> Result<Option<RecoveryReport>, StorageError> {
    let dir = data_dir.join(episode_id);
    multi::drop_annotations_tmp(&**fs, &dir, episode_id, mode)?;
    if multi::is_multi_stream(&**fs, &dir, episode_id) {
        return multi::recover_multi(fs, data_dir, episode_id, settings, mode)
            .map(|r| r.map(MultiRecovery::into_episode_report));
    }
    let layout = EpisodeLayout::new(data_dir, episode_id);
    let mut report = recover_layout(fs, data_dir, layout, episode_id, settings, mode)?;
    // Events sent beside a single-stream episode (version 2): a torn last line is cut.
    if let Some(r) = &mut report {
        multi::cut_events_tail(&**fs, &dir, episode_id, mode, r)?;
    }
    Ok(report)
}

/// Recover the episode (or stream) files of `layout`; its report is named `report_id`.
///
/// # Errors
/// As [`recover_episode_with`].
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
    if settled && files.journals.is_empty() && files.partials.is_empty() && files.temps.is_empty() {
        return Ok(None);
    }
    let report = starting_report(episode_id, existing.as_ref());
    let unreadable = existing.is_none() && fs_ref.exists(&layout.manifest());
    let manifest = existing.unwrap_or_else(|| Manifest::new(layout.id(), ""));
    let mut run = Run::new(fs_ref, data_dir, layout, settings, mode, manifest, report);
    if unreadable {
        let path = run.layout.manifest();
        run.quarantine(&path, "the manifest cannot be read")?;
        // Its replacement names it from now on, should this run be cut.
        run.save_progress()?;
    }
    for t in &files.temps {
        run.remove(t)?;
    }
    run.listed = run.manifest.chunks.len() as u64;
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

/// Recover every episode under `data_dir` (the quarantine directory is skipped).
/// Failures are reported per episode and do not stop the others.
#[must_use]
pub fn recover_all(
    fs: &Arc<dyn Fs>,
    data_dir: &Path,
    settings: &SessionSettings,
) -> Vec<Result<RecoveryReport, (String, StorageError)>> {
    recover_all_with(fs, data_dir, settings, RecoveryMode::Apply)
}

/// [`recover_all`] in the given mode.
#[must_use]
pub fn recover_all_with(
    fs: &Arc<dyn Fs>,
    data_dir: &Path,
    settings: &SessionSettings,
    mode: RecoveryMode,
) -> Vec<Result<RecoveryReport, (String, StorageError)>> {
    let mut out = Vec::new();
    let Ok(entries) = fs.read_dir(data_dir) else {
        return out;
    };
    for dir in entries {
        let name = file_name(&dir);
        // Through `fs` (not `Path::is_dir`), so that recovery sees what the `Fs` holds.
        if name == QUARANTINE_DIR || fs.read_dir(&dir).is_err() {
            continue;
        }
        if let Err(e) = validate_episode_id(&name, MAX_EPISODE_ID_BYTES) {
            tracing::warn!(path = %dir.display(), "skipping a directory that is not an episode: {e}");
            continue;
        }
        match recover_episode_with(fs, data_dir, &name, settings, mode) {
            Ok(Some(r)) => out.push(Ok(r)),
            Ok(None) => {}
            Err(e) => out.push(Err((name, e))),
        }
    }
    out
}
