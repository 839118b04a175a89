//! `record`: the recorder daemon end to end. The workloads go through the real Unix socket
//! (`wshard-client`) into durable chunks written by the real `wshardd` binary, started per
//! repetition with a generated config in a scratch directory; in the same run the MCAP peer
//! program records the same workloads in-process (MCAP zstd / lz4) and as plain appends.
//!
//! - [`data`]: the timesteps, generated before any timer starts;
//! - [`daemon`]: starting `wshardd`, reading its peak RSS, CPU time and I/O from `/proc`;
//! - [`drive`]: the client loops (throughput, and paced 1 kHz pushes for DURABLE latency);
//! - [`peer`]: running the MCAP peer and parsing its JSON lines;
//! - [`verify`]: checking the manifest (always) and every byte (`--verify`);
//! - [`report`]: the table, the targets and the JSON lines; [`flight_report`]: the flight
//!   rows against their normal rows;
//! - [`flight_trigger`]: the trigger-to-durable time of a flight window.

pub(crate) mod daemon;
pub(crate) mod data;
pub(crate) mod drive;
mod flight_report;
mod flight_trigger;
mod peer;
mod plain;
mod report;
mod verify;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use teleop_workload as tw;
use wshard_client::{ClientOptions, CodecChoice, Durability, FlightMode, RingPolicy, Transport};

use crate::cli::RecordArgs;
use crate::error::{io_ctx, Result};
use crate::scratch::ScratchDir;
use crate::stats::{mb_per_s, Stats};
use daemon::{Daemon, DaemonConfig, DaemonUsage, Fsync};
use data::{CameraWindow, JointsData};
use drive::Source;
use peer::PeerFigures;

/// The journal fsync interval of every case (the daemon's default).
pub const FSYNC_INTERVAL_MS: u64 = 10;
/// Allowance on top of the chunk budget for the daemon's peak RSS.
pub const RSS_ALLOWANCE: u64 = 64 << 20;

/// What one case records and how.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CaseDef {
    pub name: &'static str,
    pub workload: &'static str,
    pub codec: CodecChoice,
    pub codec_name: &'static str,
    pub durability: Durability,
    /// Paced single-step pushes measuring push-to-DURABLE latency.
    pub latency: bool,
    /// Every push sent at once (one frame, or one shm slot, per timestep), as fast as it goes.
    pub single: bool,
    /// Over the client's shared-memory ring instead of the socket.
    pub shm: bool,
    /// Opened in flight mode: the daemon keeps a ring of `FLIGHT_RING_SECONDS` (`flight-*`).
    pub flight: bool,
}

/// The ring of the `flight-*` cases, in seconds of `t_ns`.
pub const FLIGHT_RING_SECONDS: u64 = 10;
/// The trigger window `flight-cameras` times (pre, post seconds).
pub const FLIGHT_WINDOW_S: (f64, f64) = (30.0, 10.0);
/// Its `--quick` size.
pub const FLIGHT_QUICK_WINDOW_S: (f64, f64) = (3.0, 1.0);

impl CaseDef {
    pub fn of(name: &'static str) -> Self {
        let zstd3 = CodecChoice::Zstd { level: 3 };
        let (workload, codec, codec_name, durability, latency) = match name {
            "joints" | "joints-single" | "long" | "flight-joints" => {
                ("joints", zstd3, "zstd-3", Durability::Ack, false)
            }
            "latency" => ("joints", zstd3, "zstd-3", Durability::Ack, true),
            "cameras-chunk" => (
                "cameras",
                CodecChoice::None,
                "none",
                Durability::Chunk,
                false,
            ),
            "cameras-ack" => ("cameras", CodecChoice::None, "none", Durability::Ack, false),
            "cameras-lz4" => ("cameras", CodecChoice::Lz4, "lz4", Durability::Chunk, false),
            _ => ("cameras", zstd3, "zstd-3", Durability::Chunk, false),
        };
        Self {
            name,
            workload,
            codec,
            codec_name,
            durability,
            latency,
            single: name == "joints-single",
            shm: false,
            flight: name.starts_with("flight-"),
        }
    }

    /// The same case over `transport` (`socket` or `shm`).
    pub fn over(self, transport: &str) -> Self {
        Self {
            shm: transport == "shm",
            ..self
        }
    }

