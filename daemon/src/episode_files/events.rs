//! `{EP}_events.jsonl`: the events producers send (`EVENT`), one JSON line each, appended
//! and made durable (`fdatasync`, and an fsync of the directory after the file's creation)
//! before the event is acknowledged. A crash can leave a torn last line (no trailing `\n`):
//! it was never acknowledged, readers ignore it and recovery cuts it ([`cut_torn_tail`]).
//!
//! The file is created with the first event. A failed write or sync is never retried: the
//! log refuses every later event (the episode's streams go on recording).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::value::RawValue;
use wshard::episode_dir::events::{EventData, EventKind, EventRecord};
use wshard::episode_dir::names::events_file_name;

use crate::error::StorageError;
use wshard_storage::fsio::{DurableFile, FailStop, Fs};

/// An event as a producer sends it (the log gives it its seq).
#[derive(Clone, Debug, PartialEq)]
pub struct NewEvent {
    pub t_ns: i64,
    pub label: String,
    /// The stream name of the producer, or the client name of the episode's owner.
    pub source: String,
    pub data: NewEventData,
}

/// An event's data as the log writes it.
#[derive(Clone, Debug, PartialEq)]
pub enum NewEventData {
    /// Written as the format library writes it (`EventRecord::to_line`).
    Data(EventData),
    /// The value of a json event as the producer sent it, compact
    /// (`wshard_ingest_proto::compact_event_json`): written as it is, so that its numbers
    /// keep the digits sent (an integer outside the 64-bit range included).
    JsonText(String),
}

impl From<EventData> for NewEventData {
    fn from(data: EventData) -> Self {
        Self::Data(data)
    }
}

/// One line of the events file with `data` written as raw JSON text: the fields of
/// `EventRecord::to_line`, in its (sorted) order.
#[derive(serde::Serialize)]
struct JsonTextLine<'a> {
    data: &'a RawValue,
    kind: &'static str,
    label: &'a str,
    seq: u64,
    source: &'a str,
    t_ns: i64,
}

/// The line of `event` with `seq`: compact JSON, sorted keys, `\n`-terminated.
fn event_line(seq: u64, event: NewEvent) -> Result<Vec<u8>, serde_json::Error> {
    let mut line = match event.data {
        NewEventData::Data(data) => {
            let record = EventRecord {
                seq,
                t_ns: event.t_ns,
                label: event.label,
                source: event.source,
                data,
            };
            return Ok(record.to_line());
        }
        NewEventData::JsonText(text) => {
            let data = RawValue::from_string(text)?;
            serde_json::to_vec(&JsonTextLine {
                data: &data,
                kind: EventKind::Json.as_str(),
                label: &event.label,
                seq,
                source: &event.source,
                t_ns: event.t_ns,
            })?
        }
    };
    line.push(b'\n');
    Ok(line)
}

/// Why an event was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// An earlier write or sync of the log failed: nothing more is appended.
    #[error("events file {}: an earlier write failed, no more events are recorded: {reason}", path.display())]
    Failed { path: PathBuf, reason: String },
    /// The episode is finalized (closed, and every stream ended): it takes no more events.
    #[error("episode `{episode}` is finalized (closed, and every stream ended): it takes no more events")]
    Finalized { episode: String },
    /// The event's line could not be made (its data is not the JSON text it should be);
    /// nothing was written.
    #[error("events file {}: event {seq} could not be encoded: {source}", path.display())]
    Encode {
        path: PathBuf,
        seq: u64,
        source: serde_json::Error,
    },
}

/// The events log of one episode, appended by the daemon.
pub struct EventsLog {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    path: PathBuf,
    file: Option<Box<dyn DurableFile>>,
    next_seq: u64,
    failed: Option<String>,
}

impl std::fmt::Debug for EventsLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventsLog")
            .field("path", &self.path)
            .field("next_seq", &self.next_seq)
            .finish_non_exhaustive()
    }
}

