//! The JSON Schemas (MCAP schema encoding `jsonschema`) of the messages an export writes,
//! and the names of those encodings.
//!
//! - `wshard.Vector`: a low-dimensional channel's step, `{"timestamp": {"sec", "nsec"},
//!   "values": [...]}` (the step's elements flattened row-major).
//! - `foxglove.RawImage` and `foxglove.CompressedImage`: the fields of Foxglove's published
//!   schemas of those names (timestamp, frame_id, width, height, encoding, step, data /
//!   timestamp, frame_id, data, format; `data` base64 as their JSON schemas say).
//! - `wshard.Event` and `wshard.Annotation`: the episode's events and operator annotations.
//!
//! Keys are sorted (serde_json's map), so the schema bytes are the same on every run.

use serde_json::{json, Value};
use wshard::episode::DType;

/// MCAP schema encoding of every schema written.
pub const SCHEMA_ENCODING: &str = "jsonschema";
/// MCAP message encoding of every channel written.
pub const MESSAGE_ENCODING: &str = "json";

pub const VECTOR_SCHEMA: &str = "wshard.Vector";
pub const RAW_IMAGE_SCHEMA: &str = "foxglove.RawImage";
pub const COMPRESSED_IMAGE_SCHEMA: &str = "foxglove.CompressedImage";
pub const EVENT_SCHEMA: &str = "wshard.Event";
pub const ANNOTATION_SCHEMA: &str = "wshard.Annotation";

/// Largest nanoseconds field of a timestamp.
const MAX_NSEC: u32 = 999_999_999;

/// `{"sec", "nsec"}`, Foxglove's `time`.
fn time() -> Value {
    json!({
        "type": "object",
        "title": "time",
        "properties": {
            "sec": {"type": "integer", "minimum": 0},
            "nsec": {"type": "integer", "minimum": 0, "maximum": MAX_NSEC},
        },
        "required": ["sec", "nsec"],
        "description": "The step's time (the stream clock), since the Unix epoch",
    })
}

/// The JSON type of one element of `dtype`.
fn element_type(dtype: DType) -> &'static str {
    match dtype {
        DType::F64 | DType::F32 | DType::F16 | DType::BF16 => "number",
        DType::Bool => "boolean",
        _ => "integer",
    }
}

fn bytes(v: &Value) -> Vec<u8> {
    // A `Value` always serialises.
    serde_json::to_vec_pretty(v).unwrap_or_default()
}

/// The schema of a low-dimensional channel of `dtype` with `elements` elements per step.
#[must_use]
pub fn vector(dtype: DType, elements: usize) -> Vec<u8> {
    let number = element_type(dtype);
    let items = if number == "number" {
        // Non-finite floats have no JSON spelling: they are written as null.
        json!({"type": [number, "null"]})
    } else {
        json!({"type": number})
    };
    bytes(&json!({
        "title": VECTOR_SCHEMA,
        "description": "One step of a low-dimensional WShard channel: its elements, row-major",
        "type": "object",
        "properties": {
            "timestamp": time(),
            "values": {
                "type": "array",
                "items": items,
                "minItems": elements,
                "maxItems": elements,
                "description": format!("{} elements, dtype {}", elements, dtype.code()),
            },
        },
        "required": ["timestamp", "values"],
    }))
}

/// Foxglove's `RawImage`.
#[must_use]
pub fn raw_image() -> Vec<u8> {
    bytes(&json!({
        "title": RAW_IMAGE_SCHEMA,
        "description": "A raw image",
        "type": "object",
        "properties": {
            "timestamp": time(),
            "frame_id": {"type": "string", "description": "Frame of reference (the stream name)"},
            "width": {"type": "integer", "minimum": 0, "description": "Width in pixels"},
            "height": {"type": "integer", "minimum": 0, "description": "Height in pixels"},
            "encoding": {"type": "string", "description": "rgb8, mono8, 16UC1 (little-endian) or 32FC1 (little-endian)"},
            "step": {"type": "integer", "minimum": 0, "description": "Bytes per row"},
            "data": {"type": "string", "contentEncoding": "base64", "description": "The pixels, row-major"},
        },
        "required": ["timestamp", "frame_id", "width", "height", "encoding", "step", "data"],
    }))
}

/// Foxglove's `CompressedImage`.
#[must_use]
pub fn compressed_image() -> Vec<u8> {
    bytes(&json!({
        "title": COMPRESSED_IMAGE_SCHEMA,
        "description": "A compressed image",
        "type": "object",
        "properties": {
            "timestamp": time(),
            "frame_id": {"type": "string", "description": "Frame of reference (the stream name)"},
            "data": {"type": "string", "contentEncoding": "base64", "description": "The compressed image"},
            "format": {"type": "string", "description": "jpeg or png"},
        },
        "required": ["timestamp", "frame_id", "data", "format"],
    }))
}

/// The properties an event and an annotation share.
fn event_properties() -> serde_json::Map<String, Value> {
    let mut p = serde_json::Map::new();
    p.insert("timestamp".into(), time());
    p.insert("label".into(), json!({"type": "string"}));
    p.insert(
        "kind".into(),
        json!({"type": "string", "enum": ["text", "json", "binary"]}),
    );
    p.insert(
        "data".into(),
        json!({"description": "text: a string; json: the JSON value; binary: standard base64"}),
    );
    p.insert("seq".into(), json!({"type": "integer", "minimum": 0}));
    p
}

/// A producer event (`{EP}_events.jsonl`).
#[must_use]
pub fn event() -> Vec<u8> {
    let mut p = event_properties();
    p.insert(
        "source".into(),
        json!({"type": "string", "description": "The stream (or client) that sent it"}),
    );
    bytes(&json!({
        "title": EVENT_SCHEMA,
        "description": "An event of the episode",
        "type": "object",
        "properties": p,
        "required": ["timestamp", "label", "kind", "data", "seq", "source"],
    }))
}

/// An operator annotation (`{EP}_annotations.json`).
#[must_use]
pub fn annotation() -> Vec<u8> {
    let mut p = event_properties();
    p.insert("author".into(), json!({"type": "string"}));
    p.insert(
        "created_unix_ns".into(),
        json!({"type": "integer", "minimum": 0}),
    );
    bytes(&json!({
        "title": ANNOTATION_SCHEMA,
        "description": "An operator's annotation of the episode",
        "type": "object",
        "properties": p,
        "required": ["timestamp", "label", "kind", "data", "seq", "author", "created_unix_ns"],
    }))
}
