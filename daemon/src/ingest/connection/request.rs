//! A frame from the client, sorted for the state handlers: HELLO, a request of a
//! connection past its handshake, or a frame only a server sends.

use wshard_ingest_proto::{
    Counters, EpisodeOpen, Event, Frame, FrameType, OpenEpisode, Outcome, RingPolicy, StreamOpen,
    Timestep, TimestepBatch, Trigger,
};

/// A frame as the connection's states see it.
pub(super) enum Incoming {
    /// `HELLO`: the first frame, and only the first.
    Hello { version: u16, client_name: String },
    /// Any other frame a client sends.
    Request(Request),
    /// A frame only a server sends (`HELLO_OK`, `ACCEPTED`, `DURABLE`, `ERROR`).
    ServerFrame(FrameType),
}

/// A client frame after the handshake.
pub(super) enum Request {
    Open(OpenEpisode),
    Timestep(Timestep),
    Batch(TimestepBatch),
    Flush,
    Close(Outcome),
    ShmAttach {
        slot_size: u32,
        slot_count: u32,
        /// `block` when the frame has no policy byte.
        policy: RingPolicy,
    },
    /// Version 2: create a multi-stream episode owned by this connection.
    EpisodeOpen(EpisodeOpen),
    /// Version 2: join a multi-stream episode with one stream (boxed: it holds a schema).
    StreamOpen(Box<StreamOpen>),
    /// Version 2: an event of the connection's episode.
    Event(Event),
    /// Version 2: the owner closes its multi-stream episode.
    EpisodeClose(Outcome),
    /// Version 2: the producer counters of the stream (or episode) the connection records.
    Counters(Counters),
    /// Version 2: persist the flight recorder's window.
    Trigger(Trigger),
}

impl Incoming {
    /// Sort `frame`.
    pub(super) fn from_frame(frame: Frame) -> Self {
        let request = match frame {
            Frame::Hello {
                version,
                client_name,
            } => {
                return Self::Hello {
                    version,
                    client_name,
                }
            }
            Frame::Open(open) => Request::Open(open),
            Frame::Timestep(t) => Request::Timestep(t),
            Frame::TimestepBatch(b) => Request::Batch(b),
            Frame::Flush => Request::Flush,
            Frame::Close { outcome } => Request::Close(outcome),
            Frame::ShmAttach {
                slot_size,
                slot_count,
                policy,
            } => Request::ShmAttach {
                slot_size,
                slot_count,
                policy: policy.unwrap_or_default(),
            },
            other @ (Frame::HelloOk { .. }
            | Frame::Accepted { .. }
            | Frame::Durable { .. }
            | Frame::Error { .. }
            | Frame::Triggered(_)) => return Self::ServerFrame(other.frame_type()),
            Frame::EpisodeOpen(o) => Request::EpisodeOpen(o),
            Frame::StreamOpen(o) => Request::StreamOpen(o),
            Frame::Event(e) => Request::Event(e),
            Frame::EpisodeClose { outcome } => Request::EpisodeClose(outcome),
            Frame::Counters(c) => Request::Counters(c),
            Frame::Trigger(t) => Request::Trigger(t),
        };
        Self::Request(request)
    }

    /// The frame's type (for messages).
    pub(super) fn frame_type(&self) -> FrameType {
        match self {
            Self::Hello { .. } => FrameType::Hello,
            Self::Request(r) => r.frame_type(),
            Self::ServerFrame(t) => *t,
        }
    }
}

impl Request {
    /// The frame's type (for messages).
    pub(super) fn frame_type(&self) -> FrameType {
        match self {
            Self::Open(_) => FrameType::Open,
            Self::Timestep(_) => FrameType::Timestep,
            Self::Batch(_) => FrameType::TimestepBatch,
            Self::Flush => FrameType::Flush,
            Self::Close(_) => FrameType::Close,
            Self::ShmAttach { .. } => FrameType::ShmAttach,
            Self::EpisodeOpen(_) => FrameType::EpisodeOpen,
            Self::StreamOpen(_) => FrameType::StreamOpen,
            Self::Event(_) => FrameType::Event,
            Self::EpisodeClose(_) => FrameType::EpisodeClose,
            Self::Counters(_) => FrameType::Counters,
            Self::Trigger(_) => FrameType::Trigger,
        }
    }
}