    /// The case name, with `/shm` over the shared-memory ring.
    pub fn label(&self) -> String {
        if self.shm {
            format!("{}/shm", self.name)
        } else {
            self.name.to_owned()
        }
    }

    pub fn transport_name(&self) -> &'static str {
        if self.shm {
            "shm"
        } else {
            "socket"
        }
    }

    /// How the client sends: the socket, or the shm ring. Single-step pushes get a ring of
    /// 4096 one-step slots (256 B: 64 B header room + a 105 B joints record); the others
    /// the client's default geometry (64 slots of `max(1, 256 KiB / record)` records).
    fn transport(&self) -> Transport {
        match (self.shm, self.single || self.latency) {
            (false, _) => Transport::Socket,
            (true, true) if self.workload == "joints" => Transport::Shm {
                slot_bytes: 256,
                slots: 4096,
                policy: RingPolicy::Block,
            },
            (true, _) => Transport::shm(),
        }
    }

    pub fn durability_name(&self) -> &'static str {
        self.durability.as_str()
    }

    fn record_bytes(&self) -> u64 {
        if self.workload == "joints" {
            tw::JOINTS_RECORD_BYTES as u64
        } else {
            tw::CAMERAS_RECORD_BYTES as u64
        }
    }
}

/// Push-to-DURABLE latency summary.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AckLatency {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub n: u64,
    pub advances: u64,
    pub late_pushes: u64,
    pub poll_ms: f64,
}

/// The baselines a case is compared with, from the same run.
#[derive(Clone, Debug, Default)]
pub struct Baselines {
    /// Plain append of the same bytes by this process right before each repetition
    /// (cameras): payload MB/s and the fsync's share in seconds.
    pub own_plain: Option<(Stats, f64)>,
    pub plain: Option<PeerFigures>,
    pub plain_buf: Option<PeerFigures>,
    /// The MCAP mode with the case's codec.
    pub mcap: Option<(String, PeerFigures)>,
    /// The same case over the socket in this run (shm rows): (timesteps/s, daemon CPU
    /// seconds per GB of payload).
    pub socket: Option<(f64, f64)>,
}

/// A target: `value` compared with `goal` (at least, or at most).
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    pub what: String,
    pub value: f64,
    pub goal: f64,
    pub at_least: bool,
    pub stretch: Option<f64>,
    pub unit: &'static str,
}

impl Target {
    pub fn met(&self) -> bool {
        if !self.value.is_finite() {
            return false;
        }
        if self.at_least {
            self.value >= self.goal
        } else {
            self.value <= self.goal
        }
    }

    pub fn stretch_met(&self) -> Option<bool> {
        self.stretch
            .map(|s| self.value.is_finite() && self.value >= s)
    }
}

/// The same case again with `fsync.policy = never` (journal written, never synced), to
/// separate the disk's share from the CPU's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NeverRun {
    pub wall_s: f64,
    pub timesteps_per_s: f64,
    pub mb_s: f64,
    pub cpu_s: f64,
}

/// Everything measured for one case.
#[derive(Clone, Debug)]
pub struct CaseResult {
    pub def: CaseDef,
    pub steps: u64,
    pub payload_bytes: u64,
    pub reps: usize,
    pub wall_s: Stats,
    pub timesteps_per_s: Stats,
    pub mb_s: Stats,
    pub close_s: f64,
    pub output_bytes: u64,
    pub chunks: usize,
    pub ack: Option<AckLatency>,
    /// Largest VmHWM over the repetitions (a fresh daemon each).
    pub peak_rss: u64,
    pub budget: u64,
    /// Daemon usage of the median repetition.
    pub usage: DaemonUsage,
    pub client_cpu_s: f64,
    pub base: Baselines,
    pub targets: Vec<Target>,
    pub never: Option<NeverRun>,
    /// Output by block name, summed over the chunks (median repetition).
    pub blocks: Vec<verify::BlockSizes>,
}

impl CaseResult {
    pub fn def_record_bytes(&self) -> u64 {
        self.def.record_bytes()
    }

    /// Daemon CPU seconds (utime + stime, median repetition) per GB (1e9 B) of payload.
    pub fn cpu_s_per_gb(&self) -> f64 {
        self.usage.cpu_s / (self.payload_bytes.max(1) as f64 / 1e9)
    }

    pub fn missed(&self) -> bool {
        self.targets.iter().any(|t| !t.met())
    }

