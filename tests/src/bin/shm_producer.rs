//! A client process streaming one episode over the shared-memory ring until it is killed,
//! for `shm_hostile_producer_killed`. Usage: `shm_producer SOCKET EPISODE_ID`.
//!
//! It prints `pushing N` before publishing the steps below `N` (so at most `N` steps can be
//! in the ring) and `durable N` after each `flush`, one line each, flushed at once.

use std::io::Write;
use std::process::ExitCode;

use wshard_client::{Client, Durability, RingPolicy, Transport};
use wshard_e2e::data;

fn run(socket: &str, id: &str) -> Result<(), String> {
    let ch = data::channels();
    let mut client =
        Client::connect(socket, "wshard-e2e/shm-producer").map_err(|e| e.to_string())?;
    let transport = Transport::Shm {
        slot_bytes: 4096,
        slots: 8,
        policy: RingPolicy::Block,
    };
    let mut w = client
        .open_episode_with(data::open_spec(id, &ch, Durability::Ack), transport)
        .map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    for round in 0u64.. {
        let next = w.next_seq() + 13;
        writeln!(out, "pushing {next}").map_err(|e| e.to_string())?;
        out.flush().map_err(|e| e.to_string())?;
        data::push_steps(&mut w, &ch, 13).map_err(|e| e.to_string())?;
        if round % 4 == 3 {
            let d = w.flush().map_err(|e| e.to_string())?;
            writeln!(out, "durable {d}").map_err(|e| e.to_string())?;
            out.flush().map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [socket, id] = args.as_slice() else {
        eprintln!("usage: shm_producer SOCKET EPISODE_ID");
        return ExitCode::from(2);
    };
    match run(socket, id) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shm_producer: {e}");
            ExitCode::FAILURE
        }
    }
}
