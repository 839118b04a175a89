//! Wall-clock times as the control plane shows them: seconds since the Unix epoch (the
//! `*_unix_s` fields of `status` and `episodes`, the `*_time_seconds` metrics). A leaf: it
//! calls no other module of the control plane.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch (0 for times before it).
#[must_use]
pub fn unix_seconds(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
