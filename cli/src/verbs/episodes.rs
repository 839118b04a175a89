//! `wshard episodes`: a running wshardd's open episodes and those finished in its data
//! directory, printed as text or (`--json`) as the daemon's reply.

use std::io::Write;
use std::time::Duration;

use wshard_recorder::control::protocol::Request;

use crate::control_socket::args::ControlArgs;
use crate::control_socket::call::run_json_verb;
use crate::control_socket::render::render_episodes;

/// A running wshardd's episodes, open and finished, with their counters
///
/// The open episodes and those finished in the daemon's data directory, with status,
/// timesteps, chunks and bytes.
///
/// Exit codes: 0 done, 1 the daemon refused, 2 it cannot be reached (no daemon, bad config)
/// or its reply is bad.
#[derive(Debug, clap::Args)]
pub struct EpisodesArgs {
    #[command(flatten)]
    pub control: ControlArgs,
}

/// Run `wshard episodes`; returns the exit code.
pub fn run(args: EpisodesArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let opts = &args.control.options();
    let t = Duration::from_secs(30);
    run_json_verb(
        "episodes",
        opts,
        &Request::Episodes,
        t,
        render_episodes,
        out,
        err,
    )
}
