//! Stream a synthetic teleop-like workload to a running `wshardd`.
//!
//! ```sh
//! cargo run --release -p wshard-client --example stream_workload -- \
//!     --socket /run/wshardd/wshardd.sock --episode demo-0001 --steps 30000 --hz 1000
//! ```
//!
//! Channels: `joints` and `joint_vel` (signal f32[7], sinusoids and their derivatives) and
//! `cmd` (action f32[7]). The real benchmark lives elsewhere; this is a smoke test and an
//! example of the client API.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use wshard::episode::{DType, Lane};
use wshard_client::{ChannelSpec, Client, Durability, OpenEpisode, Outcome, TimebaseSpec};

struct Args {
    socket: String,
    episode: String,
    steps: u64,
    hz: f64,
    durability: Durability,
    realtime: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        socket: "/run/wshardd/wshardd.sock".into(),
        episode: format!("workload-{}", std::process::id()),
        steps: 10_000,
        hz: 1000.0,
        durability: Durability::Ack,
        realtime: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--socket" => a.socket = value()?,
            "--episode" => a.episode = value()?,
            "--steps" => a.steps = value()?.parse().map_err(|e| format!("--steps: {e}"))?,
            "--hz" => a.hz = value()?.parse().map_err(|e| format!("--hz: {e}"))?,
            "--durability" => {
                a.durability = match value()?.as_str() {
                    "ack" => Durability::Ack,
                    "chunk" => Durability::Chunk,
                    other => return Err(format!("--durability: {other:?} is not ack or chunk")),
                }
            }
            "--realtime" => a.realtime = true,
            "-h" | "--help" => {
                return Err(
                    "usage: stream_workload [--socket PATH] [--episode ID] [--steps N] \
                            [--hz HZ] [--durability ack|chunk] [--realtime]"
                        .into(),
                )
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(a)
}

/// Seven joints moving on sinusoids of different frequencies.
fn fill(t: f64, joints: &mut [u8; 28], vel: &mut [u8; 28], cmd: &mut [u8; 28]) {
    for j in 0..7 {
        let w = 0.5 + 0.3 * j as f64;
        let phase = j as f64 * 0.7;
        let q = (w * t + phase).sin();
        let dq = w * (w * t + phase).cos();
        let c = q + 0.01 * dq;
        joints[j * 4..j * 4 + 4].copy_from_slice(&(q as f32).to_le_bytes());
        vel[j * 4..j * 4 + 4].copy_from_slice(&(dq as f32).to_le_bytes());
        cmd[j * 4..j * 4 + 4].copy_from_slice(&(c as f32).to_le_bytes());
    }
}

fn run(a: &Args) -> Result<(), wshard_client::ClientError> {
    let mut client = Client::connect(&a.socket, "stream_workload/0.1")?;
    let info = client.server_info().clone();
    println!(
        "connected to {} (max frame {} bytes)",
        info.server_name, info.max_frame_bytes
    );
    let spec = OpenEpisode::new(
        &a.episode,
        "SyntheticArm-v0",
        TimebaseSpec::Ticks { tick_hz: a.hz },
    )
    .with_durability(a.durability)
    .channel(ChannelSpec::new(
        "joints",
        Lane::Signal,
        DType::F32,
        vec![7],
    ))
    .channel(ChannelSpec::new(
        "joint_vel",
        Lane::Signal,
        DType::F32,
        vec![7],
    ))
    .channel(ChannelSpec::new("cmd", Lane::Action, DType::F32, vec![7]))
    .with_metadata_json(r#"{"source":"stream_workload example"}"#);
    let mut ep = client.open_episode(spec)?;
    let dt_ns = (1e9 / a.hz).round() as i64;
    let (mut joints, mut vel, mut cmd) = ([0u8; 28], [0u8; 28], [0u8; 28]);
    let start = Instant::now();
    for i in 0..a.steps {
        if a.realtime {
            let due = start + Duration::from_nanos(i * dt_ns as u64);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
        fill(i as f64 / a.hz, &mut joints, &mut vel, &mut cmd);
        let done = i + 1 == a.steps;
        ep.push(i as i64 * dt_ns, 0.0, done, &[&joints, &vel, &cmd])?;
    }
    let pushed = start.elapsed();
    let durable = ep.flush()?;
    let flushed = start.elapsed();
    let summary = ep.close(Outcome::Completed)?;
    let secs = pushed.as_secs_f64().max(1e-9);
    println!(
        "{} steps pushed in {:.3} s ({:.0} steps/s), durable up to {} after {:.3} s, \
         closed with {} timesteps",
        a.steps,
        secs,
        a.steps as f64 / secs,
        durable,
        flushed.as_secs_f64(),
        summary.timesteps
    );
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("stream_workload: {e}");
            ExitCode::FAILURE
        }
    }
}
