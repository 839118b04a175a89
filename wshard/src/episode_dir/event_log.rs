//! The events of an episode as a reader sees them: producer events (`{EP}_events.jsonl`)
//! and operator annotations (`{EP}_annotations.json`) merged into one list sorted by
//! `t_ns` (at equal times producer events first, then each in `seq` order).

use std::io::ErrorKind;
use std::path::Path;

use super::annotations::Annotations;
use super::error::EpisodeDirError;
use super::events::{parse_events, EventData, EventKind};

/// Who made an event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventOrigin {
    /// Sent by a producer: `source` is its stream name (or the owner's client name).
    Producer { source: String },
    /// Added by an operator (an annotation).
    Operator {
        author: String,
        created_unix_ns: u64,
    },
}

/// One event or annotation of an episode.
#[derive(Clone, Debug, PartialEq)]
pub struct EpisodeEvent {
    pub t_ns: i64,
    /// The event's `seq` (per episode), or the annotation's `seq` (its own numbering).
    pub seq: u64,
    pub label: String,
    pub data: EventData,
    pub origin: EventOrigin,
}

impl EpisodeEvent {
    #[must_use]
    pub fn kind(&self) -> EventKind {
        self.data.kind()
    }

    /// True for an operator annotation.
    #[must_use]
    pub fn is_annotation(&self) -> bool {
        matches!(self.origin, EventOrigin::Operator { .. })
    }
}

/// A file's bytes, or `None` when it does not exist.
pub(crate) fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, EpisodeDirError> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(EpisodeDirError::io("read", path, e)),
    }
}

/// Events and annotations merged and sorted, and the length of a torn last events line.
pub(crate) fn read_event_log(
    events_file: &Path,
    annotations_file: &Path,
) -> Result<(Vec<EpisodeEvent>, u64), EpisodeDirError> {
    let mut out = Vec::new();
    let mut torn = 0;
    if let Some(bytes) = read_optional(events_file)? {
        let parsed = parse_events(&bytes, events_file)?;
        torn = parsed.torn_tail_bytes;
        out.extend(parsed.events.into_iter().map(|e| EpisodeEvent {
            t_ns: e.t_ns,
            seq: e.seq,
            label: e.label,
            data: e.data,
            origin: EventOrigin::Producer { source: e.source },
        }));
    }
    if let Some(bytes) = read_optional(annotations_file)? {
        let parsed = Annotations::from_json_bytes(&bytes, annotations_file)?;
        out.extend(parsed.annotations.into_iter().map(|a| EpisodeEvent {
            t_ns: a.t_ns,
            seq: a.seq,
            label: a.label,
            data: a.data,
            origin: EventOrigin::Operator {
                author: a.author,
                created_unix_ns: a.created_unix_ns,
            },
        }));
    }
    out.sort_by_key(|e| (e.t_ns, e.is_annotation(), e.seq));
    Ok((out, torn))
}
