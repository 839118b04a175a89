//! `wshard keep EPISODE [--release]`: mark an episode kept (never evicted from the data
//! directory by retention, the quota or the low watermark), or remove the mark, through
//! the daemon's control socket.

use std::io::Write;
use std::time::Duration;

use wshard_recorder::control::protocol::Request;

use crate::control_socket::args::ControlArgs;
use crate::control_socket::call::run_json_verb;
use crate::control_socket::render::render_keep;

/// How long to wait for the daemon's answer (the mark is one small synced file).
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// Keep an episode: never evict its local copy (or --release the mark)
///
/// Mark an episode of the data directory (open or finished, single- or multi-stream,
/// recorded or imported) as kept: the uploader's retention (delete_after_publish), the
/// quota and the low watermark never evict it. The mark (data_dir/.keep/EPISODE) is durable
/// when the command returns. --release removes it. Needs root, the daemon's uid or gid, or
/// control.admin_uids/admin_gids.
///
/// Exit codes: 0 done, 1 the daemon refused (unknown episode, permission denied), 2 it
/// cannot be reached (no daemon, bad config), the id is no episode id (BAD_REQUEST), the
/// mark could not be stored (STORAGE) or the reply is bad.
#[derive(Debug, clap::Args)]
pub struct KeepArgs {
    /// The episode id.
    pub episode: String,
    /// Remove the mark: the episode may be evicted again.
    #[arg(long)]
    pub release: bool,
    #[command(flatten)]
    pub control: ControlArgs,
}

/// Run `wshard keep`; returns the exit code.
pub fn run(args: KeepArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let opts = &args.control.options();
    let req = Request::Keep {
        episode: args.episode,
        release: args.release,
    };
    run_json_verb("keep", opts, &req, REPLY_TIMEOUT, render_keep, out, err)
}
