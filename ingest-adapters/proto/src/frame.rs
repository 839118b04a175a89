//! The decoded [`Frame`], one variant per frame type, with the small enums of its fields
//! ([`Outcome`], [`AcceptedWhat`]). It names every payload type, so it sits above all the
//! payload modules and below the codec; the type codes are [`crate::frame_header`]'s.

use crate::counters::Counters;
use crate::error::{ErrorCode, ProtoError};
use crate::event::Event;
use crate::frame_header::FrameType;
use crate::multistream::{EpisodeOpen, StreamOpen};
use crate::ring::RingPolicy;
use crate::schema::OpenEpisode;
use crate::timestep::{Timestep, TimestepBatch};
use crate::trigger::{Trigger, Triggered};
use crate::wire::truncate_utf8;

/// `CLOSE.outcome` and `EPISODE_CLOSE.outcome`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Outcome {
    /// 0: the episode ended normally.
    #[default]
    Completed,
    /// 1: data kept, the manifest says `aborted`.
    Aborted,
}

impl Outcome {
    /// The wire value.
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            Self::Completed => 0,
            Self::Aborted => 1,
        }
    }

    /// The outcome for a wire value.
    #[must_use]
    pub fn from_code(c: u8) -> Option<Self> {
        match c {
            0 => Some(Self::Completed),
            1 => Some(Self::Aborted),
            _ => None,
        }
    }
}

/// `ACCEPTED.what`: the frame type acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AcceptedWhat {
    /// 2 = OPEN.
    Open,
    /// 5 = CLOSE.
    Close,
    /// 7 = SHM_ATTACH (`up_to_seq` = the next expected seq).
    ShmAttach,
    /// 8 = EPISODE_OPEN (`up_to_seq` = 0).
    EpisodeOpen,
    /// 9 = STREAM_OPEN (`up_to_seq` = 0).
    StreamOpen,
    /// 10 = EVENT (`up_to_seq` = the event's seq in its episode).
    Event,
    /// 11 = EPISODE_CLOSE (`up_to_seq` = the streams still recording; 0: finalized).
    EpisodeClose,
}

impl AcceptedWhat {
    /// Every value, in wire order.
    pub const ALL: [Self; 7] = [
        Self::Open,
        Self::Close,
        Self::ShmAttach,
        Self::EpisodeOpen,
        Self::StreamOpen,
        Self::Event,
        Self::EpisodeClose,
    ];

    /// What a decoder expects of `ACCEPTED.what` (the message of a value that does not
    /// parse).
    pub const EXPECTED: &'static str = "2 (OPEN), 5 (CLOSE), 7 (SHM_ATTACH), 8 (EPISODE_OPEN), \
         9 (STREAM_OPEN), 10 (EVENT) or 11 (EPISODE_CLOSE)";

    /// The acknowledged frame's type.
    #[must_use]
    pub fn frame_type(self) -> FrameType {
        match self {
            Self::Open => FrameType::Open,
            Self::Close => FrameType::Close,
            Self::ShmAttach => FrameType::ShmAttach,
            Self::EpisodeOpen => FrameType::EpisodeOpen,
            Self::StreamOpen => FrameType::StreamOpen,
            Self::Event => FrameType::Event,
            Self::EpisodeClose => FrameType::EpisodeClose,
        }
    }

    /// The wire value (the acknowledged frame's type code).
    #[must_use]
    pub fn code(self) -> u8 {
        self.frame_type().code()
    }

    /// The value for a wire code.
    #[must_use]
    pub fn from_code(c: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|w| w.code() == c)
    }
}

/// One decoded frame.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    Hello {
        version: u16,
        client_name: String,
    },
    HelloOk {
        version: u16,
        server_name: String,
        max_frame_bytes: u32,
    },
    Open(OpenEpisode),
    Timestep(Timestep),
    TimestepBatch(TimestepBatch),
    Close {
        outcome: Outcome,
    },
    Flush,
    /// Attach a shared-memory ring (docs/PROTOCOL.md, "Shared-memory transport"); the
    /// frame travels with three fds (ring memfd, `data_ready`, `space_ready`), which the
    /// transport, not this crate, carries.
    ShmAttach {
        slot_size: u32,
        slot_count: u32,
        /// The optional trailing `policy` byte: `None` when the frame ends after
        /// `slot_count` (which means [`RingPolicy::Block`]), so that frames keep their
        /// exact layout through a decode and an encode. Encoders that want to stay
        /// readable by servers predating the byte send `None` for `block`.
        policy: Option<RingPolicy>,
    },
    /// Version 2: create a multi-stream episode, owned by the connection.
    EpisodeOpen(EpisodeOpen),
    /// Version 2: join an open multi-stream episode with one stream (boxed: the largest
    /// frame, and rare).
    StreamOpen(Box<StreamOpen>),
    /// Version 2: one event (a sparse, timestamped record) in the connection's episode.
    Event(Event),
    /// Version 2: the owner closes its multi-stream episode: no more joins.
    EpisodeClose {
        outcome: Outcome,
    },
    /// Version 2: the producer counters of the stream (or episode) the connection records;
    /// no answer.
    Counters(Counters),
    /// Version 2: persist the flight recorder's window (answered by `TRIGGERED` or an
    /// `ERROR` starting `TRIGGER:`).
    Trigger(Trigger),
    /// Version 2: the answer to `TRIGGER`, naming the window episode.
    Triggered(Triggered),
    Accepted {
        what: AcceptedWhat,
        up_to_seq: u64,
    },
    Durable {
        up_to_seq: u64,
    },
    Error {
        code: ErrorCode,
        message: String,
    },
}

impl Frame {
    /// The frame's type.
    #[must_use]
    pub fn frame_type(&self) -> FrameType {
        match self {
            Self::Hello { .. } => FrameType::Hello,
            Self::HelloOk { .. } => FrameType::HelloOk,
            Self::Open(_) => FrameType::Open,
            Self::Timestep(_) => FrameType::Timestep,
            Self::TimestepBatch(_) => FrameType::TimestepBatch,
            Self::Close { .. } => FrameType::Close,
            Self::Flush => FrameType::Flush,
            Self::ShmAttach { .. } => FrameType::ShmAttach,
            Self::EpisodeOpen(_) => FrameType::EpisodeOpen,
            Self::StreamOpen(_) => FrameType::StreamOpen,
            Self::Event(_) => FrameType::Event,
            Self::EpisodeClose { .. } => FrameType::EpisodeClose,
            Self::Counters(_) => FrameType::Counters,
            Self::Trigger(_) => FrameType::Trigger,
            Self::Triggered(_) => FrameType::Triggered,
            Self::Accepted { .. } => FrameType::Accepted,
            Self::Durable { .. } => FrameType::Durable,
            Self::Error { .. } => FrameType::Error,
        }
    }

    /// An `ERROR` frame; `message` is cut (on a char boundary) to fit its `str16`, so the
    /// frame always encodes.
    #[must_use]
    pub fn error(code: ErrorCode, message: impl Into<String>) -> Self {
        let mut message = message.into();
        truncate_utf8(&mut message, usize::from(u16::MAX));
        Self::Error { code, message }
    }
}

impl ProtoError {
    /// The `ERROR` frame a server sends for this error.
    #[must_use]
    pub fn to_error_frame(&self) -> Frame {
        Frame::error(self.error_code(), self.to_string())
    }
}
