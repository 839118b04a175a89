//! `EVENT` (version 2): a sparse, timestamped, variable-length record in an episode (a
//! language instruction, a button press, a label), and the checks of its data.

use crate::error::ProtoError;
use crate::event_json::compact_event_json;
use crate::frame_header::FrameType;

/// The server's default `limits.max_event_bytes`: the most bytes of `EVENT.data`.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 64 * 1024;

/// `EVENT.kind`: how `data` is to be read. One type with the events file's `kind`
/// (`wshard::episode_dir::events`), so the wire code and the stored spelling never drift.
pub use wshard::episode_dir::events::EventKind;

/// What a decoder expects of `EVENT.kind`.
pub const EVENT_KIND_EXPECTED: &str = "0 (text), 1 (json) or 2 (binary)";

/// An `EVENT` frame: `t_ns i64 | kind u8 | label str16 | data bytes32`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// When it happened, on the clock of the episode's timestamps.
    pub t_ns: i64,
    pub kind: EventKind,
    /// What it is, e.g. `instruction`, `success`; free text.
    pub label: String,
    /// The record, read as `kind` says.
    pub data: Vec<u8>,
}

impl Event {
    /// A text event.
    #[must_use]
    pub fn text(t_ns: i64, label: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            t_ns,
            kind: EventKind::Text,
            label: label.into(),
            data: text.into().into_bytes(),
        }
    }

    /// A JSON event; `json` is the value's text (checked by [`Event::validate`]).
    #[must_use]
    pub fn json(t_ns: i64, label: impl Into<String>, json: impl Into<String>) -> Self {
        Self {
            kind: EventKind::Json,
            ..Self::text(t_ns, label, json)
        }
    }

    /// A binary event.
    #[must_use]
    pub fn binary(t_ns: i64, label: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        Self {
            t_ns,
            kind: EventKind::Binary,
            label: label.into(),
            data: data.into(),
        }
    }

    /// Check the data: at most `max_event_bytes` bytes (checked first, before reading
    /// it), text is UTF-8, json is one JSON value within the limits of
    /// [`crate::event_json`].
    ///
    /// # Errors
    /// As [`Event::into_checked_data`].
    pub fn validate(&self, max_event_bytes: usize) -> Result<(), ProtoError> {
        self.check_size(max_event_bytes)?;
        match self.kind {
            EventKind::Binary => Ok(()),
            EventKind::Text => std::str::from_utf8(&self.data)
                .map(|_| ())
                .map_err(|e| bad_text(&e)),
            EventKind::Json => compact_event_json(&self.data)
                .map(|_| ())
                .map_err(ProtoError::BadEventJson),
        }
    }

    /// The data checked as [`Event::validate`] does, as the events file stores it: the
    /// text, the JSON value's compact text ([`compact_event_json`]: as sent, without the
    /// whitespace between tokens), or the bytes.
    ///
    /// # Errors
    /// [`ProtoError::EventTooLarge`] (`LIMIT`) naming the size and the key;
    /// [`ProtoError::BadEventData`] (`MALFORMED_FRAME`) for text that is not UTF-8;
    /// [`ProtoError::BadEventJson`] for json that is not JSON (`MALFORMED_FRAME`) or is
    /// nested too deep or holds a number out of range (`LIMIT`, naming the limit).
    pub fn into_checked_data(self, max_event_bytes: usize) -> Result<CheckedEventData, ProtoError> {
        self.check_size(max_event_bytes)?;
        match self.kind {
            EventKind::Binary => Ok(CheckedEventData::Binary(self.data)),
            EventKind::Text => String::from_utf8(self.data)
                .map(CheckedEventData::Text)
                .map_err(|e| bad_text(&e.utf8_error())),
            EventKind::Json => compact_event_json(&self.data)
                .map(CheckedEventData::Json)
                .map_err(ProtoError::BadEventJson),
        }
    }

    fn check_size(&self, max_event_bytes: usize) -> Result<(), ProtoError> {
        if self.data.len() > max_event_bytes {
            return Err(ProtoError::EventTooLarge {
                size: self.data.len(),
                max: max_event_bytes,
            });
        }
        Ok(())
    }
}

/// Text data that is not UTF-8.
fn bad_text(e: &std::str::Utf8Error) -> ProtoError {
    ProtoError::BadEventData {
        kind: EventKind::Text.as_str(),
        reason: format!("is not valid UTF-8 ({e})"),
    }
}

/// An event's data after [`Event::into_checked_data`], as the events file stores it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckedEventData {
    Text(String),
    /// One JSON value, as sent without the whitespace between its tokens.
    Json(String),
    Binary(Vec<u8>),
}

/// Whether an `ERROR` message refuses an `EVENT`: it starts with the frame's name `EVENT`
/// (then `:` or a space). Every `EVENT` is answered by exactly one frame, in order:
/// `ACCEPTED{EVENT}` or such an `ERROR` (docs/PROTOCOL.md, "EVENT"), which is how a client
/// tells the refusal of its event from the refusal of a timestep it sent before (`ERROR`
/// frames carry no reference to the frame they refuse). The errors of this crate about an
/// `EVENT` ([`ProtoError::EventTooLarge`], [`ProtoError::BadEventData`],
/// [`ProtoError::BadEventJson`], payload errors of the frame) all start so.
#[must_use]
pub fn is_event_refusal(message: &str) -> bool {
    message
        .strip_prefix(FrameType::Event.name())
        .is_some_and(|rest| rest.starts_with([':', ' ']))
}
