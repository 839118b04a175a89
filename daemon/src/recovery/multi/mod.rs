//! Recovery of a multi-stream episode directory (`{EP}_index.json`, `streams/`): each
//! stream folder is recovered exactly as an episode is (its own journal, chunks and
//! manifest), then the index is rebuilt around them and committed `recovered`:
//!
//! 1. a temporary index is removed; an unreadable index is moved to quarantine and a new
//!    one started (env id and metadata are then lost; the streams are not);
//! 2. every stream folder is recovered; its index entry takes its status, steps and chunks
//!    from its manifest and its first and last timestamp from its first and last chunk
//!    (`streams`); a folder the index does not list is adopted, never deleted; a stream
//!    listed `recording` without a folder never recorded anything (the folder exists before
//!    a stream is acknowledged) and leaves the index;
//! 3. a torn last line of the events file (never acknowledged) is cut (`events`);
//! 4. an episode still `recording` becomes `recovered` and closed; the index is committed.
//!
//! Every step is atomic and the index commit comes last, so a cut recovery simply runs
//! again. An episode whose index is final, with every stream settled, a whole events file
//! and nothing unlisted, needs nothing.

mod events;
mod streams;

pub(crate) use events::cut_events_tail;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use serde_json::Map;
use wshard::episode_dir::index::{EpisodeIndex, EpisodeStatus};
use wshard::episode_dir::names::{annotations_file_name, validate_stream_name};

use super::changes::{file_name, move_to_quarantine, quarantine_target};
use super::files::recover_layout;
use super::plan::{Action, RecoveryMode};
use super::report::RecoveryReport;
use crate::episode_files::{commit_index, index_path, read_index};
use crate::error::StorageError;
use crate::session::SessionSettings;
use wshard_storage::fsio::Fs;
use wshard_storage::layout::{EpisodeLayout, QUARANTINE_DIR, STREAMS_DIR};

/// What recovering a multi-stream episode did: the episode-level steps (index, events,
/// streams adopted or forgotten) and each stream's own report (named `EP/STREAM`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiRecovery {
    pub episode: RecoveryReport,
    pub streams: Vec<RecoveryReport>,
}

impl MultiRecovery {
    /// One report for the whole episode: the episode's, with every stream's counts added
    /// and its lists and actions appended.
    #[must_use]
    pub fn into_episode_report(self) -> RecoveryReport {
        let mut r = self.episode;
        for s in self.streams {
            r.timesteps_recovered += s.timesteps_recovered;
            r.chunks_recovered += s.chunks_recovered;
            r.chunks_rebuilt += s.chunks_rebuilt;
            r.discarded.extend(s.discarded);
            r.quarantined.extend(s.quarantined);
            r.quarantined_rebuilt.extend(s.quarantined_rebuilt);
            r.removed.extend(s.removed);
            r.actions.extend(s.actions);
        }
        r
    }
}

/// True when `dir` (episode `id`) is a multi-stream episode: it has an index, a temporary
/// index, or a `streams/` folder.
#[must_use]
pub(crate) fn is_multi_stream(fs: &dyn Fs, dir: &Path, id: &str) -> bool {
    let index = index_path(dir, id);
    fs.exists(&index) || fs.exists(&tmp_of(&index)) || fs.read_dir(&dir.join(STREAMS_DIR)).is_ok()
}

fn tmp_of(path: &Path) -> std::path::PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    s.into()
}

/// The stream folders of `dir` with valid names (others are left alone, with a warning).
fn stream_folders(fs: &dyn Fs, dir: &Path) -> BTreeSet<String> {
    let root = dir.join(STREAMS_DIR);
    let mut out = BTreeSet::new();
    for p in fs.read_dir(&root).unwrap_or_default() {
        let name = file_name(&p);
        if fs.read_dir(&p).is_err() {
            continue;
        }
        match validate_stream_name(&name) {
            Ok(()) => {
                out.insert(name);
            }
            Err(e) => tracing::warn!(path = %p.display(), "not a stream folder, left alone: {e}"),
        }
    }
    out
}

