//! A client process for the access tests, run as another uid: connect, OPEN `EPISODE_ID`,
//! push `N` timesteps, CLOSE. Usage: `access_client SOCKET EPISODE_ID N`.
//!
//! Prints one line: `ok N` (exit 0), or `server CODE: MESSAGE` / `error: MESSAGE` (exit 1).

use std::process::ExitCode;

use wshard_client::{Client, ClientError, Durability, Outcome};
use wshard_e2e::data;

fn run(socket: &str, id: &str, n: u64) -> Result<u64, ClientError> {
    let ch = data::channels();
    let mut client = Client::connect(socket, "wshard-e2e/access-client")?;
    let mut w = client.open_episode(data::open_spec(id, &ch, Durability::Ack))?;
    data::push_steps(&mut w, &ch, n)?;
    Ok(w.close(Outcome::Completed)?.timesteps)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(socket), Some(id), Some(n)) = (args.get(1), args.get(2), args.get(3)) else {
        eprintln!("usage: access_client SOCKET EPISODE_ID N");
        return ExitCode::from(2);
    };
    let Ok(n) = n.parse::<u64>() else {
        eprintln!("N must be a number, not {n:?}");
        return ExitCode::from(2);
    };
    match run(socket, id, n) {
        Ok(t) => {
            println!("ok {t}");
            ExitCode::SUCCESS
        }
        Err(ClientError::Server { code, message }) => {
            println!("server {}: {message}", code.name());
            ExitCode::FAILURE
        }
        Err(e) => {
            println!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
