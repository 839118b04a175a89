//! Frame type codes and the decoded [`Frame`].

use crate::counters::Counters;
use crate::error::ErrorCode;
use crate::event::Event;
use crate::multistream::{EpisodeOpen, StreamOpen};
use crate::ring::RingPolicy;
use crate::schema::OpenEpisode;
use crate::timestep::{Timestep, TimestepBatch};
use crate::wire::truncate_utf8;

/// The server's default `limits.max_frame_bytes` (64 MiB).
pub const DEFAULT_MAX_FRAME_BYTES: u32 = 64 * 1024 * 1024;

/// Bytes of the `body_len` field that starts every frame.
pub const LEN_BYTES: usize = 4;

/// Bytes of `body_len` plus `frame_type`.
pub const FRAME_HEADER_BYTES: usize = 5;

/// Frame type codes (docs/PROTOCOL.md, "Frame types").
pub mod code {
    pub const HELLO: u8 = 0x01;
    pub const OPEN: u8 = 0x02;
    pub const TIMESTEP: u8 = 0x03;
    pub const TIMESTEP_BATCH: u8 = 0x04;
    pub const CLOSE: u8 = 0x05;
    pub const FLUSH: u8 = 0x06;
    pub const SHM_ATTACH: u8 = 0x07;
    pub const EPISODE_OPEN: u8 = 0x08;
    pub const STREAM_OPEN: u8 = 0x09;
    pub const EVENT: u8 = 0x0A;
    pub const EPISODE_CLOSE: u8 = 0x0B;
    pub const COUNTERS: u8 = 0x0C;
    pub const HELLO_OK: u8 = 0x81;
    pub const ACCEPTED: u8 = 0x82;
    pub const DURABLE: u8 = 0x83;
    pub const ERROR: u8 = 0x84;
}

/// The frame types: the eleven of protocol v1 and the five version 2 adds
/// ([`crate::ProtocolVersion::knows`] says which a connection knows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameType {
    Hello,
    Open,
    Timestep,
    TimestepBatch,
    Close,
    Flush,
    ShmAttach,
    EpisodeOpen,
    StreamOpen,
    Event,
    EpisodeClose,
    Counters,
    HelloOk,
    Accepted,
    Durable,
    Error,
}

impl FrameType {
    /// The type for a wire code, `None` when unknown.
    #[must_use]
    pub fn from_code(c: u8) -> Option<Self> {
        Some(match c {
            code::HELLO => Self::Hello,
            code::OPEN => Self::Open,
            code::TIMESTEP => Self::Timestep,
            code::TIMESTEP_BATCH => Self::TimestepBatch,
            code::CLOSE => Self::Close,
            code::FLUSH => Self::Flush,
            code::SHM_ATTACH => Self::ShmAttach,
            code::EPISODE_OPEN => Self::EpisodeOpen,
            code::STREAM_OPEN => Self::StreamOpen,
            code::EVENT => Self::Event,
            code::EPISODE_CLOSE => Self::EpisodeClose,
            code::COUNTERS => Self::Counters,
            code::HELLO_OK => Self::HelloOk,
            code::ACCEPTED => Self::Accepted,
            code::DURABLE => Self::Durable,
            code::ERROR => Self::Error,
            _ => return None,
        })
    }

    /// The wire code.
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            Self::Hello => code::HELLO,
            Self::Open => code::OPEN,
            Self::Timestep => code::TIMESTEP,
            Self::TimestepBatch => code::TIMESTEP_BATCH,
            Self::Close => code::CLOSE,
            Self::Flush => code::FLUSH,
            Self::ShmAttach => code::SHM_ATTACH,
            Self::EpisodeOpen => code::EPISODE_OPEN,
            Self::StreamOpen => code::STREAM_OPEN,
            Self::Event => code::EVENT,
            Self::EpisodeClose => code::EPISODE_CLOSE,
            Self::Counters => code::COUNTERS,
            Self::HelloOk => code::HELLO_OK,
            Self::Accepted => code::ACCEPTED,
            Self::Durable => code::DURABLE,
            Self::Error => code::ERROR,
        }
    }

    /// The name used in docs/PROTOCOL.md and in error messages.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Hello => "HELLO",
            Self::Open => "OPEN",
            Self::Timestep => "TIMESTEP",
            Self::TimestepBatch => "TIMESTEP_BATCH",
            Self::Close => "CLOSE",
            Self::Flush => "FLUSH",
            Self::ShmAttach => "SHM_ATTACH",
            Self::EpisodeOpen => "EPISODE_OPEN",
            Self::StreamOpen => "STREAM_OPEN",
            Self::Event => "EVENT",
            Self::EpisodeClose => "EPISODE_CLOSE",
            Self::Counters => "COUNTERS",
            Self::HelloOk => "HELLO_OK",
            Self::Accepted => "ACCEPTED",
            Self::Durable => "DURABLE",
            Self::Error => "ERROR",
        }
    }

    /// `true` for frames a client sends (codes below 0x80), `false` for server frames.
    #[must_use]
    pub fn is_client_to_server(self) -> bool {
        self.code() < 0x80
    }
}

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

impl crate::error::ProtoError {
    /// The `ERROR` frame a server sends for this error.
    #[must_use]
    pub fn to_error_frame(&self) -> Frame {
        Frame::error(self.error_code(), self.to_string())
    }
}