impl EventsLog {
    /// The log of the new episode `episode_id` in `episode_dir` (created with the first
    /// event).
    #[must_use]
    pub fn new(fs: Arc<dyn Fs>, episode_dir: &Path, episode_id: &str) -> Self {
        Self {
            fs,
            dir: episode_dir.to_path_buf(),
            path: episode_dir.join(events_file_name(episode_id)),
            file: None,
            next_seq: 0,
            failed: None,
        }
    }

    /// The file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Events recorded so far (the seq of the next).
    #[must_use]
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Append `event` and make it durable; returns its seq.
    ///
    /// # Errors
    /// The failing step naming the file; the log then refuses every later event.
    pub fn append(&mut self, event: NewEvent) -> Result<u64, EventError> {
        if let Some(reason) = &self.failed {
            return Err(EventError::Failed {
                path: self.path.clone(),
                reason: reason.clone(),
            });
        }
        let seq = self.next_seq;
        let line = event_line(seq, event).map_err(|e| EventError::Encode {
            path: self.path.clone(),
            seq,
            source: e,
        })?;
        match self.write_durably(&line) {
            Ok(()) => {
                self.next_seq += 1;
                Ok(seq)
            }
            Err(e) => {
                self.failed = Some(e.to_string());
                self.file = None;
                Err(e.into())
            }
        }
    }

    fn write_durably(&mut self, line: &[u8]) -> Result<(), StorageError> {
        let created = if self.file.is_none() {
            let f = self
                .fs
                .create_new(&self.path)
                .map_err(|e| StorageError::io("create events file", &self.path, e))?;
            self.file = Some(FailStop::wrap(f));
            true
        } else {
            false
        };
        let Some(f) = self.file.as_mut() else {
            return Err(StorageError::Internal("events file not open".into()));
        };
        f.write_all(line)
            .map_err(|e| StorageError::io("write events file", &self.path, e))?;
        f.sync_data()
            .map_err(|e| StorageError::io("fdatasync events file", &self.path, e))?;
        if created {
            self.fs
                .sync_dir(&self.dir)
                .map_err(|e| StorageError::io("fsync directory", &self.dir, e))?;
        }
        Ok(())
    }
}

/// Cut an events file at `complete_bytes` (the end of its last complete line) and make the
/// cut durable: a torn tail is never an acknowledged event.
///
/// # Errors
/// The failing step naming the file.
pub fn cut_torn_tail(fs: &dyn Fs, path: &Path, complete_bytes: u64) -> Result<(), StorageError> {
    let mut f = fs
        .open_append(path)
        .map_err(|e| StorageError::io("open events file", path, e))?;
    f.set_len(complete_bytes)
        .map_err(|e| StorageError::io("truncate events file", path, e))?;
    f.sync_data()
        .map_err(|e| StorageError::io("fdatasync events file", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_event(data: NewEventData) -> NewEvent {
        NewEvent {
            t_ns: -5,
            label: "score".into(),
            source: "teleop".into(),
            data,
        }
    }

    #[test]
    fn proto_event_json_text_line_is_the_format_library_s_line() {
        // The same line as `EventRecord::to_line` for a value both can write.
        let text = r#"{"a":[1,2.5,null],"b":"x\"y"}"#;
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        let library = event_line(7, new_event(EventData::Json(value).into())).unwrap();
        let as_sent = event_line(7, new_event(NewEventData::JsonText(text.into()))).unwrap();
        assert_eq!(
            String::from_utf8(as_sent).unwrap(),
            String::from_utf8(library).unwrap()
        );
        // A number past 64 bits keeps its digits, and the line still parses as an event.
        let line = event_line(
            0,
            new_event(NewEventData::JsonText("18446744073709551617".into())),
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(line.clone()).unwrap(),
            "{\"data\":18446744073709551617,\"kind\":\"json\",\"label\":\"score\",\"seq\":0,\"source\":\"teleop\",\"t_ns\":-5}\n"
        );
        let parsed =
            wshard::episode_dir::events::parse_events(&line, Path::new("e.jsonl")).unwrap();
        assert_eq!(parsed.events.len(), 1);
        // Text that is not JSON is refused, not written.
        assert!(event_line(0, new_event(NewEventData::JsonText("{".into()))).is_err());
    }
}
