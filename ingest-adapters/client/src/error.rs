//! [`ClientError`].

use wshard_ingest_proto::{ErrorCode, ProtoError};

/// Everything a [`crate::Client`] call can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// Connecting, writing or reading the socket failed.
    #[error("socket I/O: {0}")]
    Io(#[from] std::io::Error),
    /// A frame could not be encoded, or the server sent bytes that do not parse.
    #[error("protocol: {0}")]
    Protocol(#[from] ProtoError),
    /// The server sent a frame that makes no sense here (wrong direction, version, order).
    #[error("protocol: unexpected from server: {0}")]
    Unexpected(String),
    /// The server answered with an `ERROR` frame.
    #[error("server error {code}: {message}")]
    Server {
        /// The `ERROR.code`.
        code: ErrorCode,
        /// The `ERROR.message`, naming the field and values.
        message: String,
    },
    /// The connection is gone (closed by the server after an error, or broken earlier).
    #[error("connection closed")]
    Closed,
    /// The schema was refused client-side before anything was sent (same checks as the
    /// server's, with the server's `max_frame_bytes`).
    #[error("schema refused before sending: {0}")]
    Schema(ProtoError),
    /// A payload's size does not match its channel's step size; nothing was sent.
    #[error(
        "channel {index} {channel:?}: payload is {got} bytes, schema step is {expected} bytes"
    )]
    SchemaMismatch {
        /// Channel index in schema order.
        index: usize,
        /// Channel name (`*` for a packed payload of all channels).
        channel: String,
        /// Payload bytes per step the schema says.
        expected: usize,
        /// Payload bytes given.
        got: usize,
    },
    /// The number of payloads does not match the number of channels; nothing was sent.
    #[error("{got} payloads for {expected} channels")]
    PayloadCount {
        /// Channels in the schema.
        expected: usize,
        /// Payloads given.
        got: usize,
    },
    /// `wait_durable` for a seq that was never pushed.
    #[error("seq {seq} was not pushed (next seq is {next_seq})")]
    NotPushed {
        /// The seq asked for.
        seq: u64,
        /// The seq the next push gets.
        next_seq: u64,
    },
    /// An earlier server `ERROR` failed this episode; only `close` is still possible.
    #[error("the episode failed after an earlier server error; close it and open a new one")]
    EpisodeFailed,
    /// Setting up or using the shared-memory ring failed on the client side (memfd,
    /// eventfd, seals, mmap, a geometry the protocol does not allow).
    #[error("shared-memory transport: {0}")]
    Shm(String),
    /// The call needs a later protocol version than the connection speaks; nothing was
    /// sent (connect with `ClientOptions::protocol_version` = `ProtocolVersion::V2`, or
    /// [`crate::Client::connect_v2`]).
    #[error(
        "{frame} needs protocol version {needs}; this connection speaks version {speaks} \
         (connect with protocol version {needs})"
    )]
    NeedsVersion {
        /// The frame the call would send, e.g. `STREAM_OPEN`.
        frame: &'static str,
        /// The version that defines it.
        needs: u16,
        /// The version the connection speaks.
        speaks: u16,
    },
    /// An event was refused client-side before anything was sent (its data is not what its
    /// kind says, or it does not fit a frame).
    #[error("event refused before sending: {0}")]
    Event(ProtoError),
    /// Producer counters were refused client-side before anything was sent: too many, a
    /// name that breaks `[a-z0-9_]{1,32}` or appears twice (the message names it).
    #[error("counters refused before sending: {0}")]
    Counters(ProtoError),
    /// No answer within `ClientOptions::timeout`.
    #[error("timed out waiting for {0}")]
    Timeout(&'static str),
}

/// Result alias of the client.
pub type Result<T, E = ClientError> = std::result::Result<T, E>;
