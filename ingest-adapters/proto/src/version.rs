//! Protocol versions: what `HELLO` asks for, what `HELLO_OK` answers, and which frame types
//! a connection of each version knows (docs/PROTOCOL.md, "Version 2").

use crate::frame_header::FrameType;

/// Protocol version 1: what every client before version 2 sends in `HELLO`, and what a
/// connection speaks until a `HELLO` asks for more.
pub const PROTOCOL_VERSION: u16 = 1;

/// The newest protocol version this crate speaks.
pub const NEWEST_PROTOCOL_VERSION: u16 = 2;

/// A protocol version a connection speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum ProtocolVersion {
    /// 1: one connection records one single-stream episode at a time.
    #[default]
    V1,
    /// 2: adds multi-stream episodes, events and producer counters (`EPISODE_OPEN`,
    /// `STREAM_OPEN`, `EVENT`, `EPISODE_CLOSE`, `COUNTERS`).
    V2,
}

impl ProtocolVersion {
    /// The newest version.
    pub const NEWEST: Self = Self::V2;

    /// The `u16` written in `HELLO` and `HELLO_OK`.
    #[must_use]
    pub fn code(self) -> u16 {
        match self {
            Self::V1 => PROTOCOL_VERSION,
            Self::V2 => NEWEST_PROTOCOL_VERSION,
        }
    }

    /// The version for a wire value, `None` when this crate does not speak it.
    #[must_use]
    pub fn from_code(code: u16) -> Option<Self> {
        match code {
            PROTOCOL_VERSION => Some(Self::V1),
            NEWEST_PROTOCOL_VERSION => Some(Self::V2),
            _ => None,
        }
    }

    /// The version a connection speaks after a `HELLO` asking for `requested`: the lower
    /// of `requested` and the newest version, which `HELLO_OK` answers with. `None` for
    /// 0, which no protocol defines (`UNSUPPORTED_VERSION`).
    #[must_use]
    pub fn negotiate(requested: u16) -> Option<Self> {
        if requested == 0 {
            return None;
        }
        Self::from_code(requested.min(NEWEST_PROTOCOL_VERSION))
    }

    /// The first version that defines frames of type `ty`.
    #[must_use]
    pub fn introducing(ty: FrameType) -> Self {
        match ty {
            FrameType::EpisodeOpen
            | FrameType::StreamOpen
            | FrameType::Event
            | FrameType::EpisodeClose
            | FrameType::Counters
            | FrameType::Trigger
            | FrameType::Triggered => Self::V2,
            _ => Self::V1,
        }
    }

    /// Whether a connection of this version knows frames of type `ty` (a frame it does not
    /// know is `UNKNOWN_FRAME`, as for a code no version defines).
    #[must_use]
    pub fn knows(self, ty: FrameType) -> bool {
        Self::introducing(ty) <= self
    }
}

impl std::fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.code())
    }
}
