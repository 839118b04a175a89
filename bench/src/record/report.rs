//! The `record` results: a human table (cases, baselines, targets, where the time goes),
//! then one JSON line per case.

use std::path::PathBuf;

use super::daemon::{DaemonConfig, Fsync};
use super::peer::{self, PeerRow};
use super::{CaseResult, Target, FSYNC_INTERVAL_MS, RSS_ALLOWANCE};
use crate::cli::RecordArgs;
use crate::json::JsonLine;
use crate::stats::{mib, Stats};

/// What the run was, for the table's header.
#[derive(Debug)]
pub struct Header {
    pub args: RecordArgs,
    pub config: DaemonConfig,
    pub wshardd: PathBuf,
    pub peer: PathBuf,
    pub notes: Vec<String>,
    /// Peer output per workload.
    pub peers: Vec<(String, Vec<PeerRow>)>,
    pub total_s: f64,
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 && a.is_finite() && b.is_finite() {
        a / b
    } else {
        f64::NAN
    }
}

/// Derived ratios of a case against its baselines (NaN where there is no baseline).
#[derive(Clone, Copy, Debug)]
pub struct Ratios {
    pub timesteps_vs_mcap: f64,
    pub output_vs_mcap: f64,
    pub mb_s_vs_plain: f64,
    pub mb_s_vs_mcap: f64,
    pub rss_vs_bound: f64,
    /// shm rows: against the same case over the socket in this run.
    pub timesteps_vs_socket: f64,
    pub cpu_per_gb_vs_socket: f64,
}

pub fn ratios(r: &CaseResult) -> Ratios {
    let mcap = r.base.mcap.as_ref().map(|(_, f)| f);
    Ratios {
        timesteps_vs_mcap: ratio(
            r.timesteps_per_s.median,
            mcap.map_or(f64::NAN, |f| f.timesteps_per_s.median),
        ),
        output_vs_mcap: ratio(
            r.output_bytes as f64,
            mcap.map_or(f64::NAN, |f| f.file_bytes as f64),
        ),
        mb_s_vs_plain: ratio(r.mb_s.median, plain_mb_s(r)),
        mb_s_vs_mcap: ratio(r.mb_s.median, mcap.map_or(f64::NAN, |f| f.mb_s.median)),
        rss_vs_bound: ratio(r.peak_rss as f64, (r.budget + RSS_ALLOWANCE) as f64),
        timesteps_vs_socket: ratio(
            r.timesteps_per_s.median,
            r.base.socket.map_or(f64::NAN, |s| s.0),
        ),
        cpu_per_gb_vs_socket: ratio(r.cpu_s_per_gb(), r.base.socket.map_or(f64::NAN, |s| s.1)),
    }
}

/// The plain-append MB/s a case is compared with: this process's own run right before each
/// repetition when there is one (cameras), else the peer's `plain` mode.
pub fn plain_mb_s(r: &CaseResult) -> f64 {
    match (&r.base.own_plain, &r.base.plain) {
        (Some((s, _)), _) => s.median,
        (None, Some(f)) => f.mb_s.median,
        (None, None) => f64::NAN,
    }
}

