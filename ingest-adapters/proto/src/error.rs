//! Protocol errors and the wire error codes of `ERROR` frames.

use std::fmt;

/// The `code` of an `ERROR` frame (docs/PROTOCOL.md, "ERROR (0x84)").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum ErrorCode {
    MalformedFrame = 1,
    UnknownFrame = 2,
    FrameTooLarge = 3,
    Handshake = 4,
    UnsupportedVersion = 5,
    BadSchema = 6,
    BadEpisodeId = 7,
    EpisodeExists = 8,
    AlreadyOpen = 9,
    NotOpen = 10,
    Sequence = 11,
    PayloadSize = 12,
    Limit = 13,
    Overloaded = 14,
    Storage = 15,
    ShuttingDown = 16,
    Internal = 17,
    BadShm = 18,
    DiskLow = 19,
    Stopped = 20,
    PermissionDenied = 21,
    TimestampOrder = 22,
    Timeout = 23,
    UnknownEpisode = 24,
    EpisodeClosed = 25,
    StreamExists = 26,
}

impl ErrorCode {
    /// All codes, in wire order: every value from 1 to the last, without holes.
    pub const ALL: [ErrorCode; 26] = [
        Self::MalformedFrame,
        Self::UnknownFrame,
        Self::FrameTooLarge,
        Self::Handshake,
        Self::UnsupportedVersion,
        Self::BadSchema,
        Self::BadEpisodeId,
        Self::EpisodeExists,
        Self::AlreadyOpen,
        Self::NotOpen,
        Self::Sequence,
        Self::PayloadSize,
        Self::Limit,
        Self::Overloaded,
        Self::Storage,
        Self::ShuttingDown,
        Self::Internal,
        Self::BadShm,
        Self::DiskLow,
        Self::Stopped,
        Self::PermissionDenied,
        Self::TimestampOrder,
        Self::Timeout,
        Self::UnknownEpisode,
        Self::EpisodeClosed,
        Self::StreamExists,
    ];

    /// What a decoder expects of an `ERROR.code` (the message of a code that does not
    /// parse): the range of [`ErrorCode::ALL`], checked against it by a test.
    pub const EXPECTED: &'static str = "an error code 1..=26";

    /// The `u16` written on the wire.
    #[must_use]
    pub fn code(self) -> u16 {
        self as u16
    }

    /// The code for a wire value, `None` when no protocol version defines it.
    #[must_use]
    pub fn from_u16(value: u16) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.code() == value)
    }

    /// The name used in docs/PROTOCOL.md, e.g. `PAYLOAD_SIZE`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::MalformedFrame => "MALFORMED_FRAME",
            Self::UnknownFrame => "UNKNOWN_FRAME",
            Self::FrameTooLarge => "FRAME_TOO_LARGE",
            Self::Handshake => "HANDSHAKE",
            Self::UnsupportedVersion => "UNSUPPORTED_VERSION",
            Self::BadSchema => "BAD_SCHEMA",
            Self::BadEpisodeId => "BAD_EPISODE_ID",
            Self::EpisodeExists => "EPISODE_EXISTS",
            Self::AlreadyOpen => "ALREADY_OPEN",
            Self::NotOpen => "NOT_OPEN",
            Self::Sequence => "SEQUENCE",
            Self::PayloadSize => "PAYLOAD_SIZE",
            Self::Limit => "LIMIT",
            Self::Overloaded => "OVERLOADED",
            Self::Storage => "STORAGE",
            Self::ShuttingDown => "SHUTTING_DOWN",
            Self::Internal => "INTERNAL",
            Self::BadShm => "BAD_SHM",
            Self::DiskLow => "DISK_LOW",
            Self::Stopped => "STOPPED",
            Self::PermissionDenied => "PERMISSION_DENIED",
            Self::TimestampOrder => "TIMESTAMP_ORDER",
            Self::Timeout => "TIMEOUT",
            Self::UnknownEpisode => "UNKNOWN_EPISODE",
            Self::EpisodeClosed => "EPISODE_CLOSED",
            Self::StreamExists => "STREAM_EXISTS",
        }
    }

    /// Whether the server closes the connection after sending this code (the "connection"
    /// column of the table). `MALFORMED_FRAME` is `false`: it closes only when the framing
    /// itself is broken, which [`ProtoError::is_fatal`] decides.
    #[must_use]
    pub fn closes_connection(self) -> bool {
        matches!(
            self,
            Self::UnknownFrame
                | Self::FrameTooLarge
                | Self::Handshake
                | Self::UnsupportedVersion
                | Self::Overloaded
                | Self::ShuttingDown
                | Self::Internal
                | Self::PermissionDenied
                | Self::Timeout
        )
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.code())
    }
}

