//! `multirate`: the multi-rate workload (joints 1 kHz, IMU 200 Hz with events, two cameras
//! 30 Hz) from three producer processes, recorded by the real `wshardd`
//!
//! - as **one episode** with three streams (protocol version 2: an owner connection opens
//!   the episode, each producer joins it with its stream, the owner closes it), and
//! - as **three separate single-stream episodes** (each producer opens its own),
//!
//! in the same run against the same daemon, alternating which goes first. Two phases:
//! `throughput` (every producer pushes its data as fast as it can; wall time from `go` to
//! the last episode finalized) and `paced` (every producer at its real rate; the 1 kHz
//! stream's push-to-DURABLE latency). Then the read side on the one-episode recording:
//! the aligned view at the camera clock against reading the raw streams ([`read`]).
//!
//! - [`streams`]: the producers' schemas and data; [`producer`]: the child process;
//! - [`run_case`]: one case; [`report`]: the table, the targets and the JSON lines.

pub mod args;
pub mod producer;
mod read;
mod report;
pub mod streams;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use wshard_client::{Client, ClientOptions, EpisodeOpen, Outcome, ProtocolVersion};

use crate::error::{fail, io_ctx, Result};
use crate::record::daemon::{self as rd, Daemon, DaemonConfig, Fsync};
use crate::record::FSYNC_INTERVAL_MS;
use crate::scratch::ScratchDir;
use args::MultirateArgs;
use producer::ProducerResult;
use streams::Role;

/// How the three producers' data is recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    OneEpisode,
    Separate,
}

impl Layout {
    pub fn name(self) -> &'static str {
        match self {
            Self::OneEpisode => "one episode, 3 streams",
            Self::Separate => "3 separate episodes",
        }
    }

    pub fn key(self) -> &'static str {
        match self {
            Self::OneEpisode => "one-episode",
            Self::Separate => "separate",
        }
    }
}

/// One recording of the workload.
#[derive(Clone, Debug)]
pub struct CaseResult {
    pub layout: Layout,
    pub paced: bool,
    pub rep: usize,
    /// From `go` to every episode finalized (the owner's EPISODE_CLOSE answered, or every
    /// producer's CLOSE answered).
    pub wall: Duration,
    pub payload_bytes: u64,
    pub output_bytes: u64,
    pub daemon_cpu_s: f64,
    pub producers: Vec<(Role, ProducerResult)>,
}

impl CaseResult {
    pub fn mb_s(&self) -> f64 {
        self.payload_bytes as f64 / self.wall.as_secs_f64().max(1e-9) / 1e6
    }

    pub fn producer(&self, role: Role) -> Option<&ProducerResult> {
        self.producers
            .iter()
            .find(|(r, _)| *r == role)
            .map(|(_, p)| p)
    }

    pub fn dropped(&self) -> u64 {
        self.producers
            .iter()
            .map(|(_, p)| p.dropped + (p.steps - p.recorded - p.dropped))
            .sum()
    }
}

/// Run the benchmark.
///
/// # Errors
/// Any failure to start the daemon or a producer, or a recording that lost timesteps.
pub fn run(a: &MultirateArgs) -> Result<()> {
    let bin = rd::locate(a.wshardd.as_deref())?;
    let scratch = ScratchDir::new(a.dir.as_deref())?;
    let config = DaemonConfig {
        chunk_bytes: 64 << 20,
        chunk_steps: 100_000,
        fsync: Fsync::Interval(FSYNC_INTERVAL_MS),
        queue_frames: 8,
        compression_workers: 2,
    };
    let mut daemon = Daemon::start(&bin, &scratch.file("daemon"), config)?;
    eprintln!(
        "multirate: {} s of data per case, {} rep(s), daemon {}",
        a.seconds,
        a.reps,
        bin.display()
    );
    let mut results = Vec::new();
    let mut kept: Option<String> = None;
    for paced in [false, true] {
        if paced && !a.paced {
            continue;
        }
        for rep in 0..a.reps {
            let order = if rep % 2 == 0 {
                [Layout::OneEpisode, Layout::Separate]
            } else {
                [Layout::Separate, Layout::OneEpisode]
            };
            for layout in order {
                let id = format!(
                    "mr-{}-{}-{rep}",
                    layout.key(),
                    if paced { "paced" } else { "fast" }
                );
                eprintln!(
                    "  {} {} rep {}",
                    layout.name(),
                    if paced { "paced" } else { "throughput" },
                    rep + 1
                );
                let r = run_case(&mut daemon, a, layout, paced, rep, &id)?;
                let keep = !paced && layout == Layout::OneEpisode && kept.is_none();
                if keep {
                    kept = Some(id.clone());
                } else {
                    remove_episodes(&daemon, layout, &id)?;
                }
                results.push(r);
            }
        }
    }
    let reads = match &kept {
        Some(id) => read::measure(
            &daemon.episode_dir(id),
            a.read_reps,
            a.reference_py.as_deref(),
            &a.python,
        )?,
        None => Vec::new(),
    };
    daemon.stop();
    report::print(a, &results, &reads);
    Ok(())
}

