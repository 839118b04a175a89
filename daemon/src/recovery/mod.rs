//! Recovery on start (and offline, for `wshard recover`): every episode whose manifest is
//! not final gets its journal replayed past the last finalized chunk, the rest finalized,
//! and its manifest committed with `status: recovered` and a report.
//!
//! Every step is atomic and ordered like the live path (publish chunk, commit manifest,
//! then delete the journal), so recovery can be killed at any point and run again.

pub mod report;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use wshard::episode::Episode;
use wshard::manifest::{ChunkRef, Manifest};

pub use report::{Discarded, RecoveryReport};

use crate::chunk::publish::{commit_manifest, publish_chunk};
use crate::chunk::step::steps;
use crate::chunk::ChunkColumns;
use crate::episode::layout::{
    validate_episode_id, EpisodeLayout, MAX_EPISODE_ID_BYTES, QUARANTINE_DIR,
};
use crate::error::StorageError;
use crate::fsio::Fs;
use crate::journal::segment::read_segment;
use crate::session::SessionSettings;

/// Manifest statuses after which nothing is left to do.
pub const FINAL_STATUSES: [&str; 4] = ["complete", "aborted", "interrupted", "recovered"];

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Move `path` into `data_dir/quarantine/{episode}/`, never overwriting.
fn quarantine(
    fs: &dyn Fs,
    data_dir: &Path,
    episode: &str,
    path: &Path,
    report: &mut RecoveryReport,
) -> Result<(), StorageError> {
    let qdir = data_dir.join(QUARANTINE_DIR).join(episode);
    fs.create_dir_all(&qdir)
        .map_err(|e| StorageError::io("create quarantine directory", &qdir, e))?;
    let mut target = qdir.join(file_name(path));
    let mut n = 1;
    while fs.exists(&target) {
        target = qdir.join(format!("{}.{n}", file_name(path)));
        n += 1;
    }
    fs.move_aside(path, &target)
        .map_err(|e| StorageError::io("move to quarantine", path, e))?;
    report.quarantined.push(target.display().to_string());
    Ok(())
}

fn remove(fs: &dyn Fs, path: &Path, report: &mut RecoveryReport) -> Result<(), StorageError> {
    fs.remove_file(path)
        .map_err(|e| StorageError::io("remove", path, e))?;
    report.removed.push(file_name(path));
    Ok(())
}

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
    let fs_ref: &dyn Fs = &**fs;
    let layout = EpisodeLayout::new(data_dir, episode_id);
    let files = list(fs_ref, &layout)?;
    let existing = if fs_ref.exists(&layout.manifest()) {
        Manifest::read_file(layout.manifest()).ok()
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
        )?;
    }
    for t in &files.temps {
        remove(fs_ref, t, &mut report)?;
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
        match Episode::read_file(path) {
            Ok(ep) if ep.timestep_range.map(|r| r[0]) == Some(next_timestep) || ep.length == 0 => {
                let chunk = ChunkRef::for_file(path, k, next_timestep, ep.length)
                    .map_err(|e| StorageError::format("hash adopted chunk", e))?;
                if manifest.env_id.is_empty() {
                    manifest.env_id.clone_from(&ep.env_id);
                }
                next_timestep += ep.length;
                manifest.push_chunk(chunk);
                listed += 1;
                report.chunks_recovered += 1;
            }
            _ => {
                quarantine(fs_ref, data_dir, episode_id, path, &mut report)?;
                break;
            }
        }
    }

    // Partial chunks: re-derivable from their journal, else moved aside.
    for (&k, path) in &files.partials {
        if files.journals.contains_key(&k) {
            remove(fs_ref, path, &mut report)?;
        } else {
            quarantine(fs_ref, data_dir, episode_id, path, &mut report)?;
        }
    }

    for (&k, path) in &files.journals {
        if k < listed {
            // Its chunk is already published and listed: the trim did not happen.
            remove(fs_ref, path, &mut report)?;
            continue;
        }
        let bytes = fs_ref
            .read(path)
            .map_err(|e| StorageError::io("read journal", path, e))?;
        if bytes.iter().all(|&b| b == 0) {
            // Created but never written (a crash right after creation): it holds nothing.
            remove(fs_ref, path, &mut report)?;
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
            quarantine(fs_ref, data_dir, episode_id, path, &mut report)?;
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
            quarantine(fs_ref, data_dir, episode_id, path, &mut report)?;
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
            let chunk = publish_chunk(
                fs_ref,
                &layout,
                &ep,
                &settings.write_options,
                settings.compression_workers,
            )?;
            manifest.push_chunk(chunk);
            listed += 1;
            next_timestep += n;
            report.timesteps_recovered += n;
            report.chunks_recovered += 1;
            manifest.status = Some("recovering".into());
            commit_manifest(fs_ref, &layout, &manifest)?;
        }
        remove(fs_ref, path, &mut report)?;
    }

    manifest.status = Some("recovered".into());
    manifest.extra.insert("recovery".into(), report.to_json());
    commit_manifest(fs_ref, &layout, &manifest)?;
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
    let mut out = Vec::new();
    let Ok(entries) = fs.read_dir(data_dir) else {
        return out;
    };
    for dir in entries {
        let name = file_name(&dir);
        if name == QUARANTINE_DIR || !dir.is_dir() {
            continue;
        }
        if let Err(e) = validate_episode_id(&name, MAX_EPISODE_ID_BYTES) {
            tracing::warn!(path = %dir.display(), "skipping a directory that is not an episode: {e}");
            continue;
        }
        match recover_episode(fs, data_dir, &name, settings) {
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