/// Everything that can go wrong decoding, validating or encoding protocol frames.
///
/// The `Display` text is meant to be sent as an `ERROR` message as is: it names the frame,
/// the field and the values.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtoError {
    /// The 4-byte header announces more than the receiver accepts. Fatal.
    #[error("frame body_len {len} exceeds max_frame_bytes {max}")]
    FrameTooLarge { len: u32, max: u32 },
    /// `body_len == 0`: there is not even a frame type. Fatal.
    #[error("frame body_len is 0 (must be >= 1)")]
    ZeroLength,
    /// A frame type no protocol version defines. Fatal.
    #[error("unknown frame type 0x{frame_type:02x}")]
    UnknownFrame { frame_type: u8 },
    /// A frame type of a later protocol version than the connection speaks: unknown to it
    /// (`UNKNOWN_FRAME`, as a server of that version answers). Fatal.
    #[error(
        "unknown frame type 0x{frame_type:02x} for protocol version {version} \
         ({name} needs version {needs}, asked for in HELLO)"
    )]
    FrameNotInVersion {
        frame_type: u8,
        name: &'static str,
        version: u16,
        needs: u16,
    },
    /// The slice handed to [`crate::parse`] is not exactly one frame. Fatal (a caller bug or
    /// a broken stream).
    #[error(
        "frame header announces {announced} bytes after the length field, slice holds {actual}"
    )]
    FrameLength { announced: usize, actual: usize },
    /// A payload field runs past the end of the frame.
    #[error("{frame}: field {field} truncated: needs {need} bytes, {have} left")]
    Truncated {
        frame: &'static str,
        field: String,
        need: usize,
        have: usize,
    },
    /// The payload parsed but bytes are left over.
    #[error("{frame}: {extra} trailing bytes after the last field")]
    TrailingBytes { frame: &'static str, extra: usize },
    /// A string field is not UTF-8.
    #[error("{frame}: field {field} is not valid UTF-8")]
    BadUtf8 { frame: &'static str, field: String },
    /// An enum or flag field holds a value the protocol does not define.
    #[error("{frame}: field {field} has value {value}, expected {expected}")]
    BadValue {
        frame: &'static str,
        field: String,
        value: u64,
        expected: &'static str,
    },
    /// The OPEN schema is not acceptable (`BAD_SCHEMA`).
    #[error("OPEN: {message}")]
    BadSchema { message: String },
    /// The episode id breaks the id rules (`BAD_EPISODE_ID`).
    #[error("OPEN: episode_id {id:?} {reason}")]
    BadEpisodeId { id: String, reason: String },
    /// A timestep payload does not match the schema's step size (`PAYLOAD_SIZE`).
    #[error("TIMESTEP seq {seq}: payload is {got} bytes, schema step is {want} bytes")]
    PayloadSize { seq: u64, got: usize, want: usize },
    /// A batch's records cannot be split into `count` steps of the schema's size
    /// (`PAYLOAD_SIZE`); `got` is the byte count of all records together.
    #[error(
        "TIMESTEP_BATCH seq {first_seq} (count {count}): steps are {got} bytes, \
         schema needs {count} x ({header} + {want}) bytes",
        header = crate::record::RECORD_HEADER_BYTES
    )]
    BatchSize {
        first_seq: u64,
        count: u32,
        got: usize,
        want: usize,
    },
    /// A `TIMESTEP_BATCH`'s records are shorter than `count` record headers, so they
    /// cannot hold `count` steps of any schema (`PAYLOAD_SIZE`, as every batch whose
    /// `count` does not match its bytes); `got` is the byte count of all records together.
    #[error(
        "TIMESTEP_BATCH (count {count}): steps are {got} bytes, less than the {count} x {header} \
         bytes of their record headers alone",
        header = crate::record::RECORD_HEADER_BYTES
    )]
    BatchTooShort { count: u32, got: usize },
    /// A version 2 request names a bad id: the episode id of `EPISODE_OPEN` or
    /// `STREAM_OPEN`, or the stream name (`BAD_EPISODE_ID`); `what` says which
    /// (`episode_id`, `stream name`).
    #[error("{frame}: {what} {id:?} {reason}")]
    BadId {
        frame: &'static str,
        what: &'static str,
        id: String,
        reason: String,
    },
    /// A version 2 request's schema or metadata is not acceptable (`BAD_SCHEMA`); the
    /// message names the stream and the field.
    #[error("{frame}: {message}")]
    BadRequest {
        frame: &'static str,
        message: String,
    },
    /// An `EVENT`'s data is larger than the server's `limits.max_event_bytes` (`LIMIT`).
    #[error("EVENT: data is {size} bytes, over limits.max_event_bytes {max}")]
    EventTooLarge { size: usize, max: usize },
    /// An `EVENT`'s data is not what its kind says: text not UTF-8, json not JSON
    /// (`MALFORMED_FRAME`).
    #[error("EVENT: field data of kind {kind} {reason}")]
    BadEventData { kind: &'static str, reason: String },
    /// An `EVENT` of kind json whose data is not one JSON value (`MALFORMED_FRAME`) or
    /// breaks a limit of what events hold (`LIMIT`): see [`EventJsonError`].
    #[error("EVENT: field data of kind json {0}")]
    BadEventJson(EventJsonError),
    /// A `COUNTERS` frame's counter breaks the name rule or repeats a name
    /// (`MALFORMED_FRAME`); `index` is its place in the frame.
    #[error("COUNTERS: counter {index} {name:?} {reason}")]
    BadCounter {
        index: usize,
        name: String,
        reason: BadCounterName,
    },
    /// A timestep's `t_ns` is below the previous timestep's (`TIMESTAMP_ORDER`): the
    /// episode's `time/timestamps_ns` must not decrease.
    #[error(
        "TIMESTEP seq {seq}: t_ns {t_ns} is below t_ns {prev_t_ns} of seq {prev_seq} \
         (t_ns must not decrease within an episode; equal is allowed)"
    )]
    TimestampOrder {
        seq: u64,
        t_ns: i64,
        prev_seq: u64,
        prev_t_ns: i64,
    },
    /// A timestep carries a different seq than expected (`SEQUENCE`).
    #[error("TIMESTEP seq {got}: expected seq {expected}")]
    Sequence { expected: u64, got: u64 },
    /// A shared-memory ring or its `SHM_ATTACH` breaks the rules of the shared-memory
    /// transport (`BAD_SHM`); the message names the value.
    #[error("{message}")]
    BadShm { message: String },
    /// Encoding: a field is too long for its length prefix.
    #[error("{frame}: field {field} is {len} bytes, the wire allows at most {max}")]
    TooLong {
        frame: &'static str,
        field: String,
        len: usize,
        max: usize,
    },
}

