//! The flight rows against their normal rows of the same run (`--cases flight`): daemon
//! CPU s per GB (goal <= 1.05x), peak RSS (goal <= normal + 16 MiB) and the bytes left
//! on disk against the ring's bound plus one chunk (the stream's).

use teleop_workload as tw;

use super::{CaseResult, FLIGHT_RING_SECONDS};
use crate::json::JsonLine;
use crate::stats::mib;

/// Daemon CPU s per GB in flight mode over normal recording, at most.
pub const CPU_PER_GB_GOAL: f64 = 1.05;
/// Peak RSS in flight mode above normal recording, at most (MiB).
pub const RSS_ABOVE_NORMAL_GOAL_MIB: f64 = 16.0;

/// The normal case a flight case is compared with.
fn normal_of(flight: &str) -> Option<&'static str> {
    match flight {
        "flight-joints" => Some("joints"),
        "flight-cameras" => Some("cameras-zstd"),
        _ => None,
    }
}

/// The workload's period: the ring's seconds are seconds of `t_ns`.
fn period_ns(r: &CaseResult) -> i64 {
    if r.def.workload == "joints" {
        tw::JOINTS_PERIOD_NS
    } else {
        tw::CAMERAS_PERIOD_NS
    }
}

/// One flight row against its normal row.
#[derive(Clone, Debug)]
pub struct FlightCompare {
    pub case: String,
    pub normal: &'static str,
    pub cpu_per_gb_ratio: f64,
    pub rss_above_normal_mib: f64,
    /// Bytes on disk at the end of the flight run.
    pub disk_bytes: u64,
    /// `FLIGHT_RING_SECONDS` of the workload's output (the normal run's bytes per step x
    /// (steps per second x seconds + 1): a span of that many seconds holds one step more)
    /// plus one chunk (the normal run's mean chunk file).
    pub disk_bound: u64,
}

impl FlightCompare {
    fn met(&self) -> bool {
        self.cpu_per_gb_ratio <= CPU_PER_GB_GOAL
            && self.rss_above_normal_mib <= RSS_ABOVE_NORMAL_GOAL_MIB
            && self.disk_bytes <= self.disk_bound
    }
}

/// Each flight row of `results` with its normal row (same transport), when both ran.
pub fn compare(results: &[CaseResult]) -> Vec<FlightCompare> {
    let mut out = Vec::new();
    for f in results.iter().filter(|r| r.def.flight) {
        let Some(normal) = normal_of(f.def.name) else {
            continue;
        };
        let Some(n) = results
            .iter()
            .find(|r| r.def.name == normal && r.def.shm == f.def.shm)
        else {
            continue;
        };
        let per_step = n.output_bytes as f64 / n.steps.max(1) as f64;
        let steps_per_s = 1e9 / period_ns(n) as f64;
        // `FLIGHT_RING_SECONDS` of `t_ns` span that many seconds' steps plus one.
        let ring = per_step * (steps_per_s * FLIGHT_RING_SECONDS as f64 + 1.0);
        let chunk = n.output_bytes as f64 / n.chunks.max(1) as f64;
        out.push(FlightCompare {
            case: f.def.label(),
            normal,
            cpu_per_gb_ratio: f.cpu_s_per_gb() / n.cpu_s_per_gb(),
            rss_above_normal_mib: mib(f.peak_rss) - mib(n.peak_rss),
            disk_bytes: f.output_bytes,
            disk_bound: (ring + chunk) as u64,
        });
    }
    out
}

/// The table's lines (none without a flight row and its normal row).
pub fn lines(results: &[CaseResult]) -> Vec<String> {
    let rows = compare(results);
    if rows.is_empty() {
        return Vec::new();
    }
    let mut out = vec![
        format!(
            "flight vs normal (same run): CPU s/GB ratio (goal <= {CPU_PER_GB_GOAL}x), peak RSS above normal (goal <= {RSS_ABOVE_NORMAL_GOAL_MIB} MiB), disk left vs the {FLIGHT_RING_SECONDS} s ring bound + one chunk:"
        ),
        format!(
            "{:<17} {:<13} {:>12} {:>14} {:>10} {:>10} {:>6}",
            "case", "normal", "CPU s/GB x", "RSS +MiB", "disk MiB", "bound MiB", "met"
        ),
    ];
    for c in &rows {
        out.push(format!(
            "{:<17} {:<13} {:>12.3} {:>14.1} {:>10.1} {:>10.1} {:>6}",
            c.case,
            c.normal,
            c.cpu_per_gb_ratio,
            c.rss_above_normal_mib,
            mib(c.disk_bytes),
            mib(c.disk_bound),
            if c.met() { "yes" } else { "NO" }
        ));
    }
    out
}

/// One JSON line per flight row.
pub fn json_lines(results: &[CaseResult]) -> Vec<String> {
    compare(results)
        .iter()
        .map(|c| {
            JsonLine::new()
                .str("bench", "record")
                .str("case", "flight-vs-normal")
                .str("flight", &c.case)
                .str("normal", c.normal)
                .num("ratio_cpu_per_gb", c.cpu_per_gb_ratio)
                .num("rss_above_normal_mib", c.rss_above_normal_mib)
                .int("disk_bytes", c.disk_bytes)
                .int("disk_bound_bytes", c.disk_bound)
                .bool("targets_met", c.met())
                .render()
        })
        .collect()
}
