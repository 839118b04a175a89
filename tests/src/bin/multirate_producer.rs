//! A Rust client process recording one stream of a multi-stream episode, for
//! `multirate_three_producers_*`. Command line and output: see
//! `wshard_e2e::multirate_workload` (the Python producer speaks the same).

use std::io::{BufRead, Write};
use std::process::ExitCode;

use wshard_client::{Client, Outcome, RingPolicy, Step, Transport};
use wshard_e2e::multirate_workload::Kind;

const USAGE: &str =
    "usage: multirate_producer SOCKET EPISODE KIND STEPS T0_NS [--shm] [--pause-at K]";

/// Steps per `push_batch`.
const BATCH_STEPS: u64 = 50;

struct Args {
    socket: String,
    episode: String,
    kind: Kind,
    steps: u64,
    t0: i64,
    shm: bool,
    pause_at: Option<u64>,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let [socket, episode, kind, steps, t0, rest @ ..] = args else {
        return Err(USAGE.into());
    };
    let mut a = Args {
        socket: socket.clone(),
        episode: episode.clone(),
        kind: Kind::parse(kind).ok_or_else(|| format!("unknown kind {kind:?}"))?,
        steps: steps.parse().map_err(|e| format!("STEPS {steps:?}: {e}"))?,
        t0: t0.parse().map_err(|e| format!("T0_NS {t0:?}: {e}"))?,
        shm: false,
        pause_at: None,
    };
    let mut it = rest.iter();
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--shm" => a.shm = true,
            "--pause-at" => {
                let k = it.next().ok_or("--pause-at needs a value")?;
                a.pause_at = Some(k.parse().map_err(|e| format!("--pause-at {k:?}: {e}"))?);
            }
            other => return Err(format!("unknown argument {other:?}; {USAGE}")),
        }
    }
    Ok(a)
}

fn say(line: &str) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").map_err(|e| e.to_string())?;
    out.flush().map_err(|e| e.to_string())
}

fn run(a: &Args) -> Result<(), String> {
    let err = |e: wshard_client::ClientError| e.to_string();
    let mut client = Client::connect_v2(&a.socket, "e2e-rust-producer").map_err(err)?;
    let transport = if a.shm {
        Transport::Shm {
            slot_bytes: 0,
            slots: 0,
            policy: RingPolicy::Block,
        }
    } else {
        Transport::Socket
    };
    let mut w = client
        .join_stream_with(a.kind.stream_open(&a.episode), transport)
        .map_err(err)?;
    say("joined")?;
    let mut step = 0;
    while step < a.steps {
        let end = match a.pause_at {
            Some(k) if step < k => k.min(a.steps),
            _ => a.steps,
        }
        .min(step + BATCH_STEPS);
        let data: Vec<Vec<Vec<u8>>> = (step..end).map(|s| a.kind.payloads(s)).collect();
        let refs: Vec<Vec<&[u8]>> = data
            .iter()
            .map(|p| p.iter().map(Vec::as_slice).collect())
            .collect();
        let steps: Vec<Step<'_>> = (step..end)
            .zip(&refs)
            .map(|(s, r)| Step {
                t_ns: a.kind.t_ns(a.t0, s),
                reward: 0.0,
                done: false,
                payloads: r,
            })
            .collect();
        w.push_batch(&steps).map_err(err)?;
        for s in (step..end).filter(|&s| a.kind.has_event(s)) {
            let seq = w.send_event(a.kind.event(a.t0, s)).map_err(err)?;
            say(&format!("event {seq} {s}"))?;
        }
        step = end;
        if a.pause_at == Some(step) {
            let durable = w.flush().map_err(err)?;
            say(&format!("paused {durable}"))?;
            let mut line = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut line)
                .map_err(|e| format!("stdin: {e}"))?;
        }
    }
    let summary = w.close(Outcome::Completed).map_err(err)?;
    say(&format!(
        "closed {} {}",
        summary.timesteps, summary.durable_up_to
    ))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = parse(&args).and_then(|a| run(&a));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("multirate_producer: {e}");
            ExitCode::FAILURE
        }
    }
}
