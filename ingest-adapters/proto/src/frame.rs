//! Frame type codes and the decoded [`Frame`].

use crate::error::ErrorCode;
use crate::ring::RingPolicy;
use crate::schema::OpenEpisode;
use crate::timestep::{Timestep, TimestepBatch};
use crate::wire::truncate_utf8;

/// Wire protocol version spoken by this crate.
pub const PROTOCOL_VERSION: u16 = 1;

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
    pub const HELLO_OK: u8 = 0x81;
    pub const ACCEPTED: u8 = 0x82;
    pub const DURABLE: u8 = 0x83;
    pub const ERROR: u8 = 0x84;
}

/// The eleven frame types of protocol v1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameType {
    Hello,
    Open,
    Timestep,
    TimestepBatch,
    Close,
    Flush,
    ShmAttach,
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

/// `CLOSE.outcome`.
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
}

impl AcceptedWhat {
    /// The wire value (the acknowledged frame's type code).
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            Self::Open => code::OPEN,
            Self::Close => code::CLOSE,
            Self::ShmAttach => code::SHM_ATTACH,
        }
    }

    /// The value for a wire code.
    #[must_use]
    pub fn from_code(c: u8) -> Option<Self> {
        match c {
            code::OPEN => Some(Self::Open),
            code::CLOSE => Some(Self::Close),
            code::SHM_ATTACH => Some(Self::ShmAttach),
            _ => None,
        }
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