    /// A missed speed target (timesteps/s or MB/s).
    pub fn speed_missed(&self) -> bool {
        self.targets.iter().any(|t| {
            !t.met() && (t.what.starts_with("timesteps/s") || t.what.starts_with("payload MB/s"))
        })
    }
}

/// One repetition's numbers.
struct Rep {
    blocks: Vec<verify::BlockSizes>,
    wall: Duration,
    close: Duration,
    output_bytes: u64,
    chunks: usize,
    usage: DaemonUsage,
    client_cpu_s: f64,
    ack: Option<AckLatency>,
}

struct Ctx<'a> {
    args: &'a RecordArgs,
    scratch: &'a ScratchDir,
    wshardd: PathBuf,
    config: DaemonConfig,
}

/// The most [`prewarm`] writes: free pages go cold again within seconds on this VM, so
/// more would only be wasted time.
pub const PREWARM_MAX: u64 = 2 << 30;

/// Write `bytes` (at most [`PREWARM_MAX`]) to a dummy file and delete it, unsynced and
/// untimed, right before a timed run, so that every timed run starts on the same warm free
/// pages (this VM reports free memory to the host, and faulting it in again is slow; see
/// the README).
fn prewarm(dir: &Path, bytes: u64) -> Result<()> {
    let bytes = bytes.min(PREWARM_MAX);
    let path = dir.join("prewarm.tmp");
    let block = vec![0x5au8; 8 << 20];
    let mut f = std::fs::File::create(&path).map_err(|e| io_ctx("create", &path, e))?;
    let mut left = bytes;
    while left > 0 {
        let n = left.min(block.len() as u64) as usize;
        f.write_all(&block[..n])
            .map_err(|e| io_ctx("write", &path, e))?;
        left -= n as u64;
    }
    drop(f);
    std::fs::remove_file(&path).map_err(|e| io_ctx("remove", &path, e))
}

fn client_options(def: &CaseDef) -> ClientOptions {
    let base = ClientOptions {
        timeout: Some(Duration::from_secs(300)),
        ..ClientOptions::default()
    };
    if def.latency {
        // Every push is written to the socket at once.
        ClientOptions {
            batch_steps: 1,
            batch_delay: Some(Duration::ZERO),
            ..base
        }
    } else if def.single {
        // Every push is its own batch: one frame, or one published shm slot, per step.
        ClientOptions {
            batch_steps: 1,
            batch_delay: None,
            ..base
        }
    } else if def.workload == "joints" {
        // 4096 steps of 105 wire bytes = 430 KB frames, sent on size only.
        ClientOptions {
            batch_bytes: 1 << 20,
            batch_steps: 4096,
            batch_delay: None,
            ..base
        }
    } else {
        // A camera step (1.8 MB) is above batch_bytes: one step per frame.
        ClientOptions {
            batch_delay: None,
            ..base
        }
    }
}

