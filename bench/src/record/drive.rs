//! The client side: pushing timesteps through the real socket with `wshard-client`.

use std::path::Path;
use std::time::{Duration, Instant};

use wshard_client::{
    ChannelSpec, Client, ClientOptions, CloseSummary, Durability, EpisodeWriter, OpenEpisode,
    Outcome, TimebaseSpec, Transport,
};

use super::daemon::{cpu_seconds, Daemon};
use super::data::{CameraWindow, JointsData};
use crate::error::{fail, Result};

/// Where the timesteps come from.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    Joints(&'a JointsData),
    Cameras(&'a CameraWindow),
}

impl Source<'_> {
    fn hz(&self) -> f64 {
        match self {
            Self::Joints(_) => 1e9 / teleop_workload::JOINTS_PERIOD_NS as f64,
            Self::Cameras(_) => 1e9 / teleop_workload::CAMERAS_PERIOD_NS as f64,
        }
    }

    /// The `t_ns` of step `i`.
    pub(crate) fn t_ns(&self, i: u64) -> i64 {
        match self {
            Self::Joints(d) => d.step(i).0,
            Self::Cameras(_) => teleop_workload::cameras_ts_ns(i),
        }
    }

    #[inline]
    pub(crate) fn push(&self, w: &mut EpisodeWriter<'_>, i: u64, done: bool) -> Result<u64> {
        Ok(match self {
            Self::Joints(d) => {
                let (t, p) = d.step(i);
                w.push(t, 0.0, done, &p)?
            }
            Self::Cameras(c) => {
                let (t, jp, c0, c1) = c.step(i);
                w.push(t, 0.0, done, &[c0, c1, &jp])?
            }
        })
    }
}

/// The OPEN of one benchmark episode.
pub fn open_spec(
    episode: &str,
    env_id: &str,
    source: &Source<'_>,
    channels: Vec<ChannelSpec>,
    durability: Durability,
) -> OpenEpisode {
    let mut spec = OpenEpisode::new(
        episode,
        env_id,
        TimebaseSpec::TimestampsNs {
            nominal_hz: source.hz(),
        },
    );
    for c in channels {
        spec = spec.channel(c);
    }
    spec.with_durability(durability)
}

/// CPU seconds of this process's threads: (the calling thread, the client's reader threads).
fn client_cpu() -> (f64, f64) {
    let me = cpu_seconds(Path::new("/proc/thread-self/stat")).map_or(0.0, |c| c.1);
    let mut reader = 0.0;
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for e in dir.flatten() {
            if let Some((comm, cpu)) = cpu_seconds(&e.path().join("stat")) {
                if comm.starts_with("wshard-client") {
                    reader += cpu;
                }
            }
        }
    }
    (me, reader)
}

/// One timed recording.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// OPEN through the answer to CLOSE (after which the last chunk and the manifest are
    /// durable).
    pub wall: Duration,
    /// The part of `wall` spent in `close` (the last chunk's publish and the manifest).
    pub close: Duration,
    /// CPU of the pushing thread plus the client's reader thread.
    pub client_cpu_s: f64,
}

/// CLOSE must report every pushed step recorded and durable.
fn check_close(summary: &CloseSummary, steps: u64) -> Result<()> {
    if summary.timesteps != steps || summary.durable_up_to != steps {
        return Err(fail(format!(
            "CLOSE reported {} timesteps, durable up to {}; pushed {steps}",
            summary.timesteps, summary.durable_up_to
        )));
    }
    Ok(())
}

/// When each step is sent: as fast as the client goes, or at its `t_ns` (real rate).
#[derive(Clone, Copy, Debug)]
pub struct Pacer {
    /// `None`: no pacing.
    start: Option<(Instant, i64)>,
}

impl Pacer {
    /// Pace at real rate (from now, step 0 at once) when `real_time`, else not at all.
    pub fn new(real_time: bool, source: &Source<'_>) -> Self {
        Self {
            start: real_time.then(|| (Instant::now(), source.t_ns(0))),
        }
    }

    /// When step `i` is due (`None` without pacing).
    pub fn due(&self, source: &Source<'_>, i: u64) -> Option<Instant> {
        let (t0, ns0) = self.start?;
        let after = u64::try_from(source.t_ns(i).saturating_sub(ns0)).unwrap_or(0);
        Some(t0 + Duration::from_nanos(after))
    }