/// The targets of a case.
pub fn targets(r: &CaseResult) -> Vec<Target> {
    let x = ratios(r);
    let mut t = Vec::new();
    let at_least = |what: String, value: f64, goal: f64, stretch: Option<f64>| Target {
        what,
        value,
        goal,
        at_least: true,
        stretch,
        unit: "x",
    };
    let mcap = r
        .base
        .mcap
        .as_ref()
        .map_or("MCAP", |(m, _)| m.as_str())
        .to_owned();
    match r.def.name {
        "joints" => {
            t.push(at_least(
                format!("timesteps/s vs {mcap}"),
                x.timesteps_vs_mcap,
                2.0,
                None,
            ));
            t.push(Target {
                what: format!("output bytes vs {mcap}"),
                value: x.output_vs_mcap,
                goal: 0.65,
                at_least: false,
                stretch: None,
                unit: "x",
            });
        }
        "latency" => t.push(Target {
            what: "DURABLE p99 latency".into(),
            value: r.ack.map_or(f64::NAN, |a| a.p99),
            goal: FSYNC_INTERVAL_MS as f64 + 1.0,
            at_least: false,
            stretch: None,
            unit: " ms",
        }),
        "joints-single" if r.def.shm => t.push(at_least(
            "timesteps/s vs socket (single pushes)".into(),
            x.timesteps_vs_socket,
            2.0,
            None,
        )),
        "cameras-chunk" => t.push(at_least(
            "payload MB/s vs plain append".into(),
            x.mb_s_vs_plain,
            if r.def.shm { 0.9 } else { 0.85 },
            None,
        )),
        "cameras-ack" => t.push(at_least(
            "payload MB/s vs plain append".into(),
            x.mb_s_vs_plain,
            0.45,
            Some(0.85),
        )),
        "cameras-lz4" | "cameras-zstd" => t.push(at_least(
            format!("payload MB/s vs {mcap}"),
            x.mb_s_vs_mcap,
            1.5,
            None,
        )),
        _ => {}
    }
    if r.def.shm {
        // Target: lower than over the socket.
        t.push(Target {
            what: "daemon CPU s/GB vs socket".into(),
            value: x.cpu_per_gb_vs_socket,
            goal: 1.0,
            at_least: false,
            stretch: None,
            unit: "x",
        });
    }
    t.push(Target {
        what: format!(
            "daemon peak RSS vs chunk budget + {} MiB",
            RSS_ALLOWANCE >> 20
        ),
        value: mib(r.peak_rss),
        goal: mib(r.budget + RSS_ALLOWANCE),
        at_least: false,
        stretch: None,
        unit: " MiB",
    });
    // No baseline (e.g. `--no-peer`): no target.
    t.retain(|x| x.value.is_finite());
    t
}

fn verdict(t: &Target) -> String {
    let base = if t.met() { "met" } else { "NOT met" };
    match t.stretch_met() {
        Some(true) => format!("{base}, stretch met"),
        Some(false) => format!("{base}, stretch NOT met"),
        None => base.to_owned(),
    }
}

fn show_target(t: &Target) -> String {
    let op = if t.at_least { ">=" } else { "<=" };
    let stretch = t
        .stretch
        .map(|s| format!(" (stretch {op} {s:.2}{})", t.unit))
        .unwrap_or_default();
    format!(
        "{:.2}{} (target {op} {:.2}{}{stretch}): {}",
        t.value,
        t.unit,
        t.goal,
        t.unit,
        verdict(t)
    )
}

fn rate(s: &Stats, scale: f64, decimals: usize) -> String {
    let m = s.median / scale;
    if s.n <= 1 {
        format!("{m:.decimals$}")
    } else {
        format!(
            "{m:.decimals$} [{:.decimals$}-{:.decimals$}]",
            s.min / scale,
            s.max / scale
        )
    }
}

fn header_lines(h: &Header) -> Vec<String> {
    let c = &h.config;
    let mut out = vec![
        format!(
            "wshard-bench record{}: {} (peer: {})",
            if h.args.quick { " --quick" } else { "" },
            h.wshardd.display(),
            h.peer.display()
        ),
        format!(
            "daemon config per case: rotation.max_bytes {} MiB (the chunk budget), rotation.max_timesteps {}, fsync {}, queues.max_pending_frames {}, compression_workers {}; a fresh daemon per repetition (VmHWM per case)",
            c.chunk_bytes >> 20,
            c.chunk_steps,
            Fsync::Interval(FSYNC_INTERVAL_MS).name(),
            c.queue_frames,
            c.compression_workers
        ),
        "timed: OPEN .. answer to CLOSE (last chunk + manifest durable); payload = record bytes (92 B joints, 1,843,236 B cameras); MB = 1e6 B, MiB = 2^20 B".to_owned(),
    ];
    out.extend(h.notes.iter().cloned());
    out
}

fn case_table(results: &[CaseResult]) -> Vec<String> {
    let mut out = vec![format!(
        "{:<17} {:<5} {:<6} {:>9} {:>4} {:>26} {:>22} {:>9} {:>7} {:>6} {:>13} {:>9}",
        "case",
        "dur",
        "codec",
        "steps",
        "reps",
        "timesteps/s [min-max]",
        "payload MB/s",
        "out MiB",
        "out/pay",
        "chunks",
        "ack p50/p99ms",
        "RSS MiB"
    )];
    for r in results {
        let ack = r
            .ack
            .map_or_else(|| "-".to_owned(), |a| format!("{:.2}/{:.2}", a.p50, a.p99));
        out.push(format!(
            "{:<17} {:<5} {:<6} {:>9} {:>4} {:>26} {:>22} {:>9.1} {:>7.3} {:>6} {:>13} {:>9.1}",
            r.def.label(),
            r.def.durability_name(),
            r.def.codec_name,
            r.steps,
            r.reps,
            rate(&r.timesteps_per_s, 1.0, 0),
            rate(&r.mb_s, 1.0, 1),
            mib(r.output_bytes),
            r.output_bytes as f64 / r.payload_bytes.max(1) as f64,
            r.chunks,
            ack,
            mib(r.peak_rss),
        ));
    }
    out
}

