//! The header every frame starts with, `body_len u32 | frame_type u8` (docs/PROTOCOL.md,
//! "Framing"): its sizes, the default size limit, the type codes and [`FrameType`]. A leaf:
//! every payload module, the [`crate::Frame`] enum that names them all, the codec and the
//! protocol versions build on it, and it uses none of them.

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
    pub const TRIGGER: u8 = 0x0D;
    pub const HELLO_OK: u8 = 0x81;
    pub const ACCEPTED: u8 = 0x82;
    pub const DURABLE: u8 = 0x83;
    pub const ERROR: u8 = 0x84;
    pub const TRIGGERED: u8 = 0x85;
}

/// The frame types: the eleven of protocol v1 and the seven version 2 adds
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
    Trigger,
    HelloOk,
    Accepted,
    Durable,
    Error,
    Triggered,
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
            code::TRIGGER => Self::Trigger,
            code::TRIGGERED => Self::Triggered,
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
            Self::Trigger => code::TRIGGER,
            Self::Triggered => code::TRIGGERED,
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
            Self::Trigger => "TRIGGER",
            Self::Triggered => "TRIGGERED",
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

// The header: `body_len`, then the type byte.
const _: () = assert!(FRAME_HEADER_BYTES == LEN_BYTES + std::mem::size_of::<u8>());