    /// Sleep until step `i` is due.
    pub fn wait(&self, source: &Source<'_>, i: u64) {
        if let Some(due) = self.due(source, i) {
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
    }
}

/// Push `steps` timesteps as fast as the client goes (over `transport`), then CLOSE. The
/// timer runs from just before OPEN to the answer to CLOSE; connecting (HELLO) is not
/// timed.
///
/// # Errors
/// Any client error.
pub fn throughput(
    daemon: &mut Daemon,
    options: ClientOptions,
    spec: OpenEpisode,
    source: Source<'_>,
    steps: u64,
    transport: Transport,
) -> Result<Recorded> {
    throughput_paced(daemon, options, spec, (source, false), steps, transport)
}

/// [`throughput`], or with `real_time` each step sent at its `t_ns` after the first.
///
/// # Errors
/// Any client error.
pub fn throughput_paced(
    daemon: &mut Daemon,
    options: ClientOptions,
    spec: OpenEpisode,
    (source, real_time): (Source<'_>, bool),
    steps: u64,
    transport: Transport,
) -> Result<Recorded> {
    let mut client = Client::connect_with(&daemon.socket, "wshard-bench/record", options)?;
    daemon.mark();
    let (me0, rd0) = client_cpu();
    let t0 = Instant::now();
    let mut w = client.open_episode_with(spec, transport)?;
    let pacer = Pacer::new(real_time, &source);
    for i in 0..steps {
        pacer.wait(&source, i);
        source.push(&mut w, i, i + 1 == steps)?;
    }
    let tc = Instant::now();
    let summary = w.close(Outcome::Completed)?;
    let t1 = Instant::now();
    let (me1, rd1) = client_cpu();
    drop(client);
    check_close(&summary, steps)?;
    Ok(Recorded {
        wall: t1 - t0,
        close: t1 - tc,
        client_cpu_s: (me1 - me0) + (rd1 - rd0),
    })
}

/// Push-to-DURABLE latencies of a paced run.
#[derive(Clone, Debug)]
pub struct Latencies {
    pub recorded: Recorded,
    /// Milliseconds from just before `push` to the first poll that saw `durable_seq()`
    /// cover the step, one per step.
    pub ms: Vec<f64>,
    /// Times `durable_seq()` was seen to advance.
    pub advances: u64,
    /// Pushes that started more than 1 ms after their deadline (the pacing fell behind).
    pub late_pushes: u64,
    pub poll: Duration,
}

/// Push one timestep every `period` (a sleep-until loop, over `transport`), sent at once (the client must be
/// configured with `batch_steps = 1`), and poll `durable_seq()` every `poll` while
/// waiting for the next deadline. The pushing thread is the only one that may touch the
/// episode writer, so the polling runs in the same loop; its granularity is `poll` plus
/// the sleep's overshoot.
///
/// # Errors
/// Any client error, or steps not durable 5 s after the last push.
pub fn latency(
    daemon: &mut Daemon,
    options: ClientOptions,
    spec: OpenEpisode,
    source: Source<'_>,
    steps: u64,
    (period, poll): (Duration, Duration),
    transport: Transport,
) -> Result<Latencies> {
    let mut client = Client::connect_with(&daemon.socket, "wshard-bench/latency", options)?;
    daemon.mark();
    let (me0, rd0) = client_cpu();
    let t0 = Instant::now();
    let mut w = client.open_episode_with(spec, transport)?;
    let mut obs = Observer::new(steps);
    let mut late = 0u64;
    let start = Instant::now() + Duration::from_millis(5);
    for i in 0..steps {
        let deadline = start + period * u32::try_from(i).unwrap_or(u32::MAX);
        loop {
            obs.observe(&w);
            let now = Instant::now();
            if now >= deadline {
                if now - deadline > Duration::from_millis(1) {
                    late += 1;
                }
                break;
            }
            std::thread::sleep((deadline - now).min(poll));
        }
        obs.pushed();
        source.push(&mut w, i, i + 1 == steps)?;
    }
    let wait_until = Instant::now() + Duration::from_secs(5);
    while obs.seen < steps {
        obs.observe(&w);
        if Instant::now() > wait_until {
            return Err(fail(format!(
                "only {} of {steps} steps durable 5 s after the last push",
                obs.seen
            )));
        }
        std::thread::sleep(poll);
    }
    let tc = Instant::now();
    let summary = w.close(Outcome::Completed)?;
    let t1 = Instant::now();
    let (me1, rd1) = client_cpu();
    drop(client);
    check_close(&summary, steps)?;
    Ok(Latencies {
        recorded: Recorded {
            wall: t1 - t0,
            close: t1 - tc,
            client_cpu_s: (me1 - me0) + (rd1 - rd0),
        },
        ms: obs.ms,
        advances: obs.advances,
        late_pushes: late,
        poll,
    })
}

/// Push times and the latency of each step, filled as `durable_seq()` advances (the
/// pushing thread looks between pushes: it is the only one that may touch the writer).
pub struct Observer {
    pub pushed_at: Vec<Instant>,
    /// Milliseconds from push to the first look that saw the step durable; NaN until then.
    pub ms: Vec<f64>,
    /// Steps seen durable so far.
    pub seen: u64,
    /// Times `durable_seq()` was seen to advance.
    pub advances: u64,
}

impl Observer {
    /// Room for `steps` pushes.
    pub fn new(steps: u64) -> Self {
        Self {
            pushed_at: Vec::with_capacity(steps as usize),
            ms: vec![f64::NAN; steps as usize],
            seen: 0,
            advances: 0,
        }
    }

    /// Note the instant of the next push.
    pub fn pushed(&mut self) {
        self.pushed_at.push(Instant::now());
    }

    pub fn observe(&mut self, w: &EpisodeWriter<'_>) {
        let d = w.durable_seq().min(self.pushed_at.len() as u64);
        if d > self.seen {
            let now = Instant::now();
            for s in self.seen..d {
                self.ms[s as usize] = (now - self.pushed_at[s as usize]).as_secs_f64() * 1e3;
            }
            self.seen = d;
            self.advances += 1;
        }
    }
}

/// The `q` quantile (0..=1) of `v` (nearest rank; NaN when empty).
pub fn quantile(v: &[f64], q: f64) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return f64::NAN;
    }
    s.sort_by(f64::total_cmp);
    let rank = (q * s.len() as f64).ceil().max(1.0) as usize;
    s[rank.min(s.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), 50.0);
        assert_eq!(quantile(&v, 0.99), 99.0);
        assert_eq!(quantile(&v, 1.0), 100.0);
        assert!(quantile(&[], 0.5).is_nan());
    }
}