fn run_rep(
    ctx: &Ctx<'_>,
    def: &CaseDef,
    source: Source<'_>,
    steps: u64,
    rep: usize,
    fsync: Fsync,
) -> Result<Rep> {
    let payload = steps * def.record_bytes();
    // Joints `ack` writes the journal and the chunks (2.2x the payload); camera chunks'
    // journal segments are deleted as they go.
    let warm = if def.workload == "joints" {
        (payload * 3).max(256 << 20)
    } else {
        payload + (256 << 20)
    };
    prewarm(ctx.scratch.path(), warm)?;
    let tag = match fsync {
        Fsync::Never => "-never",
        Fsync::Interval(_) => "",
    };
    let dir = ctx
        .scratch
        .file(&format!("{}-{}-{rep}{tag}", def.name, def.transport_name()));
    let config = DaemonConfig {
        fsync,
        ..ctx.config
    };
    let mut d = Daemon::start(&ctx.wshardd, &dir, config)?;
    let episode = format!("{}-{rep}", def.name);
    let channels = match source {
        Source::Joints(_) => JointsData::channels(def.codec),
        Source::Cameras(_) => CameraWindow::channels(def.codec),
    };
    let mut spec = drive::open_spec(
        &episode,
        &format!("teleop-workload/{}", def.workload),
        &source,
        channels,
        def.durability,
    );
    if def.flight {
        spec = spec.flight_ring(Some(FLIGHT_RING_SECONDS), None);
    }
    let options = client_options(def);
    let (rec, ack) = if def.latency {
        let poll = Duration::from_micros(50);
        let l = drive::latency(
            &mut d,
            options,
            spec,
            source,
            steps,
            (Duration::from_nanos(tw::JOINTS_PERIOD_NS as u64), poll),
            def.transport(),
        )?;
        let ack = AckLatency {
            p50: drive::quantile(&l.ms, 0.50),
            p90: drive::quantile(&l.ms, 0.90),
            p99: drive::quantile(&l.ms, 0.99),
            max: drive::quantile(&l.ms, 1.0),
            n: l.ms.len() as u64,
            advances: l.advances,
            late_pushes: l.late_pushes,
            poll_ms: l.poll.as_secs_f64() * 1e3,
        };
        (l.recorded, Some(ack))
    } else {
        (
            drive::throughput_paced(
                &mut d,
                options,
                spec,
                (source, ctx.args.real_time),
                steps,
                def.transport(),
            )?,
            None,
        )
    };
    let usage = d.usage();
    let ep_dir = d.episode_dir(&episode);
    let (output_bytes, files) = daemon::dir_bytes(&ep_dir)?;
    let m = verify::manifest(&ep_dir, &episode, steps, &files)?;
    let blocks = verify::block_sizes(&ep_dir, &m)?;
    if ctx.args.verify && rep == 0 && fsync != Fsync::Never {
        eprintln!("  verifying every byte of {episode} ...");
        verify::contents(&ep_dir, &m, source)?;
    }
    d.stop();
    std::fs::remove_dir_all(&dir).map_err(|e| io_ctx("remove", &dir, e))?;
    Ok(Rep {
        blocks,
        wall: rec.wall,
        close: rec.close,
        output_bytes,
        chunks: m.chunks.len(),
        usage,
        client_cpu_s: rec.client_cpu_s,
        ack,
    })
}

fn run_case(
    ctx: &Ctx<'_>,
    def: CaseDef,
    source: Source<'_>,
    steps: u64,
    reps: usize,
    mut base: Baselines,
) -> Result<CaseResult> {
    let mut out = Vec::with_capacity(reps);
    let mut plain_mb_s = Vec::new();
    let mut plain_fsync = Vec::new();
    for rep in 0..reps {
        if let (Source::Cameras(w), false) = (source, ctx.args.real_time) {
            prewarm(ctx.scratch.path(), steps * def.record_bytes() + (256 << 20))?;
            let (wall, fsync, bytes) = plain::cameras(ctx.scratch.path(), w, steps)?;
            let mb_s = mb_per_s(bytes, wall);
            eprintln!(
                "  plain append rep {}/{reps}: {:.3} s ({:.3} s fsync), {mb_s:.1} MB/s",
                rep + 1,
                wall.as_secs_f64(),
                fsync.as_secs_f64()
            );
            plain_mb_s.push(mb_s);
            plain_fsync.push(fsync.as_secs_f64());
        }
        let r = run_rep(
            ctx,
            &def,
            source,
            steps,
            rep,
            Fsync::Interval(FSYNC_INTERVAL_MS),
        )?;
        let wall = r.wall.as_secs_f64();
        let ack = r
            .ack
            .map(|a| format!(", DURABLE p50 {:.2} ms p99 {:.2} ms", a.p50, a.p99))
            .unwrap_or_default();
        eprintln!(
            "  {} ({}) rep {}/{reps}: {:.3} s, {:.0} timesteps/s, {:.1} MB/s, {} chunks, {:.1} MiB out, RSS {:.1} MiB{ack}",
            def.name,
            def.transport_name(),
            rep + 1,
            wall,
            steps as f64 / wall,
            mb_per_s(steps * def.record_bytes(), r.wall),
            r.chunks,
            r.output_bytes as f64 / 1048576.0,
            r.usage.peak_rss as f64 / 1048576.0,
        );
        out.push(r);
    }
    if !plain_mb_s.is_empty() {
        base.own_plain = Some((Stats::of(&plain_mb_s), Stats::of(&plain_fsync).median));
    }
    let payload = steps * def.record_bytes();
    let walls: Vec<f64> = out.iter().map(|r| r.wall.as_secs_f64()).collect();
    let wall_s = Stats::of(&walls);
    let median_rep = out
        .iter()
        .min_by(|a, b| {
            (a.wall.as_secs_f64() - wall_s.median)
                .abs()
                .total_cmp(&(b.wall.as_secs_f64() - wall_s.median).abs())
        })
        .ok_or_else(|| crate::error::fail("no repetition"))?;
    let ts: Vec<f64> = walls.iter().map(|w| steps as f64 / w).collect();
    let mbs: Vec<f64> = walls.iter().map(|w| payload as f64 / w / 1e6).collect();
    let closes: Vec<f64> = out.iter().map(|r| r.close.as_secs_f64()).collect();
    let mut result = CaseResult {
        def,
        steps,
        payload_bytes: payload,
        reps,
        wall_s,
        timesteps_per_s: Stats::of(&ts),
        mb_s: Stats::of(&mbs),
        close_s: Stats::of(&closes).median,
        output_bytes: median_rep.output_bytes,
        chunks: median_rep.chunks,
        ack: median_rep.ack,
        peak_rss: out.iter().map(|r| r.usage.peak_rss).max().unwrap_or(0),
        budget: ctx.config.chunk_bytes,
        usage: median_rep.usage.clone(),
        client_cpu_s: median_rep.client_cpu_s,
        base,
        targets: Vec::new(),
        never: None,
        blocks: median_rep.blocks.clone(),
    };
    result.targets = report::targets(&result);
    Ok(result)
}