fn peer_table(h: &Header, results: &[CaseResult]) -> Vec<String> {
    let mut out = vec![format!(
        "{:<8} {:<10} {:>4} {:>26} {:>22} {:>9} {:>7} {:>8}",
        "baseline",
        "mode",
        "reps",
        "timesteps/s [min-max]",
        "payload MB/s",
        "out MiB",
        "out/pay",
        "fsync s"
    )];
    for (w, rows) in &h.peers {
        let mut modes: Vec<&str> = rows.iter().map(|r| r.mode.as_str()).collect();
        modes.dedup();
        modes.sort_unstable();
        modes.dedup();
        for m in modes {
            if let Some(f) = peer::figures(rows, m) {
                out.push(format!(
                    "{:<8} {:<10} {:>4} {:>26} {:>22} {:>9.1} {:>7.3} {:>8.3}",
                    w,
                    m,
                    f.mb_s.n,
                    rate(&f.timesteps_per_s, 1.0, 0),
                    rate(&f.mb_s, 1.0, 1),
                    mib(f.file_bytes),
                    f.file_bytes as f64 / f.payload_bytes.max(1) as f64,
                    f.fsync_s
                ));
            }
        }
    }
    for r in results {
        if let Some((s, fsync)) = &r.base.own_plain {
            out.push(format!(
                "{:<8} {:<10} {:>4} {:>26} {:>22} {:>9.1} {:>7.3} {:>8.3}  (this process, right before {})",
                r.def.workload,
                "plain",
                s.n,
                rate(&Stats { median: s.median * 1e6 / r.def_record_bytes() as f64, min: s.min * 1e6 / r.def_record_bytes() as f64, max: s.max * 1e6 / r.def_record_bytes() as f64, n: s.n }, 1.0, 0),
                rate(s, 1.0, 1),
                mib(r.payload_bytes),
                1.0,
                fsync,
                r.def.label()
            ));
        }
    }
    out
}

fn usage_table(results: &[CaseResult]) -> Vec<String> {
    let mut out = vec![
        "where the time goes (median repetition): daemon CPU = utime+stime of wshardd during the timed region, % of wall (2 cores = 200 %), and per GB (1e9 B) of payload; by thread: conn = socket read + frame checks, writer = journal + columns, publish = compression + chunk write + fsync + SHA-256; client = pushing thread + reader thread; disk = bytes wshardd sent to storage (/proc/pid/io); fsync/fdatasync/write = system calls (perf stat)".to_owned(),
        format!(
            "{:<17} {:>8} {:>16} {:>9} {:>6} {:>6} {:>7} {:>7} {:>10} {:>8} {:>10} {:>9} {:>9}",
            "case", "wall s", "daemon CPU s (%)", "CPU s/GB", "conn", "writer", "publish", "client", "disk MB", "disk/pay", "fsync/fdat", "write()", "close s"
        ),
    ];
    for r in results {
        let u = &r.usage;
        let role = |k: &str| u.cpu_by_role.get(k).copied().unwrap_or(0.0);
        let sys = u.syscalls.map_or_else(
            || ("-".to_owned(), "-".to_owned()),
            |s| (format!("{}/{}", s.fsync, s.fdatasync), s.write.to_string()),
        );
        let wall = r.wall_s.median;
        out.push(format!(
            "{:<17} {:>8.3} {:>16} {:>9.2} {:>6.2} {:>6.2} {:>7.2} {:>7.2} {:>10.1} {:>8.2} {:>10} {:>9} {:>9.3}",
            r.def.label(),
            wall,
            format!("{:.2} ({:.0}%)", u.cpu_s, 100.0 * u.cpu_s / wall.max(1e-9)),
            r.cpu_s_per_gb(),
            role("connection"),
            role("writer"),
            role("publisher+compress"),
            r.client_cpu_s,
            u.io.write_bytes as f64 / 1e6,
            u.io.write_bytes as f64 / r.payload_bytes.max(1) as f64,
            sys.0,
            sys.1,
            r.close_s,
        ));
    }
    out
}