/// Why the data of an `EVENT` of kind json is refused (the checks of `event_json`). The text
/// follows `EVENT: field data of kind json` in [`ProtoError::BadEventJson`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EventJsonError {
    /// Not one JSON value: serde_json's message, with the line and column.
    #[error("is not valid JSON ({0})")]
    Invalid(String),
    /// Arrays and objects nested deeper than
    /// [`MAX_EVENT_JSON_DEPTH`](crate::payload_limits::MAX_EVENT_JSON_DEPTH).
    #[error(
        "nests arrays and objects {depth} deep (past the limit at byte {offset}); an event's \
         JSON may nest at most {max} deep (MAX_EVENT_JSON_DEPTH)",
        max = crate::payload_limits::MAX_EVENT_JSON_DEPTH
    )]
    TooDeep { depth: usize, offset: usize },
    /// A number a 64-bit float cannot hold, e.g. `1e400`.
    #[error(
        "has the number {number} at byte {offset}, out of the range of a 64-bit float \
         (magnitude at most {max:e}); an event's JSON numbers must be within it (integers \
         within it are stored with the digits sent)",
        max = f64::MAX
    )]
    NumberOutOfRange { number: String, offset: usize },
}

/// Why a counter of a `COUNTERS` frame is refused: its name breaks the rule
/// (`validate_counter_name` of the counters module) or repeats in the frame. The text follows the
/// counter's index and name in [`ProtoError::BadCounter`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadCounterName {
    #[error("is empty (must be 1..={max} bytes)", max = crate::payload_limits::MAX_COUNTER_NAME_BYTES)]
    Empty,
    #[error("is {len} bytes (must be 1..={max} bytes)", max = crate::payload_limits::MAX_COUNTER_NAME_BYTES)]
    TooLong { len: usize },
    #[error("has {found:?} at byte {at} (allowed: a-z, 0-9, _)")]
    BadChar { found: char, at: usize },
    #[error("appears twice in the frame (names are unique per frame)")]
    Repeated,
}

