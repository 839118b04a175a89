//! `wshard split EPISODE`: cut an open episode while it records, through the daemon's
//! control socket. Everything recorded so far becomes a finalized `complete` episode of its
//! own (the part), and recording goes on into the next part (`EP.0001`, `EP.0002`, ...);
//! the producer notices nothing.

use std::io::{self, Write};
use std::time::Duration;

use serde_json::Value;
use wshard_recorder::control::protocol::Request;
use wshard_recorder::control::split::SPLIT_WAIT;

use crate::control_socket::args::ControlArgs;
use crate::control_socket::call::run_json_verb;

/// Cut an open episode into a finished part and the next part, recording on
///
/// Cut an open episode at its next timestep (a multi-stream episode: every stream, each at
/// its own next timestep, into the next part's streams/; one stream alone is not split):
/// everything recorded so far is
/// finalized `complete` as a part of its own (the first part keeps the episode id), and
/// recording goes on into the next part, `EPISODE.0001`, `EPISODE.0002`, ...; the producer
/// keeps its connection, its seqs and its DURABLE acknowledgements. Parts are linked in
/// their manifests (`split`: episode, part, first_seq, previous, next). `status` and the
/// control verbs keep naming the episode by the producer's id. Needs root, the daemon's uid
/// or gid, or control.admin_uids/admin_gids.
///
/// Exit codes: 0 done, 1 the daemon refused (unknown episode, a stream alone, empty
/// part, part id too long, permission denied), 2 it cannot be reached (no daemon, bad
/// config) or its reply is bad.
#[derive(Debug, clap::Args)]
pub struct SplitArgs {
    /// The episode id (the producer's: the current part is found from it).
    pub episode: String,
    #[command(flatten)]
    pub control: ControlArgs,
}

/// Run `wshard split`; returns the exit code.
pub fn run(args: SplitArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let opts = &args.control.options();
    let req = Request::Split {
        episode: args.episode,
    };
    let t = SPLIT_WAIT + Duration::from_secs(10);
    run_json_verb("split", opts, &req, t, render_split, out, err)
}

/// The `split` result as text.
///
/// # Errors
/// Errors writing to `out`.
pub fn render_split(r: &Value, out: &mut dyn Write) -> io::Result<()> {
    let s = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
    writeln!(
        out,
        "episode `{}` split: part `{}` finished (complete), now recording `{}`",
        s(&r["episode"]),
        s(&r["finished"]),
        s(&r["recording"])
    )?;
    // A multi-stream episode: a stream its producer ended before its cut.
    for n in r["not_cut"].as_array().into_iter().flatten() {
        writeln!(
            out,
            "  stream `{}` not cut (it ends in `{}`): {}",
            s(&n["stream"]),
            s(&r["finished"]),
            s(&n["reason"])
        )?;
    }
    Ok(())
}
