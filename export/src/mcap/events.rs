//! Messages of the episode's events (topic [`EVENTS_TOPIC`], schema `wshard.Event`) and
//! operator annotations ([`ANNOTATIONS_TOPIC`], `wshard.Annotation`): label, kind, data (a
//! string for text, the JSON value for json, standard base64 for binary), seq, and who made
//! it. Keys sorted.

use serde_json::{json, Value};
use wshard::episode_dir::{EpisodeEvent, EventOrigin};

use super::stamp::Stamp;

/// The topic of producer events.
pub const EVENTS_TOPIC: &str = "/events";
/// The topic of operator annotations.
pub const ANNOTATIONS_TOPIC: &str = "/annotations";

/// The message of one event or annotation.
pub(crate) fn event_message(stamp: Stamp, e: &EpisodeEvent) -> Vec<u8> {
    let mut v = json!({
        "timestamp": {"sec": stamp.ns / 1_000_000_000, "nsec": stamp.ns % 1_000_000_000},
        "label": e.label,
        "kind": e.kind().as_str(),
        "data": e.data.to_json_value(),
        "seq": e.seq,
    });
    if let Value::Object(m) = &mut v {
        match &e.origin {
            EventOrigin::Producer { source } => {
                m.insert("source".into(), json!(source));
            }
            EventOrigin::Operator {
                author,
                created_unix_ns,
            } => {
                m.insert("author".into(), json!(author));
                m.insert("created_unix_ns".into(), json!(created_unix_ns));
            }
        }
    }
    // A `Value` always serialises.
    serde_json::to_vec(&v).unwrap_or_default()
}
