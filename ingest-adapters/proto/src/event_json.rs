//! The data of an `EVENT` of kind json: the limits it is held to, and its compact text.
//!
//! The daemon stores the value as it was sent (docs/FORMAT-NOTES.md, "Events"): the same
//! tokens, in the same order, with the same digits, only the whitespace between tokens
//! removed so that it fits its line of the events file. So that every reader of that file
//! can read it back, and the daemon's own recovery can tell an event from a torn line, the
//! value must stay within two limits (docs/PROTOCOL.md, "EVENT"):
//!
//! - arrays and objects nested at most [`MAX_EVENT_JSON_DEPTH`] deep (serde_json reads at
//!   most 127 levels, and the event's line adds one);
//! - every number within the range of a 64-bit float (its magnitude, rounded to a double,
//!   at most `f64::MAX`): `1e400` is refused. An integer outside the 64-bit range
//!   (`18446744073709551617`) is within it, and is stored with the digits sent.

use crate::error::EventJsonError;

pub use crate::payload_limits::MAX_EVENT_JSON_DEPTH;

/// JSON's whitespace between tokens (RFC 8259): space, tab, line feed, carriage return.
fn is_json_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The bytes a number token may hold.
fn is_number_byte(b: u8) -> bool {
    matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
}

/// The most bytes of a refused number an error message shows.
const SHOWN_NUMBER_BYTES: usize = 40;

/// A number for messages: its first [`SHOWN_NUMBER_BYTES`] bytes, and its length when cut.
fn shown_number(token: &[u8]) -> String {
    let text = String::from_utf8_lossy(token);
    if token.len() <= SHOWN_NUMBER_BYTES {
        return text.into_owned();
    }
    let cut: String = text.chars().take(SHOWN_NUMBER_BYTES).collect();
    format!("{cut}... ({} bytes)", token.len())
}

/// Where the string starting at `start` (its opening quote) ends: one past its closing
/// quote, or the end of `data` for a string left open.
fn string_end(data: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < data.len() {
        match data[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    data.len()
}

/// Check `data`, an event's JSON text, against the limits of the module doc and return it
/// compact: the whitespace between tokens removed, everything else as sent.
///
/// # Errors
/// [`EventJsonError::TooDeep`] naming the depth reached and where the limit was crossed;
/// [`EventJsonError::NumberOutOfRange`] naming the number and its offset;
/// [`EventJsonError::Invalid`] for text that is not one JSON value (serde_json's message,
/// with the line and column).
pub fn compact_event_json(data: &[u8]) -> Result<String, EventJsonError> {
    let mut out = Vec::with_capacity(data.len());
    let mut depth = 0usize;
    let mut deepest = 0usize;
    let mut crossed_at = None;
    let mut i = 0;
    while i < data.len() {
        let b = data[i];
        if b == b'"' {
            let end = string_end(data, i);
            out.extend_from_slice(&data[i..end]);
            i = end;
            continue;
        }
        if matches!(b, b'-' | b'0'..=b'9') {
            let len = data[i..].iter().take_while(|&&c| is_number_byte(c)).count();
            let token = &data[i..i + len];
            let value = std::str::from_utf8(token)
                .ok()
                .and_then(|t| t.parse::<f64>().ok());
            if value.is_some_and(f64::is_infinite) {
                return Err(EventJsonError::NumberOutOfRange {
                    number: shown_number(token),
                    offset: i,
                });
            }
            out.extend_from_slice(token);
            i += len;
            continue;
        }
        match b {
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_EVENT_JSON_DEPTH && crossed_at.is_none() {
                    crossed_at = Some(i);
                }
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if !is_json_whitespace(b) {
            out.push(b);
        }
        i += 1;
    }
    if let Some(offset) = crossed_at {
        return Err(EventJsonError::TooDeep {
            depth: deepest,
            offset,
        });
    }
    serde_json::from_slice::<serde_json::Value>(data)
        .map_err(|e| EventJsonError::Invalid(e.to_string()))?;
    // Valid JSON is UTF-8, and removing ASCII whitespace between tokens keeps it so.
    String::from_utf8(out).map_err(|e| EventJsonError::Invalid(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proto_event_json_compact_keeps_everything_but_whitespace() {
        let sent =
            b" { \"b\" : [ 1 ,\n 2.50 ] ,\t\"a\":\"x y\\\" z\" , \"n\": 18446744073709551617 }\r\n";
        assert_eq!(
            compact_event_json(sent).unwrap(),
            r#"{"b":[1,2.50],"a":"x y\" z","n":18446744073709551617}"#
        );
    }

    #[test]
    fn proto_event_json_limits() {
        let nested = |d: usize| {
            format!(
                "{}0{}",
                "[{\"k\":".repeat(d / 2) + &"[".repeat(d % 2),
                "]".repeat(d % 2) + &"}]".repeat(d / 2)
            )
        };
        assert!(compact_event_json(nested(MAX_EVENT_JSON_DEPTH).as_bytes()).is_ok());
        assert_eq!(
            compact_event_json(nested(MAX_EVENT_JSON_DEPTH + 2).as_bytes()),
            Err(EventJsonError::TooDeep {
                depth: MAX_EVENT_JSON_DEPTH + 2,
                offset: 6 * (MAX_EVENT_JSON_DEPTH / 2),
            })
        );
        // Brackets inside strings are text.
        let in_string = format!("\"{}\"", "[".repeat(500));
        assert!(compact_event_json(in_string.as_bytes()).is_ok());
        assert!(compact_event_json(b"[1.7976931348623157e308, -1e308, 1e-400]").is_ok());
        assert_eq!(
            compact_event_json(b"[0, -2e308]"),
            Err(EventJsonError::NumberOutOfRange {
                number: "-2e308".into(),
                offset: 4,
            })
        );
        let long = format!("1{}", "0".repeat(400));
        let Err(EventJsonError::NumberOutOfRange { number, .. }) =
            compact_event_json(long.as_bytes())
        else {
            panic!("a 401-digit integer is out of range");
        };
        assert_eq!(number, format!("1{}... (401 bytes)", "0".repeat(39)));
        // Every refusal is an EVENT refusal (the message starts with `EVENT:`).
        for bad in [&b"{"[..], b"1e999", nested(200).as_bytes()] {
            let e = crate::error::ProtoError::BadEventJson(compact_event_json(bad).unwrap_err());
            assert!(crate::event::is_event_refusal(&e.to_string()), "{e}");
        }
    }
}
