//! wshardd ingest wire protocol, versions 1 and 2 (docs/PROTOCOL.md), sans-io: frames in,
//! bytes out, no sockets.
//!
//! The modules are layered, top to bottom: each uses only modules listed after it.
//!
//! - [`decoder`]: [`FrameDecoder`] for read loops; [`codec`]: [`check`] (framing),
//!   [`parse`]; [`encode`](fn@encode).
//! - [`frame`]: [`Frame`], which names every payload type, [`Outcome`], [`AcceptedWhat`].
//! - [`version`]: [`ProtocolVersion`], the `HELLO` negotiation and which frames each
//!   version knows.
//! - [`multistream`] (version 2): [`EpisodeOpen`], [`StreamOpen`], the stream-name rule;
//!   [`schema_diff`]: how a stream's schema differs from the one it was opened with.
//! - [`validate`]: [`OpenEpisode::validate`], the checks of a schema against
//!   [`SchemaLimits`], and the episode-id rule.
//! - [`batch`]: [`BatchEncoder`] to write `TIMESTEP_BATCH` frames straight into a send
//!   buffer, and the batch header's sizes.
//! - [`event`] (version 2): [`Event`], [`EventKind`], [`DEFAULT_MAX_EVENT_BYTES`];
//!   [`event_json`]: the limits of a json event's data and its compact text.
//! - [`counters`] (version 2): [`Counters`], a stream's producer counters (`COUNTERS`).
//! - [`trigger`] (version 2): [`Trigger`] and its answer [`Triggered`], the flight
//!   recorder's trigger from a producer (`TRIGGER`, `TRIGGERED`).
//! - [`values`]: [`StepValues`], the checks of values inside timesteps (`bool` elements,
//!   `t_ns` order).
//! - [`timestep`]: decoded timesteps, [`TimestepBatch`] (one buffer per batch) and
//!   [`TimestepRef`].
//! - [`schema`]: the `OPEN` schema ([`OpenEpisode`], [`ChannelSpec`]) and its wire enums.
//! - [`ring`]: the shared-memory ring's layout, geometry rules and header encodings
//!   (`SHM_ATTACH`, docs/PROTOCOL.md "Shared-memory transport"); mapping it is the
//!   `wshard-shm-ring` crate's.
//! - `wire`: the little-endian field readers and writers of the payloads.
//! - [`error`]: [`ProtoError`], [`ErrorCode`].
//! - The leaves, [`frame_header`]: the frame header's sizes, the type codes and
//!   [`FrameType`]; [`record`]: one timestep record's layout and [`push_step_record`];
//!   [`payload_limits`]: the limits on a payload's contents that the errors name.
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
pub mod frame_header;
pub mod multistream;
pub mod payload_limits;
pub mod record;
pub mod ring;
pub mod schema;
pub mod schema_diff;
pub mod timestep;
pub mod trigger;
pub mod validate;
pub mod values;
pub mod version;
mod wire;

pub use batch::{
    finish_batch, start_batch, BatchEncoder, BATCH_HEADER_BYTES, BATCH_OVERHEAD_BYTES,
};
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
pub use frame::{AcceptedWhat, Frame, Outcome};
pub use frame_header::{FrameType, DEFAULT_MAX_FRAME_BYTES, FRAME_HEADER_BYTES, LEN_BYTES};
pub use multistream::{validate_stream_name, EpisodeOpen, StreamOpen, MAX_STREAM_NAME_BYTES};
pub use record::{
    push_step_record, DONE_OFFSET, RECORD_HEADER_BYTES, REWARD_OFFSET, SEQ_OFFSET, T_NS_OFFSET,
};
pub use ring::{RingHeader, RingPolicy, SlotHeader};
pub use schema::{ChannelSpec, CodecChoice, Durability, OpenEpisode, TimebaseSpec};
pub use schema_diff::SchemaDifference;
pub use timestep::{check_sequence, iter_records, Steps, Timestep, TimestepBatch, TimestepRef};
pub use trigger::{is_trigger_refusal, Trigger, Triggered, MAX_TRIGGER_STREAMS};
pub use validate::{SchemaLimits, DEFAULT_MAX_EPISODE_ID_BYTES, MAX_EPISODE_ID_BYTES, MAX_NDIM};
pub use values::{StepMark, StepValues};
pub use version::{ProtocolVersion, NEWEST_PROTOCOL_VERSION, PROTOCOL_VERSION};
