//! The `multirate` table, its targets and one JSON line per case.

use super::args::MultirateArgs;
use super::read::ReadCase;
use super::streams::Role;
use super::{CaseResult, Layout};
use crate::json::JsonLine;
use crate::record::FSYNC_INTERVAL_MS;
use crate::stats::Stats;

fn median_of(
    results: &[CaseResult],
    layout: Layout,
    paced: bool,
    f: impl Fn(&CaseResult) -> f64,
) -> f64 {
    let v: Vec<f64> = results
        .iter()
        .filter(|r| r.layout == layout && r.paced == paced)
        .map(f)
        .collect();
    Stats::of(&v).median
}

fn joints_p99(r: &CaseResult) -> f64 {
    r.producer(Role::Joints).map_or(f64::NAN, |p| p.p99_ms)
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "MISSED"
    }
}

/// Print the table, the targets, then the JSON lines.
pub fn print(a: &MultirateArgs, results: &[CaseResult], reads: &[ReadCase]) {
    println!(
        "multirate: {} s of data per case: joints 1 kHz f32[7]x3 (socket, ack), imu 200 Hz f32[10] + 1 event/s \
         (socket, ack), cameras 2x u8[480,640,3] at 30 Hz (shared memory, chunk); 3 producer processes; \
         one wshardd, fsync interval {FSYNC_INTERVAL_MS} ms; ratios from this run",
        a.seconds
    );
    println!();
    println!(
        "{:<10} {:<24} {:>4} {:>8} {:>8} {:>14} {:>10} {:>22} {:>8} {:>7}",
        "phase",
        "layout",
        "rep",
        "wall s",
        "MB/s",
        "output bytes",
        "CPU s/GB",
        "joints DURABLE ms",
        "dropped",
        "events"
    );
    for r in results {
        let j = r.producer(Role::Joints);
        let lat = match (r.paced, j) {
            (true, Some(p)) => format!("{:.2}/{:.2}/{:.2}", p.p50_ms, p.p99_ms, p.max_ms),
            _ => "-".into(),
        };
        let events: u64 = r.producers.iter().map(|(_, p)| p.events).sum();
        println!(
            "{:<10} {:<24} {:>4} {:>8.2} {:>8.1} {:>14} {:>10.2} {:>22} {:>8} {:>7}",
            if r.paced { "paced" } else { "throughput" },
            r.layout.name(),
            r.rep + 1,
            r.wall.as_secs_f64(),
            r.mb_s(),
            r.output_bytes,
            r.daemon_cpu_s / (r.payload_bytes as f64 / 1e9),
            lat,
            r.dropped(),
            events
        );
    }
    println!();
    println!("targets (p50/p99/max of push-to-DURABLE; medians over reps):");
    let one = median_of(results, Layout::OneEpisode, false, CaseResult::mb_s);
    let sep = median_of(results, Layout::Separate, false, CaseResult::mb_s);
    let ratio = one / sep;
    println!(
        "  throughput, one episode vs separate episodes >= 0.95x: {ratio:.3}x ({one:.1} vs {sep:.1} MB/s)  {}",
        verdict(ratio >= 0.95)
    );
    let ob = median_of(results, Layout::OneEpisode, false, |r| {
        r.output_bytes as f64
    });
    let sb = median_of(results, Layout::Separate, false, |r| r.output_bytes as f64);
    let diff = (ob - sb) / sb * 100.0;
    println!(
        "  output bytes within 1 %: {diff:+.4} % ({ob:.0} vs {sb:.0})  {}",
        verdict(diff.abs() <= 1.0)
    );
    if a.paced {
        let p1 = median_of(results, Layout::OneEpisode, true, joints_p99);
        let ps = median_of(results, Layout::Separate, true, joints_p99);
        let limit = FSYNC_INTERVAL_MS as f64 + 1.0;
        println!(
            "  1 kHz stream DURABLE p99 (paced) <= interval + 1 ms = {limit} ms: one episode {p1:.2} ms, separate {ps:.2} ms  {}",
            verdict(p1 <= limit)
        );
    }
    let dropped: u64 = results.iter().map(CaseResult::dropped).sum();
    println!(
        "  dropped timesteps, every case == 0: {dropped}  {}",
        verdict(dropped == 0)
    );
    let find = |name: &str| reads.iter().find(|c| c.name.starts_with(name));
    if let (Some(raw), Some(al)) = (find("rust raw"), find("rust aligned")) {
        let r = raw.median_s() / al.median_s();
        println!(
            "  aligned read at the camera clock vs raw streams >= 0.8x: {r:.3}x ({:.3} s vs {:.3} s)  {}",
            al.median_s(),
            raw.median_s(),
            verdict(r >= 0.8)
        );
    }
    match (find("python wshard_reader"), find("python reference")) {
        (Some(ours), Some(reference)) => {
            let r = reference.median_s() / ours.median_s();
            println!(
                "  Python aligned reader vs reference Python loading the chunks >= 2x: {r:.2}x ({:.3} s vs {:.3} s)  {}",
                ours.median_s(),
                reference.median_s(),
                verdict(r >= 2.0)
            );
        }
        _ => println!("  Python aligned reader vs reference Python: not run (give --reference-py)"),
    }
    println!();
    println!(
        "{:<36} {:>28} {:>14}",
        "read", "seconds median [min-max]", "bytes out"
    );
    for c in reads {
        println!(
            "{:<36} {:>28} {:>14}",
            c.name,
            Stats::of(&c.seconds).show(3),
            c.bytes
        );
    }
    println!();
    for r in results {
        let mut line = JsonLine::new()
            .str("bench", "multirate")
            .str("phase", if r.paced { "paced" } else { "throughput" })
            .str("layout", r.layout.key())
            .int("rep", r.rep as u64 + 1)
            .num("wall_s", r.wall.as_secs_f64())
            .num("mb_s", r.mb_s())
            .int("payload_bytes", r.payload_bytes)
            .int("output_bytes", r.output_bytes)
            .num("daemon_cpu_s", r.daemon_cpu_s)
            .int("dropped", r.dropped());
        if let Some(j) = r.producer(Role::Joints) {
            line = line
                .num("joints_p50_ms", j.p50_ms)
                .num("joints_p99_ms", j.p99_ms);
        }
        println!("{}", line.render());
    }
    for c in reads {
        println!(
            "{}",
            JsonLine::new()
                .str("bench", "multirate-read")
                .str("case", c.name)
                .num("median_s", c.median_s())
                .int("bytes", c.bytes)
                .render()
        );
    }
}
