//! Recovery on start (and offline, for `wshard recover`): every episode whose manifest is
//! not final gets its journal replayed past the last finalized chunk, the rest finalized,
//! and its manifest committed with `status: recovered` and a report.
//!
//! Every step is atomic and ordered like the live path (publish chunk, commit manifest,
//! then delete the journal), so recovery can be killed at any point and run again.
//!
//! With [`RecoveryMode::DryRun`] every decision is the same but no file changes: each step
//! that would change one is only recorded in [`RecoveryReport::actions`].

mod changes;
pub mod plan;
pub mod report;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use wshard::episode::Episode;
use wshard::manifest::{ChunkRef, Manifest};
use wshard::read::ShardReader;

pub use plan::{Action, RecoveryMode};
pub use report::{Discarded, RecoveryReport};

use crate::chunk::publish::sha256_of;
use crate::chunk::step::steps;
use crate::chunk::ChunkColumns;
use crate::episode::layout::{
    validate_episode_id, EpisodeLayout, MAX_EPISODE_ID_BYTES, QUARANTINE_DIR,
};
use crate::error::StorageError;
use crate::fsio::Fs;
use crate::journal::segment::read_segment;
use crate::session::SessionSettings;
use changes::{commit, file_name, publish, quarantine, remove};

/// The manifest at `path`, read through `fs`; `None` when it is missing or unreadable.
fn read_manifest(fs: &dyn Fs, path: &Path) -> Option<Manifest> {
    let bytes = fs.read(path).ok()?;
    Manifest::read(&ShardReader::from_bytes(bytes).ok()?).ok()
}