impl ProtoError {
    /// Whether the byte stream can no longer be parsed after this error: the receiver must
    /// send an `ERROR` and close the connection. Payload errors keep the framing intact.
    #[must_use]
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            Self::FrameTooLarge { .. }
                | Self::ZeroLength
                | Self::UnknownFrame { .. }
                | Self::FrameNotInVersion { .. }
                | Self::FrameLength { .. }
        )
    }

    /// The `ERROR` code the server answers with.
    #[must_use]
    pub fn error_code(&self) -> ErrorCode {
        match self {
            Self::FrameTooLarge { .. } => ErrorCode::FrameTooLarge,
            Self::UnknownFrame { .. } | Self::FrameNotInVersion { .. } => ErrorCode::UnknownFrame,
            Self::ZeroLength
            | Self::FrameLength { .. }
            | Self::Truncated { .. }
            | Self::TrailingBytes { .. }
            | Self::BadUtf8 { .. }
            | Self::BadValue { .. }
            | Self::TooLong { .. }
            | Self::BadEventData { .. }
            | Self::BadCounter { .. }
            | Self::BadEventJson(EventJsonError::Invalid(_)) => ErrorCode::MalformedFrame,
            Self::BadEventJson(
                EventJsonError::TooDeep { .. } | EventJsonError::NumberOutOfRange { .. },
            ) => ErrorCode::Limit,
            Self::BadSchema { .. } | Self::BadRequest { .. } => ErrorCode::BadSchema,
            Self::BadEpisodeId { .. } | Self::BadId { .. } => ErrorCode::BadEpisodeId,
            Self::EventTooLarge { .. } => ErrorCode::Limit,
            Self::PayloadSize { .. } | Self::BatchSize { .. } | Self::BatchTooShort { .. } => {
                ErrorCode::PayloadSize
            }
            Self::TimestampOrder { .. } => ErrorCode::TimestampOrder,
            Self::Sequence { .. } => ErrorCode::Sequence,
            Self::BadShm { .. } => ErrorCode::BadShm,
        }
    }

    /// The same error with `prefix.` put in front of the field name (e.g. `channels[2]`).
    #[must_use]
    pub(crate) fn in_field(mut self, prefix: &str) -> Self {
        match &mut self {
            Self::Truncated { field, .. }
            | Self::BadUtf8 { field, .. }
            | Self::BadValue { field, .. }
            | Self::TooLong { field, .. } => *field = format!("{prefix}.{field}"),
            _ => {}
        }
        self
    }
}
