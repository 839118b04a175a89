//! Limits on what a payload may hold that the errors name: a leaf, so the error types
//! ([`crate::error`]) and the payload modules that check the limits both use it.

/// The longest counter name of a `COUNTERS` frame, in bytes.
pub const MAX_COUNTER_NAME_BYTES: usize = 32;

/// The deepest nesting of arrays and objects in an event's JSON value: a scalar is depth
/// 0, `[1]` depth 1, `{"a": [1]}` depth 2.
pub const MAX_EVENT_JSON_DEPTH: usize = 100;
