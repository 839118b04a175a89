//! Finalizing a window episode built in `data_dir/.flight/build/W`: each stream's manifest
//! and the index are committed (`complete`, or `interrupted` for what a window given up
//! holds), the triggers' reasons appended as events, the directory renamed to `data_dir/W`
//! and both directories fsynced; then the pending record is removed.
//!
//! Safe to run again after a failure part way (the window thread retries it): the events
//! file of the build is written anew, and a build already renamed into place is only
//! synced and loses its record.

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Map, Value};
use wshard::episode_dir::events::EventData;
use wshard::episode_dir::index::{EpisodeIndex, EpisodeStatus, StreamEntry};

use super::copy::StreamCopy;
use super::failure::WindowFailure;
use super::pending::{self, build_dir, PendingRecord};
pub use crate::episode_files::index::{ORIGIN_FLIGHT_WINDOW, ORIGIN_KEY};
use crate::episode_files::{commit_index, EventsLog, NewEvent, NewEventData};
use crate::error::StorageError;
use crate::upload::Handoff;
use wshard_storage::fsio::Fs;

/// Index metadata key: why the window was given up (a [`WindowFailure`]).
pub const WINDOW_FAILURE_KEY: &str = "window_failure";
/// Key of a window stream whose post-window was cut short (its source went silent): in
/// the index metadata's `window` entry and the stream manifest's extra, the last `t_ns`
/// the window holds of it.
pub const CUT_SHORT_KEY: &str = "post_cut_short_at_t_ns";

/// How a window episode ends.
#[derive(Clone, Debug)]
pub(crate) struct WindowEnd {
    pub(crate) status: EpisodeStatus,
    pub(crate) failure: Option<WindowFailure>,
}

impl WindowEnd {
    pub(crate) fn complete() -> Self {
        Self {
            status: EpisodeStatus::Complete,
            failure: None,
        }
    }
}

/// The index of the finished window.
fn window_index(
    record: &PendingRecord,
    copies: &[StreamCopy],
    streams: Vec<StreamEntry>,
    end: &WindowEnd,
) -> EpisodeIndex {
    let mut meta = Map::new();
    meta.insert(ORIGIN_KEY.into(), json!(ORIGIN_FLIGHT_WINDOW));
    meta.insert(
        "triggers".into(),
        serde_json::to_value(&record.triggers).unwrap_or(Value::Null),
    );
    meta.insert(
        "window".into(),
        json!(record
            .streams
            .iter()
            .map(|s| {
                let mut v = json!({
                    "stream": s.name, "source": s.source, "start_ns": s.start_ns,
                    "end_ns": s.end_ns, "latched": s.latched,
                });
                if let Some(c) = copies.iter().find(|c| c.src.name == s.name && c.cut_short) {
                    v[CUT_SHORT_KEY] = json!(c.last_t_ns());
                }
                v
            })
            .collect::<Vec<_>>()),
    );
    if !record.follows.is_empty() {
        meta.insert("follows".into(), json!(record.follows));
    }
    if let Some(f) = &end.failure {
        meta.insert(
            WINDOW_FAILURE_KEY.into(),
            serde_json::to_value(f).unwrap_or(Value::Null),
        );
    }
    let mut index = EpisodeIndex::new(record.episode.clone(), "", meta, record.created_unix_ns);
    index.streams = streams;
    index.status = end.status;
    index.closed = true;
    index
}

/// Commit the window built in `dir` as `end` says, move it into `data_dir`, forget its
/// pending record and hand the episode to the uploader (`handoff`). A stream holding no
/// step is left out.
pub(crate) fn finish(
    fs: &Arc<dyn Fs>,
    handoff: &Handoff,
    data_dir: &Path,
    record: &PendingRecord,
    copies: &mut [StreamCopy],
    dir: &Path,
    end: &WindowEnd,
) -> Result<(), StorageError> {
    let target = data_dir.join(&record.episode);
    if !fs.exists(&target) {
        let mut entries = Vec::new();
        for c in copies.iter_mut() {
            if let Some(e) = c.finish(&**fs, end.status)? {
                entries.push(e);
            }
        }
        let index = window_index(record, copies, entries, end);
        let mut events = EventsLog::new(fs.clone(), dir, &record.episode);
        // A first try cut part way left its events file: the build is the daemon's own.
        if fs.exists(events.path()) {
            fs.remove_file(events.path())
                .map_err(|e| StorageError::io("remove", events.path(), e))?;
        }
        for t in &record.triggers {
            events
                .append(NewEvent {
                    t_ns: t.t_ns,
                    label: "trigger".into(),
                    source: "flight".into(),
                    data: NewEventData::Data(EventData::Text(t.reason.clone())),
                })
                .map_err(|e| {
                    StorageError::io(
                        "append event",
                        events.path(),
                        std::io::Error::other(e.to_string()),
                    )
                })?;
        }
        commit_index(&**fs, dir, &index)?;
        fs.rename(dir, &target)
            .map_err(|e| StorageError::io("rename window episode", dir, e))?;
    }
    for d in [build_dir(data_dir), data_dir.to_path_buf()] {
        fs.sync_dir(&d)
            .map_err(|e| StorageError::io("fsync directory", &d, e))?;
    }
    pending::remove(&**fs, data_dir, &record.episode)?;
    handoff.finished(&target);
    Ok(())
}
