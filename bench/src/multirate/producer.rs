//! One producer process of the multi-rate workload (`wshard-bench multirate-producer`):
//! connects, opens its stream (or its own single-stream episode), says `ready` on stdout,
//! waits for `go` on stdin, pushes its timesteps (as fast as it can, or paced at its rate
//! measuring push-to-DURABLE latency), closes, and prints one `result` line.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use wshard_client::{
    Client, ClientOptions, EpisodeWriter, Event, OpenEpisode, Outcome, ProtocolVersion, StreamOpen,
    TimebaseSpec,
};

use super::streams::{Role, RoleData, IMU_STEPS_PER_EVENT};
use crate::error::{fail, Result};
use crate::record::drive::{quantile, Observer};

/// Where the producer's timesteps go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A stream of this multi-stream episode.
    Stream { episode: String },
    /// A single-stream episode of its own, with this id.
    Episode { episode: String },
}

/// Options of `multirate-producer`.
#[derive(Clone, Debug, PartialEq)]
pub struct ProducerArgs {
    pub socket: PathBuf,
    pub role: Role,
    pub target: Target,
    pub seconds: f64,
    pub paced: bool,
}

/// What a producer reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProducerResult {
    pub steps: u64,
    pub recorded: u64,
    pub durable: u64,
    pub dropped: u64,
    pub events: u64,
    pub wall_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub late: u64,
}

impl ProducerResult {
    pub fn line(&self) -> String {
        format!(
            "result steps={} recorded={} durable={} dropped={} events={} wall_s={} p50_ms={} p99_ms={} max_ms={} late={}",
            self.steps, self.recorded, self.durable, self.dropped, self.events, self.wall_s,
            self.p50_ms, self.p99_ms, self.max_ms, self.late
        )
    }

    pub fn parse(line: &str) -> Result<Self> {
        let rest = line
            .strip_prefix("result ")
            .ok_or_else(|| fail(format!("producer printed `{line}`, expected a result line")))?;
        let mut r = Self::default();
        for kv in rest.split_whitespace() {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| fail(format!("bad result field `{kv}`")))?;
            let f: f64 = v
                .parse()
                .map_err(|_| fail(format!("bad value in `{kv}`")))?;
            let u = f as u64;
            match k {
                "steps" => r.steps = u,
                "recorded" => r.recorded = u,
                "durable" => r.durable = u,
                "dropped" => r.dropped = u,
                "events" => r.events = u,
                "wall_s" => r.wall_s = f,
                "p50_ms" => r.p50_ms = f,
                "p99_ms" => r.p99_ms = f,
                "max_ms" => r.max_ms = f,
                "late" => r.late = u,
                _ => return Err(fail(format!("unknown result field `{k}`"))),
            }
        }
        Ok(r)
    }
}

