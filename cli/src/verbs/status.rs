//! `wshard status`: a running wshardd's version, uptime, disk, counters, recovery results
//! and open episodes, printed as text or (`--json`) as the daemon's reply.

use std::io::Write;
use std::time::Duration;

use wshard_recorder::control::protocol::Request;

use crate::control_socket::args::ControlArgs;
use crate::control_socket::call::run_json_verb;
use crate::control_socket::render::render_status;
use crate::control_socket::render_parts;

/// A running wshardd's version, uptime, disk, counters and open episodes
///
/// A running wshardd: version, uptime, disk, counters, recovery results, and every open
/// episode with its counters and rates.
///
/// Exit codes: 0 done, 1 the daemon refused, 2 it cannot be reached (no daemon, bad config)
/// or its reply is bad.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub control: ControlArgs,
}

/// Run `wshard status`; returns the exit code.
pub fn run(args: StatusArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let opts = &args.control.options();
    let t = Duration::from_secs(10);
    run_json_verb(
        "status",
        opts,
        &Request::Status,
        t,
        |r, out| {
            render_status(r, out)?;
            render_parts::render(r, out)
        },
        out,
        err,
    )
}