/// Record the workload once.
fn run_case(
    daemon: &mut Daemon,
    a: &MultirateArgs,
    layout: Layout,
    paced: bool,
    rep: usize,
    id: &str,
) -> Result<CaseResult> {
    let exe = std::env::current_exe().map_err(|e| fail(format!("current_exe: {e}")))?;
    let mut owner = match layout {
        Layout::OneEpisode => {
            let options = ClientOptions {
                protocol_version: ProtocolVersion::V2,
                ..ClientOptions::default()
            };
            Some(Client::connect_with(
                &daemon.socket,
                "bench/owner",
                options,
            )?)
        }
        Layout::Separate => None,
    };
    let mut episode = match owner.as_mut() {
        Some(c) => Some(c.open_multistream_episode(EpisodeOpen::new(id, "multirate-bench"))?),
        None => None,
    };
    let mut children = Vec::new();
    for role in Role::ALL {
        let (flag, target) = match layout {
            Layout::OneEpisode => ("--stream-of", id.to_owned()),
            Layout::Separate => ("--episode", format!("{id}-{}", role.name())),
        };
        let mut cmd = Command::new(&exe);
        cmd.arg("multirate-producer")
            .arg("--socket")
            .arg(&daemon.socket)
            .args(["--role", role.name(), flag, &target])
            .args(["--seconds", &a.seconds.to_string()]);
        if paced {
            cmd.arg("--paced");
        }
        children.push(Producer::spawn(role, cmd)?);
    }
    for c in &mut children {
        c.expect_ready()?;
    }
    daemon.mark();
    let t0 = Instant::now();
    for c in &mut children {
        c.go()?;
    }
    let mut producers = Vec::new();
    for c in children {
        producers.push((c.role, c.finish()?));
    }
    if let Some(ep) = episode.take() {
        let open = ep.close(Outcome::Completed)?;
        if open != 0 {
            return Err(fail(format!(
                "{id}: {open} stream(s) still recording at EPISODE_CLOSE"
            )));
        }
    }
    let wall = t0.elapsed();
    let usage = daemon.usage();
    let payload_bytes = producers
        .iter()
        .map(|(r, p)| r.record_bytes() * p.steps)
        .sum();
    let output_bytes = match layout {
        Layout::OneEpisode => tree_bytes(&daemon.episode_dir(id))?,
        Layout::Separate => {
            let mut n = 0;
            for role in Role::ALL {
                n += tree_bytes(&daemon.episode_dir(&format!("{id}-{}", role.name())))?;
            }
            n
        }
    };
    Ok(CaseResult {
        layout,
        paced,
        rep,
        wall,
        payload_bytes,
        output_bytes,
        daemon_cpu_s: usage.cpu_s,
        producers,
    })
}

/// A producer child process.
struct Producer {
    role: Role,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Producer {
    fn spawn(role: Role, mut cmd: Command) -> Result<Self> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| fail(format!("start producer {}: {e}", role.name())))?;
        let stdin = child.stdin.take().ok_or_else(|| fail("producer stdin"))?;
        let stdout = BufReader::new(child.stdout.take().ok_or_else(|| fail("producer stdout"))?);
        Ok(Self {
            role,
            child,
            stdin,
            stdout,
        })
    }

    fn line(&mut self) -> Result<String> {
        let mut s = String::new();
        self.stdout.read_line(&mut s)?;
        if s.is_empty() {
            let status = self.child.wait()?;
            return Err(fail(format!(
                "producer {} ended ({status})",
                self.role.name()
            )));
        }
        Ok(s.trim().to_owned())
    }

    fn expect_ready(&mut self) -> Result<()> {
        let l = self.line()?;
        if l == "ready" {
            Ok(())
        } else {
            Err(fail(format!("producer {}: `{l}`", self.role.name())))
        }
    }

    fn go(&mut self) -> Result<()> {
        writeln!(self.stdin, "go")?;
        self.stdin.flush()?;
        Ok(())
    }

    fn finish(mut self) -> Result<ProducerResult> {
        let l = self.line()?;
        let status = self.child.wait()?;
        if !status.success() {
            return Err(fail(format!(
                "producer {} failed ({status})",
                self.role.name()
            )));
        }
        ProducerResult::parse(&l)
    }
}

/// Bytes of every regular file under `dir`, recursively.
fn tree_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for e in std::fs::read_dir(dir).map_err(|e| io_ctx("list", dir, e))? {
        let e = e.map_err(|e| io_ctx("list", dir, e))?;
        let md = e.metadata().map_err(|err| io_ctx("stat", &e.path(), err))?;
        if md.is_dir() {
            total += tree_bytes(&e.path())?;
        } else if md.is_file() {
            total += md.len();
        }
    }
    Ok(total)
}

fn remove_episodes(daemon: &Daemon, layout: Layout, id: &str) -> Result<()> {
    let dirs: Vec<String> = match layout {
        Layout::OneEpisode => vec![id.to_owned()],
        Layout::Separate => Role::ALL
            .iter()
            .map(|r| format!("{id}-{}", r.name()))
            .collect(),
    };
    for d in dirs {
        let p = daemon.episode_dir(&d);
        std::fs::remove_dir_all(&p).map_err(|e| io_ctx("remove", &p, e))?;
    }
    Ok(())
}