/// A case over each transport of `--transport`, in order; the shm run gets the socket run's
/// figures as its baseline. `never` says which (socket) results get the fsync-never run.
fn run_transports(
    ctx: &Ctx<'_>,
    def: CaseDef,
    source: Source<'_>,
    steps: u64,
    reps: usize,
    base: &Baselines,
    never: impl Fn(&CaseResult) -> bool,
) -> Result<Vec<CaseResult>> {
    let mut out = Vec::new();
    let mut socket = None;
    for t in &ctx.args.transports {
        let def = def.over(t);
        if def.shm {
            eprintln!("record: {} over shm", def.name);
        }
        let b = Baselines {
            socket,
            ..base.clone()
        };
        let mut r = run_case(ctx, def, source, steps, reps, b)?;
        if !def.shm {
            socket = Some((r.timesteps_per_s.median, r.cpu_s_per_gb()));
            if ctx.args.profile && never(&r) {
                never_run(ctx, &mut r, source)?;
            }
        }
        out.push(r);
    }
    Ok(out)
}

/// The fsync-never comparison of a missed `ack` case.
fn never_run(ctx: &Ctx<'_>, r: &mut CaseResult, source: Source<'_>) -> Result<()> {
    eprintln!(
        "  {}: target missed, comparison run with fsync.policy = never",
        r.def.name
    );
    let rep = run_rep(ctx, &r.def, source, r.steps, 0, Fsync::Never)?;
    let wall = rep.wall.as_secs_f64();
    r.never = Some(NeverRun {
        wall_s: wall,
        timesteps_per_s: r.steps as f64 / wall,
        mb_s: r.payload_bytes as f64 / wall / 1e6,
        cpu_s: rep.usage.cpu_s,
    });
    Ok(())
}