fn target_lines(results: &[CaseResult]) -> Vec<String> {
    let mut out = Vec::new();
    for r in results {
        for t in &r.targets {
            out.push(format!(
                "{:<17} {:<46} {}",
                r.def.label(),
                t.what,
                show_target(t)
            ));
        }
    }
    let rss = |n: &str| {
        results
            .iter()
            .find(|r| r.def.name == n && !r.def.shm)
            .map(|r| (r.peak_rss, r.steps))
    };
    if let (Some((a, sa)), Some((b, sb))) = (rss("joints"), rss("long")) {
        out.push(format!(
            "{:<17} {:<46} {:.1} MiB for {} steps vs {:.1} MiB for {} steps: {:.2}x for {:.0}x the episode length",
            "long",
            "peak RSS vs joints",
            mib(b),
            sb,
            mib(a),
            sa,
            ratio(b as f64, a as f64),
            ratio(sb as f64, sa as f64)
        ));
    }
    out
}

/// What the daemon holds by design at its peak (docs/DURABILITY.md, "Memory"): the open
/// chunk, the sealed chunk being published with its compressed copy, and the queue.
fn rss_model(r: &CaseResult, c: &DaemonConfig) -> String {
    let rec = r.def_record_bytes();
    // The daemon gives each chunk half the budget (the open chunk and the one being written).
    let steps_per_chunk = c
        .chunk_steps
        .min((c.chunk_bytes / 2 / rec).max(1))
        .min(r.steps);
    let chunk = steps_per_chunk * rec;
    let compressed = if r.def.codec_name == "none" {
        0
    } else {
        r.output_bytes / r.chunks.max(1) as u64
    };
    // Wire bytes of one frame: a camera step is one frame; joints batch 4096 steps.
    let frame = if r.def.workload == "cameras" {
        rec + 21
    } else if r.def.latency {
        105
    } else {
        4096 * 105
    };
    let queue = c.queue_frames * frame;
    let model = 2 * chunk + compressed + queue;
    format!(
        "rss {} (missed): peak {:.1} MiB vs bound {:.1} MiB; by design the daemon holds the open chunk ({:.1} MiB: {steps_per_chunk} steps) + the sealed chunk being published ({:.1} MiB) + its compressed copy ({:.1} MiB) + the queue ({} frames x {:.2} MiB = {:.1} MiB) = {:.1} MiB, plus the 4 MiB direct-write staging buffer, other buffers and the runtime",
        r.def.label(),
        mib(r.peak_rss),
        mib(r.budget + RSS_ALLOWANCE),
        mib(chunk),
        mib(chunk),
        mib(compressed),
        c.queue_frames,
        mib(frame),
        mib(queue),
        mib(model),
    )
}