/// Run one producer (the child side).
///
/// # Errors
/// Any client or I/O error; CLOSE reporting less than was pushed.
pub fn run(a: &ProducerArgs) -> Result<()> {
    let steps = a.role.steps(a.seconds);
    let data = RoleData::build(a.role, steps);
    let options = ClientOptions {
        protocol_version: ProtocolVersion::V2,
        // Paced: every push goes out at once, so its latency is the recorder's.
        batch_steps: if a.paced {
            1
        } else {
            ClientOptions::default().batch_steps
        },
        ..ClientOptions::default()
    };
    let mut client = Client::connect_with(&a.socket, &format!("bench/{}", a.role.name()), options)?;
    let timebase = TimebaseSpec::TimestampsNs {
        nominal_hz: a.role.hz(),
    };
    let mut w = match &a.target {
        Target::Stream { episode } => {
            let mut spec = StreamOpen::new(episode.as_str(), a.role.name(), timebase);
            for c in a.role.channels() {
                spec = spec.channel(c);
            }
            client.join_stream_with(
                spec.with_durability(a.role.durability()),
                a.role.transport(),
            )?
        }
        Target::Episode { episode } => {
            let mut spec = OpenEpisode::new(episode.as_str(), "multirate-bench", timebase);
            for c in a.role.channels() {
                spec = spec.channel(c);
            }
            client.open_episode_with(
                spec.with_durability(a.role.durability()),
                a.role.transport(),
            )?
        }
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")?;
    out.flush()?;
    let mut go = String::new();
    std::io::stdin().lock().read_line(&mut go)?;
    if go.trim() != "go" {
        return Err(fail(format!(
            "expected `go` on stdin, read `{}`",
            go.trim()
        )));
    }
    let t0 = Instant::now();
    // Latency is push-to-DURABLE of the journaled (ack) streams; a `chunk` stream's steps
    // become durable only with their chunk, at rotation or CLOSE.
    let measure = a.paced && a.role.durability() == wshard_client::Durability::Ack;
    let mut lat = Latency::new(steps, measure);
    let start = Instant::now() + Duration::from_millis(2);
    let period = Duration::from_nanos(a.role.period_ns() as u64);
    let mut events = 0u64;
    for i in 0..steps {
        if a.paced {
            lat.wait_until(&w, start + period * u32::try_from(i).unwrap_or(u32::MAX));
        }
        lat.pushed(i);
        w.push(data.t_ns(a.role, i), 0.0, i + 1 == steps, &data.payloads(i))?;
        if a.role == super::streams::Role::Imu && i % IMU_STEPS_PER_EVENT == 0 {
            let text = format!("imu calibration check {}", i / IMU_STEPS_PER_EVENT);
            w.send_event(Event::text(data.t_ns(a.role, i), "note", text))?;
            events += 1;
        }
    }
    if measure {
        lat.drain(&w)?;
    }
    let dropped = w.dropped_steps();
    let summary = w.close(Outcome::Completed)?;
    let wall = t0.elapsed();
    drop(client);
    if summary.timesteps + dropped != steps {
        return Err(fail(format!(
            "{}: CLOSE reported {} timesteps ({dropped} dropped), pushed {steps}",
            a.role.name(),
            summary.timesteps
        )));
    }
    let r = ProducerResult {
        steps,
        recorded: summary.timesteps,
        durable: summary.durable_up_to,
        dropped,
        events,
        wall_s: wall.as_secs_f64(),
        p50_ms: quantile(&lat.obs.ms, 0.5),
        p99_ms: quantile(&lat.obs.ms, 0.99),
        max_ms: quantile(&lat.obs.ms, 1.0),
        late: lat.late,
    };
    writeln!(out, "{}", r.line())?;
    Ok(())
}

/// Push-to-DURABLE latency of a paced run: the `record` benchmark's [`Observer`], when
/// `on`, plus the pushes that started late.
struct Latency {
    on: bool,
    obs: Observer,
    late: u64,
}

/// How often `durable_seq()` is looked at while waiting for the next deadline.
const POLL: Duration = Duration::from_micros(100);

impl Latency {
    fn new(steps: u64, on: bool) -> Self {
        Self {
            on,
            obs: Observer::new(if on { steps } else { 0 }),
            late: 0,
        }
    }

    fn pushed(&mut self, _i: u64) {
        if self.on {
            self.obs.pushed();
        }
    }

    fn observe(&mut self, w: &EpisodeWriter<'_>) {
        self.obs.observe(w);
    }

    fn wait_until(&mut self, w: &EpisodeWriter<'_>, deadline: Instant) {
        loop {
            self.observe(w);
            let now = Instant::now();
            if now >= deadline {
                if now - deadline > Duration::from_millis(1) {
                    self.late += 1;
                }
                return;
            }
            std::thread::sleep((deadline - now).min(POLL));
        }
    }

    fn drain(&mut self, w: &EpisodeWriter<'_>) -> Result<()> {
        let until = Instant::now() + Duration::from_secs(10);
        while self.obs.seen < self.obs.pushed_at.len() as u64 {
            self.observe(w);
            if Instant::now() > until {
                return Err(fail(format!(
                    "only {} of {} steps durable 10 s after the last push",
                    self.obs.seen,
                    self.obs.pushed_at.len()
                )));
            }
            std::thread::sleep(POLL);
        }
        Ok(())
    }
}