/// Run the `record` benchmark and print its report.
///
/// # Errors
/// Setup failures, a daemon that does not start, client or peer errors, a manifest that
/// does not match what was pushed.
pub fn run(args: &RecordArgs) -> Result<()> {
    let started = Instant::now();
    let wshardd = daemon::locate(args.wshardd.as_deref())?;
    // At real rate the MB/s and timesteps/s baselines mean nothing (the pacing sets them):
    // no peer, no plain append.
    let peer_runs = args.peer_runs && !args.real_time;
    let peer_bin = if peer_runs {
        peer::locate(args.peer.as_deref())?
    } else {
        PathBuf::from("(not run)")
    };
    let run_peer = |workload: &str, modes: &[&str], reps: usize, steps: Option<u64>, dir: &Path| {
        if peer_runs {
            peer::run(&peer_bin, workload, modes, reps, steps, dir)
        } else {
            Ok(Vec::new())
        }
    };
    let scratch = ScratchDir::new(args.dir.as_deref())?;
    let config = DaemonConfig {
        chunk_bytes: args.chunk_mib << 20,
        chunk_steps: args.chunk_steps,
        fsync: Fsync::Interval(FSYNC_INTERVAL_MS),
        queue_frames: args.queue_frames,
        compression_workers: 2,
    };
    let ctx = Ctx {
        args,
        scratch: &scratch,
        wshardd,
        config,
    };
    let has = |c: &str| args.cases.contains(&c);
    let quick_steps = |n: u64, full: u64| (args.quick || n != full).then_some(n);
    let mut header = report::Header {
        args: args.clone(),
        config,
        wshardd: ctx.wshardd.clone(),
        peer: peer_bin.clone(),
        notes: Vec::new(),
        peers: Vec::new(),
        total_s: 0.0,
    };
    if args.real_time {
        header.notes.push(format!(
            "--real-time: every timestep sent at its t_ns after the first (joints 1 kHz, cameras 30 Hz){}",
            args.minutes
                .map(|m| format!("; --minutes {m}: {m} min of each workload"))
                .unwrap_or_default()
        ));
    }
    let mut results = Vec::new();
    let mut flight_trigger_json = Vec::new();

    // Joints: the data once for `joints` and `latency`, again (10x) for `long`.
    let peer_dir = scratch.file("peer");
    if has("joints") || has("joints-single") || has("latency") || has("flight-joints") {
        let t = Instant::now();
        let jd = JointsData::build(args.joints_steps.max(args.latency_steps));
        header.notes.push(format!(
            "joints: {} records of 92 B generated in {:.2} s (untimed)",
            jd.steps(),
            t.elapsed().as_secs_f64()
        ));
        if has("joints") {
            let payload = args.joints_steps * tw::JOINTS_RECORD_BYTES as u64;
            if peer_runs {
                prewarm(scratch.path(), payload * 6)?;
            }
            if peer_runs {
                eprintln!(
                    "peer: joints, mcap-zstd / plain / plain-buf x {}",
                    args.reps
                );
            }
            let rows = run_peer(
                "joints",
                &["mcap-zstd", "plain", "plain-buf"],
                args.reps,
                quick_steps(args.joints_steps, tw::JOINTS_STEPS),
                &peer_dir,
            )?;
            let base = Baselines {
                own_plain: None,
                plain: peer::figures(&rows, "plain"),
                plain_buf: peer::figures(&rows, "plain-buf"),
                mcap: peer::figures(&rows, "mcap-zstd").map(|f| ("mcap-zstd".to_owned(), f)),
                socket: None,
            };
            header.peers.push(("joints".to_owned(), rows));
            eprintln!(
                "record: joints, {} steps x {}",
                args.joints_steps, args.reps
            );
            results.extend(run_transports(
                &ctx,
                CaseDef::of("joints"),
                Source::Joints(&jd),
                args.joints_steps,
                args.reps,
                &base,
                CaseResult::speed_missed,
            )?);
        }
        if has("flight-joints") {
            eprintln!(
                "record: flight-joints, {} steps x {}, in flight mode ({FLIGHT_RING_SECONDS} s ring)",
                args.joints_steps, args.reps
            );
            results.extend(run_transports(
                &ctx,
                CaseDef::of("flight-joints"),
                Source::Joints(&jd),
                args.joints_steps,
                args.reps,
                &Baselines::default(),
                |_| false,
            )?);
        }
        if has("joints-single") {
            let steps = args.joints_steps.min(200_000);
            eprintln!(
                "record: joints-single, {steps} steps x {}, one frame/slot per push",
                args.reps
            );
            results.extend(run_transports(
                &ctx,
                CaseDef::of("joints-single"),
                Source::Joints(&jd),
                steps,
                args.reps,
                &Baselines::default(),
                |_| false,
            )?);
        }
        if has("latency") {
            eprintln!(
                "record: latency, {} steps at 1 kHz, one push per step",
                args.latency_steps
            );
            results.extend(run_transports(
                &ctx,
                CaseDef::of("latency"),
                Source::Joints(&jd),
                args.latency_steps,
                1,
                &Baselines::default(),
                |_| false,
            )?);
        }
    }
    if has("long") {
        let steps = args.joints_steps * 10;
        let t = Instant::now();
        let jd = JointsData::build(steps);
        header.notes.push(format!(
            "long: {} records generated in {:.2} s (untimed)",
            jd.steps(),
            t.elapsed().as_secs_f64()
        ));
        eprintln!("record: long, {steps} steps");
        results.extend(run_transports(
            &ctx,
            CaseDef::of("long"),
            Source::Joints(&jd),
            steps,
            1,
            &Baselines::default(),
            |_| false,
        )?);
    }

    let camera_cases: Vec<&'static str> = args
        .cases
        .iter()
        .copied()
        .filter(|c| c.starts_with("cameras-") || *c == "flight-cameras")
        .collect();
    if !camera_cases.is_empty() {
        let steps_per_chunk = (args.chunk_mib << 20) / 2 / tw::CAMERAS_RECORD_BYTES as u64; // half the budget per chunk
        let window = args.window.max(steps_per_chunk + 1);
        let cw = CameraWindow::build(window);
        header.notes.push(format!(
            "cameras: a window of {window} distinct steps ({:.0} MB) generated in {:.2} s = {:.0} MB/s on all cores, too slow to generate on the fly; step k sends the frames of step k % {window} (the window exceeds a chunk's {steps_per_chunk} steps, so no block sees a frame twice) with its own t_ns and joint_pos",
            (window * tw::CAMERAS_RECORD_BYTES as u64) as f64 / 1e6,
            cw.generate.as_secs_f64(),
            cw.generator_mb_s()
        ));
        let mut modes = vec!["plain"];
        if camera_cases.contains(&"cameras-lz4") {
            modes.push("mcap-lz4");
        }
        if camera_cases.contains(&"cameras-zstd") {
            modes.push("mcap-zstd");
        }
        let payload = args.camera_steps * tw::CAMERAS_RECORD_BYTES as u64;
        if peer_runs {
            prewarm(scratch.path(), payload + (256 << 20))?;
            eprintln!(
                "peer: cameras, {} x {} (it generates all {} steps itself)",
                modes.join(" / "),
                args.camera_reps,
                args.camera_steps
            );
        }
        let rows = run_peer(
            "cameras",
            &modes,
            args.camera_reps,
            quick_steps(args.camera_steps, tw::CAMERAS_STEPS),
            &peer_dir,
        )?;
        for name in camera_cases {
            let def = CaseDef::of(name);
            let mcap_mode = match def.codec {
                CodecChoice::Lz4 => Some("mcap-lz4"),
                CodecChoice::Zstd { .. } => Some("mcap-zstd"),
                _ => None,
            };
            let base = Baselines {
                own_plain: None,
                plain: peer::figures(&rows, "plain"),
                plain_buf: None,
                socket: None,
                mcap: mcap_mode.and_then(|m| peer::figures(&rows, m).map(|f| (m.to_owned(), f))),
            };
            eprintln!(
                "record: {name}, {} steps x {}",
                args.camera_steps, args.camera_reps
            );
            results.extend(run_transports(
                &ctx,
                def,
                Source::Cameras(&cw),
                args.camera_steps,
                args.camera_reps,
                &base,
                |r| r.speed_missed() && def.durability == Durability::Ack,
            )?);
        }
        header.peers.push(("cameras".to_owned(), rows));
        if has("flight-cameras") {
            // 30 s pre / 10 s post (--quick: 3 s / 1 s): at disk speed, and with
            // --real-time also at the workload's rate.
            let (pre, post) = if args.quick {
                FLIGHT_QUICK_WINDOW_S
            } else {
                FLIGHT_WINDOW_S
            };
            let paces: &[bool] = if args.real_time {
                &[false, true]
            } else {
                &[false]
            };
            for &real_time in paces {
                eprintln!(
                    "record: flight-cameras trigger, {pre} s pre / {post} s post, {}",
                    if real_time { "real rate" } else { "disk speed" }
                );
                let t = flight_trigger::measure(
                    &ctx.wshardd,
                    &scratch.file("flight-trigger"),
                    config,
                    &cw,
                    (pre, post),
                    real_time,
                )?;
                header.notes.push(format!(
                    "flight-cameras trigger at {}: {} s pre / {} s post ({} steps, codec none, chunk): window episode complete {:.3} s after the post-window's last step was sent (goal <= 1 s)",
                    t.pace(), t.pre_s, t.post_s, t.steps, t.after_post_s
                ));
                flight_trigger_json.push(t);
            }
        }
    }
    header.total_s = started.elapsed().as_secs_f64();
    report::print(&header, &results);
    for t in flight_trigger_json {
        println!(
            "{{\"bench\":\"record\",\"case\":\"flight-trigger\",\"workload\":\"cameras\",\"real_time\":{},\"pre_s\":{},\"post_s\":{},\"steps\":{},\"trigger_to_durable_after_post_s\":{:.3}}}",
            t.real_time, t.pre_s, t.post_s, t.steps, t.after_post_s
        );
    }
    Ok(())
}