fn profile_lines(results: &[CaseResult], config: &DaemonConfig) -> Vec<String> {
    let mut out = Vec::new();
    for r in results.iter().filter(|r| {
        r.targets
            .iter()
            .any(|t| !t.met() && t.what.starts_with("daemon peak RSS"))
    }) {
        out.push(rss_model(r, config));
    }
    for r in results.iter().filter(|r| {
        r.targets
            .iter()
            .any(|t| !t.met() && !t.what.starts_with("daemon peak RSS"))
    }) {
        let u = &r.usage;
        let wall = r.wall_s.median;
        let mut roles: Vec<String> = u
            .cpu_by_role
            .iter()
            .map(|(k, v)| format!("{k} {v:.2} s"))
            .collect();
        if roles.is_empty() {
            roles.push("no thread samples".into());
        }
        let sys = u.syscalls.map_or_else(
            || "system calls: perf not available".to_owned(),
            |s| {
                format!(
                    "fsync {} + fdatasync {}, write() {}",
                    s.fsync, s.fdatasync, s.write
                )
            },
        );
        let mut line = format!(
            "profile {} (missed): wall {wall:.3} s, of it CLOSE {:.3} s; daemon CPU {:.2} s = {:.0}% of wall ({}); client CPU {:.2} s = {:.0}%; daemon sent {:.1} MB to storage = {:.2}x payload; {sys}",
            r.def.label(),
            r.close_s,
            u.cpu_s,
            100.0 * u.cpu_s / wall.max(1e-9),
            roles.join(", "),
            r.client_cpu_s,
            100.0 * r.client_cpu_s / wall.max(1e-9),
            u.io.write_bytes as f64 / 1e6,
            u.io.write_bytes as f64 / r.payload_bytes.max(1) as f64,
        );
        if r.targets
            .iter()
            .any(|t| !t.met() && t.what.starts_with("output bytes"))
        {
            let mut parts: Vec<String> = r
                .blocks
                .iter()
                .filter(|b| !b.name.starts_with("meta/"))
                .map(|b| {
                    format!(
                        "{} {:.2} B/step stored {} ({:.2}x of {:.2} B/step)",
                        b.name,
                        b.disk as f64 / r.steps.max(1) as f64,
                        b.stored,
                        b.disk as f64 / b.orig.max(1) as f64,
                        b.orig as f64 / r.steps.max(1) as f64
                    )
                })
                .collect();
            let blocks: u64 = r.blocks.iter().map(|b| b.disk).sum();
            parts.push(format!(
                "meta blocks + headers + indexes + padding + manifest {:.2} B/step",
                r.output_bytes.saturating_sub(blocks) as f64 / r.steps.max(1) as f64
                    + r.blocks
                        .iter()
                        .filter(|b| b.name.starts_with("meta/"))
                        .map(|b| b.disk as f64)
                        .sum::<f64>()
                        / r.steps.max(1) as f64
            ));
            line.push_str(&format!(
                "; output {:.2} B/step vs payload {} B/step: {}",
                r.output_bytes as f64 / r.steps.max(1) as f64,
                r.def_record_bytes(),
                parts.join(", ")
            ));
        }
        if let Some(a) = r.ack {
            line.push_str(&format!(
                "; DURABLE latency p50 {:.2} / p90 {:.2} / p99 {:.2} / max {:.2} ms over {} steps, {} DURABLE advances seen, {} pushes more than 1 ms late, observed by polling every {:.2} ms",
                a.p50, a.p90, a.p99, a.max, a.n, a.advances, a.late_pushes, a.poll_ms
            ));
        }
        if let Some(n) = r.never {
            line.push_str(&format!(
                "; with fsync.policy = never: {:.3} s ({:.0} timesteps/s, {:.1} MB/s, daemon CPU {:.2} s) = {:.2}x the interval run's speed",
                n.wall_s,
                n.timesteps_per_s,
                n.mb_s,
                n.cpu_s,
                ratio(wall, n.wall_s)
            ));
        }
        out.push(line);
    }
    out
}

