//! `wshard close EPISODE`: finalize an open episode as `interrupted` through the daemon's
//! control socket, waiting up to `--timeout-ms` (default 10 s) for it to be finalized.

use std::io::Write;
use std::time::Duration;

use wshard_recorder::control::protocol::{Request, DEFAULT_CLOSE_TIMEOUT_MS};

use crate::control_socket::args::ControlArgs;
use crate::control_socket::call::run_json_verb;
use crate::control_socket::render::render_close;

/// Finalize an open episode as `interrupted` (closed by operator)
///
/// Finalize an open episode as `interrupted` ("closed by operator"); its client gets ERROR
/// STOPPED. Needs root, the daemon's uid or gid, or control.admin_uids/admin_gids.
///
/// Exit codes: 0 done, 1 the daemon refused (unknown episode, permission denied) or the
/// close timed out, 2 it cannot be reached (no daemon, bad config) or its reply is bad.
#[derive(Debug, clap::Args)]
pub struct CloseArgs {
    /// The episode id.
    pub episode: String,
    /// How long to wait for the episode to be finalized, in milliseconds (default 10000).
    #[arg(long, value_name = "MS")]
    pub timeout_ms: Option<u64>,
    #[command(flatten)]
    pub control: ControlArgs,
}

/// Run `wshard close`; returns the exit code.
pub fn run(args: CloseArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let opts = &args.control.options();
    let timeout_ms = args.timeout_ms.unwrap_or(DEFAULT_CLOSE_TIMEOUT_MS);
    let req = Request::Close {
        episode: args.episode,
        timeout_ms,
    };
    let t = Duration::from_millis(timeout_ms) + Duration::from_secs(10);
    run_json_verb("close", opts, &req, t, render_close, out, err)
}
