//! `wshard abort EPISODE`: finalize an open episode as `aborted` (its data kept) through the
//! daemon's control socket, waiting up to `--timeout-ms` (default 10 s) for it to be
//! finalized.

use std::io::Write;
use std::time::Duration;

use wshard_recorder::control::protocol::{Request, DEFAULT_CLOSE_TIMEOUT_MS};

use crate::control_socket::args::ControlArgs;
use crate::control_socket::call::run_json_verb;
use crate::control_socket::render::render_close;

/// Finalize an open episode as `aborted` (aborted by operator)
///
/// Finalize an open episode, or every stream of an open multi-stream episode, as `aborted`:
/// every timestep received so far is kept, the status says the recording is not to be
/// used as complete ("aborted by operator"); its producer gets ERROR STOPPED saying so.
/// Needs root, the daemon's uid or gid, or control.admin_uids/admin_gids.
///
/// Exit codes: 0 done, 1 the daemon refused (unknown episode, permission denied) or the
/// abort timed out, 2 it cannot be reached (no daemon, bad config) or its reply is bad.
#[derive(Debug, clap::Args)]
pub struct AbortArgs {
    /// The episode id (or `EPISODE/STREAM` for one stream of a multi-stream episode).
    pub episode: String,
    /// How long to wait for the episode to be finalized, in milliseconds (default 10000).
    #[arg(long, value_name = "MS")]
    pub timeout_ms: Option<u64>,
    #[command(flatten)]
    pub control: ControlArgs,
}

/// Run `wshard abort`; returns the exit code.
pub fn run(args: AbortArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let opts = &args.control.options();
    let timeout_ms = args.timeout_ms.unwrap_or(DEFAULT_CLOSE_TIMEOUT_MS);
    let req = Request::Abort {
        episode: args.episode,
        timeout_ms,
    };
    let t = Duration::from_millis(timeout_ms) + Duration::from_secs(10);
    run_json_verb("abort", opts, &req, t, render_close, out, err)
}