fn json_line(r: &CaseResult) -> String {
    let x = ratios(r);
    let mcap = r.base.mcap.as_ref();
    let u = &r.usage;
    let role = |k: &str| u.cpu_by_role.get(k).copied().unwrap_or(f64::NAN);
    let target = |name: &str| {
        r.targets
            .iter()
            .find(|t| t.what.starts_with(name))
            .map(Target::met)
    };
    let mut j = JsonLine::new()
        .str("bench", "record")
        .str("case", r.def.name)
        .str("workload", r.def.workload)
        .str("transport", r.def.transport_name())
        .str("codec", r.def.codec_name)
        .str("durability", r.def.durability_name())
        .str("fsync", &Fsync::Interval(FSYNC_INTERVAL_MS).name())
        .int("steps", r.steps)
        .int("reps", r.reps as u64)
        .num("wall_s", r.wall_s.median)
        .num("close_s", r.close_s)
        .num("timesteps_per_s", r.timesteps_per_s.median)
        .num("timesteps_per_s_min", r.timesteps_per_s.min)
        .num("timesteps_per_s_max", r.timesteps_per_s.max)
        .int("payload_bytes", r.payload_bytes)
        .num("payload_mb_s", r.mb_s.median)
        .int("output_bytes", r.output_bytes)
        .int("chunks", r.chunks as u64)
        .opt_num("ack_p50_ms", r.ack.map(|a| a.p50))
        .opt_num("ack_p90_ms", r.ack.map(|a| a.p90))
        .opt_num("ack_p99_ms", r.ack.map(|a| a.p99))
        .opt_num("ack_max_ms", r.ack.map(|a| a.max))
        .opt_num("ack_poll_ms", r.ack.map(|a| a.poll_ms))
        .opt_num("ack_advances", r.ack.map(|a| a.advances as f64))
        .opt_num("ack_late_pushes", r.ack.map(|a| a.late_pushes as f64))
        .num("peak_rss_mb", mib(r.peak_rss))
        .num("chunk_budget_mb", mib(r.budget))
        .num("rss_bound_mb", mib(r.budget + RSS_ALLOWANCE))
        .num("daemon_cpu_s", u.cpu_s)
        .num("daemon_cpu_connection_s", role("connection"))
        .num("daemon_cpu_writer_s", role("writer"))
        .num("daemon_cpu_publisher_s", role("publisher+compress"))
        .num("daemon_cpu_s_per_gb", r.cpu_s_per_gb())
        .num("client_cpu_s", r.client_cpu_s)
        .int("daemon_write_bytes", u.io.write_bytes)
        .opt_num("fsyncs", u.syscalls.map(|s| s.fsync as f64))
        .opt_num("fdatasyncs", u.syscalls.map(|s| s.fdatasync as f64))
        .opt_num("write_syscalls", u.syscalls.map(|s| s.write as f64))
        .num("baseline_plain_mb_s", plain_mb_s(r))
        .opt_num("baseline_plain_fsync_s", r.base.own_plain.map(|p| p.1))
        .opt_num(
            "baseline_peer_plain_mb_s",
            r.base.plain.map(|f| f.mb_s.median),
        )
        .opt_num(
            "baseline_plain_buf_mb_s",
            r.base.plain_buf.map(|f| f.mb_s.median),
        )
        .str("baseline_mcap_mode", mcap.map_or("", |(m, _)| m.as_str()))
        .opt_num("baseline_mcap_mb_s", mcap.map(|(_, f)| f.mb_s.median))
        .opt_num(
            "baseline_mcap_timesteps_per_s",
            mcap.map(|(_, f)| f.timesteps_per_s.median),
        )
        .opt_num(
            "baseline_mcap_output_bytes",
            mcap.map(|(_, f)| f.file_bytes as f64),
        )
        .num("ratio_timesteps_vs_mcap", x.timesteps_vs_mcap)
        .num("ratio_output_vs_mcap", x.output_vs_mcap)
        .num("ratio_mb_s_vs_plain", x.mb_s_vs_plain)
        .num("ratio_mb_s_vs_mcap", x.mb_s_vs_mcap)
        .num("ratio_rss_vs_bound", x.rss_vs_bound)
        .opt_num(
            "baseline_socket_timesteps_per_s",
            r.base.socket.map(|s| s.0),
        )
        .opt_num("baseline_socket_cpu_s_per_gb", r.base.socket.map(|s| s.1))
        .num("ratio_timesteps_vs_socket", x.timesteps_vs_socket)
        .num("ratio_cpu_per_gb_vs_socket", x.cpu_per_gb_vs_socket)
        .opt_num("never_fsync_wall_s", r.never.map(|n| n.wall_s))
        .opt_num(
            "never_fsync_timesteps_per_s",
            r.never.map(|n| n.timesteps_per_s),
        );
    for (key, name) in [
        ("target_throughput_met", "timesteps/s"),
        ("target_output_met", "output bytes"),
        ("target_latency_met", "DURABLE"),
        ("target_rss_met", "daemon peak RSS"),
        ("target_cpu_per_gb_met", "daemon CPU s/GB"),
    ] {
        if let Some(m) = target(name) {
            j = j.bool(key, m);
        }
    }
    if let Some(m) = target("payload MB/s") {
        j = j.bool("target_throughput_met", m);
    }
    j.bool("targets_met", !r.missed()).render()
}

/// Print the table, then one JSON line per case.
pub fn print(h: &Header, results: &[CaseResult]) {
    let mut lines = header_lines(h);
    lines.push(String::new());
    lines.extend(case_table(results));
    lines.push(String::new());
    lines.push("baselines, same run (peer-mcap: MCAP in-process via foxglove's mcap crate; plain = one write() per timestep + fsync, plain-buf = through a 1 MiB buffer):".to_owned());
    lines.extend(peer_table(h, results));
    lines.push(String::new());
    lines.push("targets:".to_owned());
    lines.extend(target_lines(results));
    let flight = super::flight_report::lines(results);
    if !flight.is_empty() {
        lines.push(String::new());
        lines.extend(flight);
    }
    lines.push(String::new());
    lines.extend(usage_table(results));
    let profiles = profile_lines(results, &h.config);
    if !profiles.is_empty() {
        lines.push(String::new());
        lines.extend(profiles);
    }
    lines.push(String::new());
    lines.push(format!("total run time {:.0} s", h.total_s));
    for l in lines {
        println!("{l}");
    }
    println!();
    for r in results {
        println!("{}", json_line(r));
    }
    for l in super::flight_report::json_lines(results) {
        println!("{l}");
    }
}