/// Manifest statuses after which nothing is left to do.
pub const FINAL_STATUSES: [&str; 4] = ["complete", "aborted", "interrupted", "recovered"];

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
        } else if name.ends_with(".tmp") {
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
    let fs_ref: &dyn Fs = &**fs;
    let layout = EpisodeLayout::new(data_dir, episode_id);
    let files = list(fs_ref, &layout)?;
    let existing = if fs_ref.exists(&layout.manifest()) {
        read_manifest(fs_ref, &layout.manifest())
    } else {
        None
    };
    let status = existing.as_ref().and_then(|m| m.status.clone());
    let settled = status
        .as_deref()
        .is_some_and(|s| FINAL_STATUSES.contains(&s));
    if settled && files.journals.is_empty() && files.partials.is_empty() && files.temps.is_empty() {
        return Ok(None);
    }
    let mut report = RecoveryReport {
        episode_id: episode_id.to_owned(),
        previous_status: status.clone(),
        ..RecoveryReport::default()
    };
    if existing.is_none() && fs_ref.exists(&layout.manifest()) {
        quarantine(
            fs_ref,
            data_dir,
            episode_id,
            &layout.manifest(),
            &mut report,
            mode,
        )?;
    }
    for t in &files.temps {
        remove(fs_ref, t, &mut report, mode)?;
    }
    let mut manifest = existing.unwrap_or_else(|| Manifest::new(episode_id, ""));
    let mut listed = manifest.chunks.len() as u64;
    let mut next_timestep = manifest.total_timesteps;

    // Finalized chunks the manifest does not list yet (crash between rename and commit)
    // and that no journal can re-derive: adopt them if they verify.
    for (&k, path) in files.chunks.range(listed..) {
        if files.journals.contains_key(&k) {
            break;
        }
        if k != listed {
            break;
        }
        match fs_ref.read(path).ok().map(Episode::from_bytes) {
            Some(Ok(ep))
                if ep.timestep_range.map(|r| r[0]) == Some(next_timestep) || ep.length == 0 =>
            {
                let chunk = ChunkRef {
                    chunk_index: k,
                    uri: file_name(path),
                    sha256: sha256_of(fs_ref, path)?,
                    timestep_range: [next_timestep, (next_timestep + ep.length).saturating_sub(1)],
                    length_t: ep.length,
                    extra: serde_json::Map::new(),
                };
                if manifest.env_id.is_empty() {
                    manifest.env_id.clone_from(&ep.env_id);
                }
                next_timestep += ep.length;
                manifest.push_chunk(chunk);
                listed += 1;
                report.chunks_recovered += 1;
                report.actions.push(Action::AdoptChunk {
                    chunk_index: k,
                    path: path.clone(),
                });
            }
            _ => {
                quarantine(fs_ref, data_dir, episode_id, path, &mut report, mode)?;
                break;
            }
        }
    }

    // Partial chunks: re-derivable from their journal, else moved aside.
    for (&k, path) in &files.partials {
        if files.journals.contains_key(&k) {
            remove(fs_ref, path, &mut report, mode)?;
        } else {
            quarantine(fs_ref, data_dir, episode_id, path, &mut report, mode)?;
        }
    }

    for (&k, path) in &files.journals {
        if k < listed {
            // Its chunk is already published and listed: the trim did not happen.
            remove(fs_ref, path, &mut report, mode)?;
            continue;
        }
        let bytes = fs_ref
            .read(path)
            .map_err(|e| StorageError::io("read journal", path, e))?;
        if bytes.iter().all(|&b| b == 0) {
            // Created but never written (a crash right after creation): it holds nothing.
            remove(fs_ref, path, &mut report, mode)?;
            continue;
        }
        let seg = read_segment(&bytes);
        let name = file_name(path);
        for c in &seg.scan.corruptions {
            report.discarded.push(Discarded {
                file: name.clone(),
                offset: c.offset,
                len: c.len,
                reason: c.reason.clone(),
            });
        }
        for (off, why) in &seg.problems {
            report.discarded.push(Discarded {
                file: name.clone(),
                offset: *off,
                len: 0,
                reason: why.clone(),
            });
        }
        let Some(header) = seg.header else {
            report.discarded.push(Discarded {
                file: name.clone(),
                offset: 0,
                len: bytes.len() as u64,
                reason: "no readable segment header".into(),
            });
            quarantine(fs_ref, data_dir, episode_id, path, &mut report, mode)?;
            continue;
        };
        if k != listed || header.chunk_index != k || header.first_timestep != next_timestep {
            report.discarded.push(Discarded {
                file: name.clone(),
                offset: 0,
                len: bytes.len() as u64,
                reason: format!(
                    "segment of chunk {} starting at timestep {} does not continue chunk {listed} at timestep {next_timestep}",
                    header.chunk_index, header.first_timestep
                ),
            });
            quarantine(fs_ref, data_dir, episode_id, path, &mut report, mode)?;
            continue;
        }
        if manifest.env_id.is_empty() {
            manifest.env_id.clone_from(&header.schema.env_id);
        }
        let schema = Arc::new(header.schema);
        let mut columns = ChunkColumns::new(schema.clone(), k, next_timestep);
        let rec_len = crate::chunk::step::STEP_HEADER_LEN + schema.step_payload_bytes;
        for ((i, s), expect) in steps(&seg.steps, schema.step_payload_bytes)
            .enumerate()
            .zip(next_timestep..)
        {
            if s.seq != expect {
                report.discarded.push(Discarded {
                    file: name.clone(),
                    offset: 0,
                    len: (seg.steps.len() - i * rec_len) as u64,
                    reason: format!("timestep seq {} where {expect} was expected; the rest of the segment is dropped", s.seq),
                });
                break;
            }
            columns.push(&s);
        }
        if !columns.is_empty() {
            let n = columns.len();
            let ep = columns.into_episode();
            let chunk = publish(fs_ref, &layout, &ep, settings, mode)?;
            report.actions.push(Action::PublishChunk {
                chunk_index: k,
                journal: path.clone(),
                chunk: layout.chunk(k),
                first_timestep: next_timestep,
                timesteps: n,
            });
            manifest.push_chunk(chunk);
            listed += 1;
            next_timestep += n;
            report.timesteps_recovered += n;
            report.chunks_recovered += 1;
            manifest.status = Some("recovering".into());
            commit(fs_ref, &layout, &manifest, &mut report, mode)?;
        }
        remove(fs_ref, path, &mut report, mode)?;
    }

    manifest.status = Some("recovered".into());
    manifest.extra.insert("recovery".into(), report.to_json());
    commit(fs_ref, &layout, &manifest, &mut report, mode)?;
    Ok(Some(report))
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

/// A `json!` of reports for logs and the CLI.
#[must_use]
pub fn reports_json(reports: &[RecoveryReport]) -> serde_json::Value {
    json!(reports
        .iter()
        .map(RecoveryReport::to_json)
        .collect::<Vec<_>>())
}
