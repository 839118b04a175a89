//! How a producer asks for flight mode: keys of the open's metadata (`OPEN`,
//! `EPISODE_OPEN` for every stream of the episode, `STREAM_OPEN` for one stream).
//!
//! - `"wshard.flight": true`, or an object `{"ring_seconds": S, "ring_bytes": B}` (either
//!   key optional, each at least 1) overriding `[flight]` for this open;
//! - `"wshard.latched": true`: the stream's last value goes into every window.

use serde_json::{Map, Value};

use crate::session::flight_ring::RingBounds;

/// The metadata key asking for flight mode.
pub const FLIGHT_KEY: &str = "wshard.flight";
/// The metadata key marking a stream latched.
pub const LATCHED_KEY: &str = "wshard.latched";
/// Nanoseconds per second.
pub const NS_PER_S: u64 = 1_000_000_000;

/// What an open asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlightOptions {
    pub bounds: RingBounds,
    pub latched: bool,
}

/// A flight key with a value that is not one of the accepted forms.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("metadata `{key}`: {why}")]
pub struct FlightOptionError {
    pub key: String,
    pub why: String,
}

fn bad(key: &str, why: impl Into<String>) -> FlightOptionError {
    FlightOptionError {
        key: key.to_owned(),
        why: why.into(),
    }
}

fn positive(obj: &Map<String, Value>, key: &str) -> Result<Option<u64>, FlightOptionError> {
    match obj.get(key) {
        None => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if n > 0 => Ok(Some(n)),
            _ => Err(bad(
                &format!("{FLIGHT_KEY}.{key}"),
                format!("expected an integer of at least 1, found {v}"),
            )),
        },
    }
}

fn bounds_of(value: &Value, defaults: RingBounds) -> Result<Option<RingBounds>, FlightOptionError> {
    match value {
        Value::Bool(false) | Value::Null => Ok(None),
        Value::Bool(true) => Ok(Some(defaults)),
        Value::Object(obj) => {
            if let Some(k) = obj
                .keys()
                .find(|k| !["ring_seconds", "ring_bytes"].contains(&k.as_str()))
            {
                return Err(bad(
                    FLIGHT_KEY,
                    format!("unknown key `{k}` (ring_seconds, ring_bytes)"),
                ));
            }
            Ok(Some(RingBounds {
                max_ns: positive(obj, "ring_seconds")?
                    .map_or(defaults.max_ns, |s| s.saturating_mul(NS_PER_S)),
                max_bytes: positive(obj, "ring_bytes")?.unwrap_or(defaults.max_bytes),
            }))
        }
        other => Err(bad(
            FLIGHT_KEY,
            format!("expected true, false or {{\"ring_seconds\", \"ring_bytes\"}}, found {other}"),
        )),
    }
}

/// The settings a session records with: a latched stream's chunks hold one timestep each,
/// so that its last value is in a finalized chunk (and so in every window) as soon as it
/// is durable.
#[must_use]
pub fn session_settings(
    mut settings: crate::session::SessionSettings,
    flight: Option<FlightOptions>,
) -> crate::session::SessionSettings {
    if flight.is_some_and(|f| f.latched) {
        settings.rotation.max_timesteps = 1;
        settings.rotation.max_age = std::time::Duration::ZERO;
    }
    settings
}

/// The flight options of an open with metadata `own`, in an episode opened with
/// `episode` (a stream of a multi-stream episode); `None`: recorded normally.
///
/// # Errors
/// A flight key with a bad value, naming it.
pub fn flight_options(
    own: &Map<String, Value>,
    episode: Option<&Map<String, Value>>,
    defaults: RingBounds,
) -> Result<Option<FlightOptions>, FlightOptionError> {
    let latched = match own.get(LATCHED_KEY) {
        None | Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) => true,
        Some(v) => {
            return Err(bad(
                LATCHED_KEY,
                format!("expected true or false, found {v}"),
            ))
        }
    };
    let mut bounds = None;
    if let Some(v) = episode.and_then(|m| m.get(FLIGHT_KEY)) {
        bounds = bounds_of(v, defaults)?;
    }
    if let Some(v) = own.get(FLIGHT_KEY) {
        bounds = bounds_of(v, bounds.unwrap_or(defaults))?;
    }
    Ok(bounds.map(|bounds| FlightOptions { bounds, latched }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    const D: RingBounds = RingBounds {
        max_ns: 5,
        max_bytes: 7,
    };

    fn meta(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn flight_options_from_open_metadata() {
        assert_eq!(flight_options(&meta(json!({})), None, D), Ok(None));
        let o = flight_options(&meta(json!({"wshard.flight": true})), None, D).unwrap();
        assert_eq!(
            o,
            Some(FlightOptions {
                bounds: D,
                latched: false
            })
        );
        let ep = meta(json!({"wshard.flight": {"ring_seconds": 2}}));
        let o = flight_options(&meta(json!({"wshard.latched": true})), Some(&ep), D).unwrap();
        assert_eq!(
            o,
            Some(FlightOptions {
                bounds: RingBounds {
                    max_ns: 2 * NS_PER_S,
                    max_bytes: 7
                },
                latched: true
            })
        );
        let e = flight_options(&meta(json!({"wshard.flight": {"ring_bytes": 0}})), None, D);
        assert_eq!(e.unwrap_err().key, "wshard.flight.ring_bytes");
        let e = flight_options(&meta(json!({"wshard.flight": "yes"})), None, D);
        assert_eq!(e.unwrap_err().key, "wshard.flight");
        let e = flight_options(&meta(json!({"wshard.latched": 1})), None, D);
        assert_eq!(e.unwrap_err().key, "wshard.latched");
    }
}
