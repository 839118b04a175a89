//! A Rust client process recording one episode in flight mode, for the `flight_deadline`
//! tests: it sends timesteps `0..STEPS` of the generator (`wshard_e2e::data`), waits for
//! them to be durable and prints `durable N`; then it stays connected and silent, reading
//! its stdin: a line `more K` sends `K` more timesteps (then `durable N` again); end of
//! input closes the episode (`closed N`). The tests SIGKILL it to cut it off.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use wshard_client::{Client, FlightMode, Outcome};
use wshard_e2e::data;
use wshard_ingest_proto::Durability;

const USAGE: &str = "usage: flight_producer SOCKET EPISODE STEPS RING_SECONDS";

fn say(line: &str) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").map_err(|e| e.to_string())?;
    out.flush().map_err(|e| e.to_string())
}

fn number(what: &str, s: &str) -> Result<u64, String> {
    s.parse().map_err(|e| format!("{what} {s:?}: {e}"))
}

fn run(args: &[String]) -> Result<(), String> {
    let [socket, episode, steps, ring] = args else {
        return Err(USAGE.into());
    };
    let steps = number("STEPS", steps)?;
    let ring = number("RING_SECONDS", ring)?;
    let err = |e: wshard_client::ClientError| e.to_string();
    let mut client = Client::connect(socket, "e2e-flight-producer").map_err(err)?;
    let ch = data::channels();
    let spec = data::open_spec(episode, &ch, Durability::Ack).flight_ring(Some(ring), None);
    let mut w = client.open_episode(spec).map_err(err)?;
    let mut send = |from: u64, to: u64| -> Result<u64, String> {
        for s in from..to {
            let payloads = data::step_payloads(s, &ch);
            let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
            w.push(data::t_ns(s), data::reward(s), false, &refs)
                .map_err(err)?;
        }
        w.flush().map_err(err)
    };
    let durable = send(0, steps)?;
    say(&format!("durable {durable}"))?;
    let mut sent = steps;
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| format!("stdin: {e}"))?;
        let Some(k) = line.strip_prefix("more ") else {
            return Err(format!("unknown command {line:?}"));
        };
        let k = number("more", k)?;
        let durable = send(sent, sent + k)?;
        sent += k;
        say(&format!("durable {durable}"))?;
    }
    let summary = w.close(Outcome::Completed).map_err(err)?;
    say(&format!("closed {}", summary.timesteps))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("flight_producer: {e}");
            ExitCode::FAILURE
        }
    }
}
