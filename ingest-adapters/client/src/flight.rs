//! Flight mode at open: [`FlightMode`] adds the daemon's flight keys to an `OPEN`,
//! `EPISODE_OPEN` (every stream of the episode) or `STREAM_OPEN`'s metadata:
//! `"wshard.flight": true` or `{"ring_seconds": S, "ring_bytes": B}` (the daemon keeps
//! only the stream's most recent chunks, a ring a trigger persists windows of), and
//! `"wshard.latched": true` (a stream whose last value goes into every window).

use serde_json::{json, Map, Value};
use wshard_ingest_proto::{EpisodeOpen, OpenEpisode, StreamOpen};

/// The metadata key asking for flight mode (the daemon's `flight::options`).
pub const FLIGHT_KEY: &str = "wshard.flight";
/// The metadata key marking a stream latched.
pub const LATCHED_KEY: &str = "wshard.latched";

fn with_key(metadata_json: &str, key: &str, value: Value) -> String {
    let mut m: Map<String, Value> = serde_json::from_str(metadata_json).unwrap_or_default();
    m.insert(key.to_owned(), value);
    Value::Object(m).to_string()
}

/// Flight-mode options of an open. Metadata that is not a JSON object is replaced by one
/// holding only the flight keys (the daemon would refuse it anyway).
pub trait FlightMode: Sized {
    /// Record in flight mode with the daemon's `[flight]` ring bounds.
    #[must_use]
    fn flight(self) -> Self;
    /// Record in flight mode with this ring: `seconds` of `t_ns` and `bytes` of chunk files
    /// (each at least 1; `None` keeps the daemon's default).
    #[must_use]
    fn flight_ring(self, seconds: Option<u64>, bytes: Option<u64>) -> Self;
    /// Mark the stream latched: its last value goes into every trigger window.
    #[must_use]
    fn latched(self) -> Self;
}

fn ring_value(seconds: Option<u64>, bytes: Option<u64>) -> Value {
    let mut m = Map::new();
    if let Some(s) = seconds {
        m.insert("ring_seconds".into(), json!(s));
    }
    if let Some(b) = bytes {
        m.insert("ring_bytes".into(), json!(b));
    }
    Value::Object(m)
}

macro_rules! flight_mode {
    ($t:ty, $($field:ident).+) => {
        impl FlightMode for $t {
            fn flight(mut self) -> Self {
                self.$($field).+ = with_key(&self.$($field).+, FLIGHT_KEY, json!(true));
                self
            }
            fn flight_ring(mut self, seconds: Option<u64>, bytes: Option<u64>) -> Self {
                self.$($field).+ =
                    with_key(&self.$($field).+, FLIGHT_KEY, ring_value(seconds, bytes));
                self
            }
            fn latched(mut self) -> Self {
                self.$($field).+ = with_key(&self.$($field).+, LATCHED_KEY, json!(true));
                self
            }
        }
    };
}

flight_mode!(OpenEpisode, metadata_json);
flight_mode!(EpisodeOpen, metadata_json);
flight_mode!(StreamOpen, schema.metadata_json);

#[cfg(test)]
mod tests {
    use super::*;
    use wshard_ingest_proto::TimebaseSpec;

    #[test]
    fn flight_client_keys_merge_into_the_metadata() {
        let o = OpenEpisode::new("e", "env", TimebaseSpec::Ticks { tick_hz: 10.0 })
            .with_metadata_json(r#"{"robot":"r1"}"#)
            .flight_ring(Some(5), None);
        let v: Value = serde_json::from_str(&o.metadata_json).unwrap_or_default();
        assert_eq!(v, json!({"robot":"r1","wshard.flight":{"ring_seconds":5}}));
        let s = StreamOpen::new("e", "calib", TimebaseSpec::Ticks { tick_hz: 1.0 })
            .flight()
            .latched();
        let v: Value = serde_json::from_str(&s.schema.metadata_json).unwrap_or_default();
        assert_eq!(v, json!({"wshard.flight":true,"wshard.latched":true}));
        let e = EpisodeOpen::new("e", "env").flight();
        assert!(e.metadata_json.contains("wshard.flight"));
    }
}