/// Recover the multi-stream episode `id` under `data_dir`; `None` when it needed nothing.
///
/// # Errors
/// A storage step that failed; recovery can be run again.
pub fn recover_multi(
    fs: &Arc<dyn Fs>,
    data_dir: &Path,
    id: &str,
    settings: &SessionSettings,
    mode: RecoveryMode,
) -> Result<Option<MultiRecovery>, StorageError> {
    let fsr: &dyn Fs = &**fs;
    let dir = data_dir.join(id);
    let path = index_path(&dir, id);
    let mut report = RecoveryReport::new(id, None);
    let mut changed = false;
    let mut index = match read_index(fsr, &dir, id) {
        Ok(Some(ix)) => {
            report.previous_status = Some(ix.status.as_str().to_owned());
            ix
        }
        Ok(None) => {
            changed = true;
            EpisodeIndex::new(id, "", Map::new(), 0)
        }
        Err(e) => {
            let qdir = data_dir.join(QUARANTINE_DIR).join(id);
            let target = quarantine_target(fsr, &qdir, &path);
            if mode.applies() {
                move_to_quarantine(fsr, data_dir, &path, &target)?;
            }
            report.note_quarantined(target.display().to_string());
            report.actions.push(Action::Quarantine {
                from: path.clone(),
                to: target,
                reason: format!("the index cannot be read: {e}"),
            });
            changed = true;
            EpisodeIndex::new(id, "", Map::new(), 0)
        }
    };
    let tmp = tmp_of(&path);
    if fsr.exists(&tmp) {
        if mode.applies() {
            fsr.remove_file(&tmp)
                .map_err(|e| StorageError::io("remove", &tmp, e))?;
        }
        report.note_removed(file_name(&tmp));
        report.actions.push(Action::Remove { path: tmp });
        changed = true;
    }
    let settled = index.status != EpisodeStatus::Recording;
    let folders = stream_folders(fsr, &dir);
    let listed: Vec<String> = index.streams.iter().map(|s| s.name.clone()).collect();
    let unlisted: Vec<String> = folders
        .iter()
        .filter(|f| !listed.contains(f))
        .cloned()
        .collect();
    let mut stream_reports = Vec::new();
    for name in listed.iter().chain(&unlisted) {
        if !folders.contains(name) {
            let recording = index
                .stream(name)
                .is_some_and(|s| s.status == EpisodeStatus::Recording);
            if recording {
                index.streams.retain(|s| &s.name != name);
                report.actions.push(Action::ForgetStream {
                    stream: name.clone(),
                    reason: "listed recording, but its folder was never created".into(),
                });
                changed = true;
            }
            continue;
        }
        let layout = EpisodeLayout::stream(data_dir, id, name);
        let sub = recover_layout(
            fs,
            data_dir,
            layout.clone(),
            &format!("{id}/{name}"),
            settings,
            mode,
        )?;
        let touched = sub.is_some();
        stream_reports.extend(sub);
        match index.stream_mut(name) {
            Some(entry) => {
                if touched || !settled || entry.status == EpisodeStatus::Recording {
                    changed |= streams::refresh(fsr, &layout, entry);
                }
            }
            None => {
                index.streams.push(streams::adopted(fsr, &layout));
                report.actions.push(Action::AdoptStream {
                    stream: name.clone(),
                    path: layout.dir.clone(),
                });
                changed = true;
            }
        }
    }
    changed |= !stream_reports.is_empty();
    changed |= cut_events_tail(fsr, &dir, id, mode, &mut report)?;
    if index.status == EpisodeStatus::Recording {
        index.status = EpisodeStatus::Recovered;
        index.closed = true;
        changed = true;
    }
    if !changed {
        return Ok(None);
    }
    if mode.applies() {
        commit_index(fsr, &dir, &index)?;
    }
    report.actions.push(Action::CommitIndex {
        path,
        status: index.status.as_str().to_owned(),
    });
    Ok(Some(MultiRecovery {
        episode: report,
        streams: stream_reports,
    }))
}

/// Remove a temporary annotations file (an `annotate` cut before its rename: the
/// annotations file itself is whole, without the annotation that was never acknowledged).
/// Nothing else about the episode changes, so it is not reported.
///
/// # Errors
/// The removal failed.
pub(crate) fn drop_annotations_tmp(
    fs: &dyn Fs,
    dir: &Path,
    id: &str,
    mode: RecoveryMode,
) -> Result<(), StorageError> {
    let tmp = tmp_of(&dir.join(annotations_file_name(id)));
    if mode.applies() && fs.exists(&tmp) {
        tracing::info!(path = %tmp.display(), "removing an annotation that was never committed");
        fs.remove_file(&tmp)
            .map_err(|e| StorageError::io("remove", &tmp, e))?;
    }
    Ok(())
}
