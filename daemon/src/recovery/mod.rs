//! Recovery: finishing the episodes a stopped or crashed daemon left open.
//! It may call `session`, `journal`, `chunk`, `episode`, `fsio` and `error`; never `ingest`.
//!
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
pub mod replay;
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
use crate::chunk::{gaps, ChunkColumns, SeqGaps};
use crate::episode::layout::{
    validate_episode_id, EpisodeLayout, MAX_EPISODE_ID_BYTES, QUARANTINE_DIR,
};
use crate::error::StorageError;
use crate::fsio::Fs;
use crate::journal::segment::{read_segment, SegmentContents};
use crate::session::SessionSettings;
use changes::{commit, file_name, publish, quarantine, remove};

/// The manifest at `path`, read through `fs`; `None` when it is missing or unreadable.
fn read_manifest(fs: &dyn Fs, path: &Path) -> Option<Manifest> {
    let bytes = fs.read(path).ok()?;
    Manifest::read(&ShardReader::from_bytes(bytes).ok()?).ok()
}

/// A finalized chunk read back for adoption, `None` unless it verifies: every block is
/// read (CRC32C-checked) and every index entry's name matches its stored hash. Without the
/// latter a damaged name of an optional block (`time/timestamps_ns`) reads as an unknown
/// auxiliary block, and the chunk would be adopted without it.
fn read_chunk(fs: &dyn Fs, path: &Path) -> Option<Episode> {
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
    // Seqs differ from timesteps by the seqs dropped before them (drop policies).
    let mut next_seq = next_timestep.saturating_add(gaps::manifest_dropped(&manifest));

    // Finalized chunks the manifest does not list yet (crash between rename and commit)
    // and that no journal can re-derive: adopt them if they verify.
    for (&k, path) in files.chunks.range(listed..) {
        if files.journals.contains_key(&k) {
            break;
        }
        if k != listed {
            break;
        }
        match read_chunk(fs_ref, path) {
            Some(ep)
                if (ep.timestep_range.map(|r| r[0]) == Some(next_timestep) || ep.length == 0)
                    && SeqGaps::of_episode(&ep).is_ok() =>
            {
                let dropped = SeqGaps::of_episode(&ep).map_or(0, |g| g.total());
                let mut chunk = ChunkRef {
                    chunk_index: k,
                    uri: file_name(path),
                    sha256: sha256_of(fs_ref, path)?,
                    timestep_range: [next_timestep, (next_timestep + ep.length).saturating_sub(1)],
                    length_t: ep.length,
                    extra: serde_json::Map::new(),
                };
                gaps::set_chunk_dropped(&mut chunk, dropped);
                if manifest.env_id.is_empty() {
                    manifest.env_id.clone_from(&ep.env_id);
                }
                next_timestep += ep.length;
                next_seq = next_seq.saturating_add(ep.length).saturating_add(dropped);
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
            // Its chunk is already published and listed: the trim did not happen (or
            // recovery was cut before it moved aside a segment it could not fully use).
            let unused = fs_ref
                .read(path)
                .is_ok_and(|b| read_segment(&b).holds_unused_records());
            if unused {
                quarantine(fs_ref, data_dir, episode_id, path, &mut report, mode)?;
            } else {
                remove(fs_ref, path, &mut report, mode)?;
            }
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
        let mut seg = read_segment(&bytes);
        let name = file_name(path);
        let mut unused = seg.holds_unused_records();
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
        let Some(header) = seg.header.take() else {
            discard_rest(
                &mut report,
                &name,
                bytes.len() as u64,
                "no readable segment header",
            );
            quarantine(fs_ref, data_dir, episode_id, path, &mut report, mode)?;
            continue;
        };
        if k != listed || header.chunk_index != k || header.first_timestep != next_timestep {
            discard_rest(
                &mut report,
                &name,
                bytes.len() as u64,
                &format!(
                    "segment of chunk {} starting at timestep {} does not continue chunk {listed} at timestep {next_timestep}",
                    header.chunk_index, header.first_timestep
                ),
            );
            quarantine(fs_ref, data_dir, episode_id, path, &mut report, mode)?;
            continue;
        }
        if manifest.env_id.is_empty() {
            manifest.env_id.clone_from(&header.schema.env_id);
        }
        let schema = Arc::new(header.schema);
        let mut columns = ChunkColumns::new(schema.clone(), k, next_timestep);
        let (seq_end, stopped) =
            replay::replay(&seg, schema.step_payload_bytes, &mut columns, next_seq);
        next_seq = seq_end;
        if let Some(st) = stopped {
            report
                .discarded
                .extend(dropped_regions(&seg, st.at, &name, &st.reason));
            unused = true;
        }
        if !columns.is_empty() {
            let n = columns.len();
            let dropped = columns.gaps.total();
            let mut ep = columns.into_episode();
            let mut chunk = publish(fs_ref, &layout, &mut ep, settings, mode)?;
            gaps::set_chunk_dropped(&mut chunk, dropped);
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
        if unused {
            // Intact records it holds are not in the episode: keep them.
            quarantine(fs_ref, data_dir, episode_id, path, &mut report, mode)?;
        } else {
            remove(fs_ref, path, &mut report, mode)?;
        }
    }

    // Finalized chunks still unlisted (after one that could not be adopted, or no longer
    // continuing the episode) are moved aside: never left behind unreported, never deleted.
    for path in files.chunks.range(listed..).map(|(_, p)| p) {
        let done = report
            .actions
            .iter()
            .any(|a| matches!(a, Action::Quarantine { from, .. } if from == path));
        if !done {
            quarantine(fs_ref, data_dir, episode_id, path, &mut report, mode)?;
        }
    }

    gaps::update_manifest(&mut manifest, false);
    manifest.status = Some("recovered".into());
    manifest.extra.insert("recovery".into(), report.to_json());
    commit(fs_ref, &layout, &manifest, &mut report, mode)?;
    Ok(Some(report))
}

/// Discard all `len` bytes of `file`: the parts not already reported for it become regions
/// with `reason`, so that no byte is counted twice (a note of length 0 when every byte
/// was reported already).
fn discard_rest(report: &mut RecoveryReport, file: &str, len: u64, reason: &str) {
    let mut covered: Vec<(u64, u64)> = report
        .discarded
        .iter()
        .filter(|d| d.file == file && d.len > 0)
        .map(|d| (d.offset, d.offset.saturating_add(d.len)))
        .collect();
    covered.sort_unstable();
    let mut rest = Vec::new();
    let mut at = 0;
    for (start, end) in covered.into_iter().chain([(len, len)]) {
        if start > at {
            rest.push((at, start - at));
        }
        at = at.max(end);
    }
    if rest.is_empty() {
        rest.push((0, 0));
    }
    report
        .discarded
        .extend(rest.into_iter().map(|(offset, len)| Discarded {
            file: file.to_owned(),
            offset,
            len,
            reason: reason.to_owned(),
        }));
}

/// The file regions of the STEPS records holding `seg.steps[from..]` (dropped after a seq
/// gap): one region per run of records not interrupted by a region the scan already
/// reported, so that no byte is counted twice.
fn dropped_regions(seg: &SegmentContents, from: usize, file: &str, reason: &str) -> Vec<Discarded> {
    let first = seg
        .spans
        .partition_point(|s| s.steps_at <= from)
        .saturating_sub(1);
    let mut out: Vec<Discarded> = Vec::new();
    for span in seg.spans.get(first..).unwrap_or_default() {
        let joins = out.last().is_some_and(|d: &Discarded| {
            let prev_end = d.offset + d.len;
            !seg.scan
                .corruptions
                .iter()
                .any(|c| c.offset >= prev_end && c.offset < span.offset)
        });
        match out.last_mut() {
            Some(d) if joins => d.len = span.end - d.offset,
            _ => out.push(Discarded {
                file: file.to_owned(),
                offset: span.offset,
                len: span.end - span.offset,
                reason: reason.to_owned(),
            }),
        }
    }
    out
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
