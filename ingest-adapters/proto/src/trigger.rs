//! `TRIGGER` and its answer `TRIGGERED` (version 2): a producer asks the daemon to persist
//! the flight recorder's window `[t - pre, t + post]` as an episode (docs/PROTOCOL.md,
//! "TRIGGER"), and learns the window episode at once.
//!
//! Payloads, little-endian:
//!
//! ```text
//! TRIGGER    pre_ns i64 | post_ns i64 | reason str16 | count u16 | count x stream str16
//!            | has_at u8 (0 or 1) | at_ns i64 (only when has_at = 1)
//! TRIGGERED  episode str16 | merged u8 (0 or 1) | window_start_ns i64 | window_end_ns i64
//! ```
//!
//! `count = 0` means every flight stream. The layout is read and written only here.

use crate::error::ProtoError;
use crate::frame_header::FrameType;
use crate::wire::{put_str16, Reader};

/// The most stream names one `TRIGGER` carries.
pub const MAX_TRIGGER_STREAMS: usize = 256;

/// What a decoder expects of `TRIGGER.count`.
pub const TRIGGER_COUNT_EXPECTED: &str = "0..=256 (the most streams a TRIGGER names)";

/// What a decoder expects of a 0-or-1 flag.
const FLAG_EXPECTED: &str = "0 or 1";

/// A `TRIGGER` frame.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Trigger {
    /// The window before `t`, in ns (`0..=` the daemon's maximum).
    pub pre_ns: i64,
    /// The window after `t`, in ns.
    pub post_ns: i64,
    /// Why (recorded as the window episode's `trigger` event).
    pub reason: String,
    /// `EPISODE` or `EPISODE/STREAM` names; empty: every flight stream.
    pub streams: Vec<String>,
    /// `t` on every stream; `None`: each stream's latest `t_ns`.
    pub at_ns: Option<i64>,
}

/// A `TRIGGERED` frame: the window episode, named at once.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Triggered {
    pub episode: String,
    /// The trigger extended a window still pending instead of starting one.
    pub merged: bool,
    pub window_start_ns: i64,
    pub window_end_ns: i64,
}

fn flag(r: &mut Reader<'_>, field: &str) -> Result<bool, ProtoError> {
    match r.u8(field)? {
        0 => Ok(false),
        1 => Ok(true),
        v => Err(r.bad_value(field, v.into(), FLAG_EXPECTED)),
    }
}

impl Trigger {
    /// Read a `TRIGGER` payload.
    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, ProtoError> {
        let pre_ns = r.i64("pre_ns")?;
        let post_ns = r.i64("post_ns")?;
        let reason = r.str16("reason")?;
        let count = r.u16("count")?;
        if usize::from(count) > MAX_TRIGGER_STREAMS {
            return Err(r.bad_value("count", count.into(), TRIGGER_COUNT_EXPECTED));
        }
        let mut streams = Vec::with_capacity(usize::from(count));
        for i in 0..count {
            streams.push(r.str16(&format!("streams[{i}]"))?);
        }
        let at_ns = if flag(r, "has_at")? {
            Some(r.i64("at_ns")?)
        } else {
            None
        };
        Ok(Self {
            pre_ns,
            post_ns,
            reason,
            streams,
            at_ns,
        })
    }

    /// Append the payload.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        let frame = FrameType::Trigger.name();
        if self.streams.len() > MAX_TRIGGER_STREAMS {
            return Err(ProtoError::BadValue {
                frame,
                field: "count".to_owned(),
                value: u64::try_from(self.streams.len()).unwrap_or(u64::MAX),
                expected: TRIGGER_COUNT_EXPECTED,
            });
        }
        out.extend_from_slice(&self.pre_ns.to_le_bytes());
        out.extend_from_slice(&self.post_ns.to_le_bytes());
        put_str16(out, &self.reason, frame, "reason")?;
        let count = u16::try_from(self.streams.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&count.to_le_bytes());
        for (i, s) in self.streams.iter().enumerate() {
            put_str16(out, s, frame, &format!("streams[{i}]"))?;
        }
        match self.at_ns {
            Some(t) => {
                out.push(1);
                out.extend_from_slice(&t.to_le_bytes());
            }
            None => out.push(0),
        }
        Ok(())
    }
}

impl Triggered {
    /// Read a `TRIGGERED` payload.
    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, ProtoError> {
        Ok(Self {
            episode: r.str16("episode")?,
            merged: flag(r, "merged")?,
            window_start_ns: r.i64("window_start_ns")?,
            window_end_ns: r.i64("window_end_ns")?,
        })
    }

    /// Append the payload.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_str16(out, &self.episode, FrameType::Triggered.name(), "episode")?;
        out.push(u8::from(self.merged));
        out.extend_from_slice(&self.window_start_ns.to_le_bytes());
        out.extend_from_slice(&self.window_end_ns.to_le_bytes());
        Ok(())
    }
}

/// Whether an `ERROR` message refuses a `TRIGGER`: it starts with the frame's name
/// `TRIGGER` then `:` or a space. Every `TRIGGER` is answered by exactly one frame, in
/// order: `TRIGGERED` or such an `ERROR` (as [`crate::is_event_refusal`] for `EVENT`), so
/// a client tells the refusal of its trigger from that of a timestep sent before it.
#[must_use]
pub fn is_trigger_refusal(message: &str) -> bool {
    message
        .strip_prefix(FrameType::Trigger.name())
        .is_some_and(|rest| rest.starts_with([':', ' ']))
}
