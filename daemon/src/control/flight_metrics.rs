//! The flight recorder in the metrics: its triggers (counters), the windows pending, and
//! each flight stream's ring (bytes and seconds held, oldest `t_ns`), labelled `stream`.

use std::fmt;
use std::sync::atomic::Ordering;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use super::families::{family, single};
use super::state::ControlState;

const NS_PER_S: f64 = 1e9;

/// Write the flight recorder's families.
///
/// # Errors
/// Those of the encoder.
pub fn metrics(st: &ControlState, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let flight = &st.ctx.flight;
    let c = flight.counters();
    for (name, help, v) in [
        (
            "wshardd_flight_triggers",
            "Triggers accepted (merged ones included).",
            &c.triggers,
        ),
        (
            "wshardd_flight_triggers_merged",
            "Triggers that extended a pending window.",
            &c.merged,
        ),
        (
            "wshardd_flight_windows_persisted",
            "Trigger windows persisted as episodes.",
            &c.persisted,
        ),
        (
            "wshardd_flight_windows_failed",
            "Trigger windows given up after their retries (pins released, what they held kept).",
            &c.failed,
        ),
        (
            "wshardd_flight_window_retries",
            "Retries of a trigger window's persistence after a failure.",
            &c.retries,
        ),
        (
            "wshardd_flight_windows_cut_short",
            "Trigger windows finalized at their wall-clock deadline, a post-window cut short.",
            &c.cut_short,
        ),
    ] {
        single(
            enc,
            name,
            help,
            &ConstCounter::new(v.load(Ordering::Relaxed)),
        )?;
    }
    single(
        enc,
        "wshardd_flight_windows_pending",
        "Trigger windows not yet persisted.",
        &ConstGauge::new(flight.pending_windows()),
    )?;
    let rings = flight.live_rings();
    let views: Vec<_> = rings
        .iter()
        .map(|r| (r.identity.name(), r.view()))
        .collect();
    family(
        enc,
        "wshardd_flight_ring_bytes",
        "Chunk-file bytes a flight stream's ring holds.",
        views
            .iter()
            .map(|(n, v)| ([("stream", n.clone())], ConstGauge::new(v.bytes))),
    )?;
    family(
        enc,
        "wshardd_flight_ring_seconds",
        "Seconds of t_ns a flight stream's ring holds.",
        views.iter().map(|(n, v)| {
            let ns = v
                .newest_t_ns
                .zip(v.oldest_t_ns)
                .map_or(0, |(a, b)| a.saturating_sub(b));
            (
                [("stream", n.clone())],
                ConstGauge::new(ns as f64 / NS_PER_S),
            )
        }),
    )?;
    family(
        enc,
        "wshardd_flight_ring_oldest_t_ns",
        "t_ns of the oldest timestep a flight stream's ring holds.",
        views.iter().filter_map(|(n, v)| {
            v.oldest_t_ns
                .map(|t| ([("stream", n.clone())], ConstGauge::new(t)))
        }),
    )
}
