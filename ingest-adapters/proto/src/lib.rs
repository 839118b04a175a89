//! wshardd ingest wire protocol, versions 1 and 2 (docs/PROTOCOL.md), sans-io: frames in,
//! bytes out, no sockets.
//!
//! - [`frame`]: type codes, [`Frame`], [`Outcome`], [`AcceptedWhat`].
//! - [`version`]: [`ProtocolVersion`], the `HELLO` negotiation and which frames each
//!   version knows.
//! - [`multistream`] (version 2): [`EpisodeOpen`], [`StreamOpen`], the stream-name rule;
//!   [`schema_diff`]: how a stream's schema differs from the one it was opened with.
//! - [`event`] (version 2): [`Event`], [`EventKind`], [`DEFAULT_MAX_EVENT_BYTES`];
//!   [`event_json`]: the limits of a json event's data and its compact text.
//! - [`counters`] (version 2): [`Counters`], a stream's producer counters (`COUNTERS`).
//! - [`schema`]: the `OPEN` schema ([`OpenEpisode`], [`ChannelSpec`]) and its wire enums;
//!   [`OpenEpisode::validate`] checks it against [`SchemaLimits`].
//! - [`timestep`]: step records, [`TimestepBatch`] (one buffer per batch) and
//!   [`TimestepRef`].
//! - [`codec`]: [`check`] (framing), [`parse`]; [`encode`](fn@encode); [`FrameDecoder`] for read loops;
//!   [`BatchEncoder`] to write batches straight into a send buffer.
//! - [`ring`]: the shared-memory ring's layout, geometry rules and header encodings
//!   (`SHM_ATTACH`, docs/PROTOCOL.md "Shared-memory transport").
//! - [`values`]: [`StepValues`], the checks of values inside timesteps (`bool` elements,
//!   `t_ns` order).
//! - [`ProtoError`], [`ErrorCode`].
//!
//! ```
//! use wshard_ingest_proto::{encode, parse, Frame, PROTOCOL_VERSION};
//! let hello = Frame::Hello { version: PROTOCOL_VERSION, client_name: "demo/0.1".into() };
//! let mut wire = Vec::new();
//! encode(&hello, &mut wire).unwrap();
//! assert_eq!(parse(&wire).unwrap(), hello);
//! ```

pub mod batch;
pub mod codec;
pub mod counters;
pub mod decoder;
pub mod encode;
pub mod error;
pub mod event;
pub mod event_json;
pub mod frame;
pub mod multistream;
pub mod ring;
pub mod schema;
pub mod schema_diff;
pub mod timestep;
pub mod validate;
pub mod values;
pub mod version;
mod wire;

pub use batch::{finish_batch, start_batch, BatchEncoder, BATCH_HEADER_BYTES};
pub use codec::{check, check_version, parse, parse_payload, FrameStatus};
pub use counters::{
    validate_counter_name, Counter, Counters, MAX_COUNTERS_PER_FRAME, MAX_COUNTERS_PER_STREAM,
    MAX_COUNTER_NAME_BYTES,
};
pub use decoder::{FrameDecoder, MIN_READ_BYTES};
pub use encode::{encode, encode_timestep, encode_to_vec};
pub use error::{BadCounterName, ErrorCode, EventJsonError, ProtoError};
pub use event::{is_event_refusal, CheckedEventData, Event, EventKind, DEFAULT_MAX_EVENT_BYTES};
pub use event_json::{compact_event_json, MAX_EVENT_JSON_DEPTH};
pub use frame::{
    AcceptedWhat, Frame, FrameType, Outcome, DEFAULT_MAX_FRAME_BYTES, FRAME_HEADER_BYTES, LEN_BYTES,
};
pub use multistream::{validate_stream_name, EpisodeOpen, StreamOpen, MAX_STREAM_NAME_BYTES};
pub use ring::{RingHeader, RingPolicy, SlotHeader};
pub use schema::{ChannelSpec, CodecChoice, Durability, OpenEpisode, TimebaseSpec};
pub use schema_diff::SchemaDifference;
pub use timestep::{
    check_sequence, iter_records, push_step_record, Steps, Timestep, TimestepBatch, TimestepRef,
    BATCH_OVERHEAD_BYTES, DONE_OFFSET, RECORD_HEADER_BYTES, REWARD_OFFSET, SEQ_OFFSET, T_NS_OFFSET,
};
pub use validate::{SchemaLimits, DEFAULT_MAX_EPISODE_ID_BYTES, MAX_EPISODE_ID_BYTES, MAX_NDIM};
pub use values::{StepMark, StepValues};
pub use version::{ProtocolVersion, NEWEST_PROTOCOL_VERSION, PROTOCOL_VERSION};
