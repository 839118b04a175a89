//! `wshard annotate EPISODE --at T --label L [--text S | --json J]`: add an operator
//! annotation to an episode through the daemon's control socket (verb `annotate`, admin
//! only). `T` is an integer `t_ns`, or `+N` with a unit `s`, `ms`, `us` or `ns` (`+12.5s`)
//! counted from the episode's first timestamp; the daemon resolves it.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use wshard::episode_dir::events::EventData;
use wshard_recorder::control::annotate_request::{parse_at, AnnotateRequest};
use wshard_recorder::control::protocol::Request;

use crate::control_socket::call::{run_json_verb, ControlOptions};
use crate::control_socket::render::render_annotate;
use crate::exit_status::exit;

/// Add an operator annotation to an episode (through the daemon; admin only)
///
/// The episode may be recording or finalized; the annotation is committed by the daemon.
///
/// Exit codes: 0 added, 1 the daemon refused (unknown episode, permission denied), 2 a bad
/// --at or --json, no daemon, or a bad reply.
#[derive(Clone, Debug, clap::Args)]
pub struct AnnotateArgs {
    /// The episode (recording or finalized, single- or multi-stream).
    pub episode: String,
    /// When: an integer t_ns, or +N followed by s, ms, us or ns after the episode's first
    /// timestamp (e.g. +12.5s).
    #[arg(long, value_name = "T", allow_hyphen_values = true)]
    pub at: String,
    /// What it is, e.g. `success`.
    #[arg(long, value_name = "L")]
    pub label: String,
    /// A text payload.
    #[arg(long, value_name = "S", conflicts_with = "json")]
    pub text: Option<String>,
    /// A JSON payload (one JSON value).
    #[arg(long, value_name = "J")]
    pub json: Option<String>,
    /// The control socket itself.
    #[arg(long, value_name = "PATH")]
    pub control: Option<PathBuf>,
    /// The config naming `control.path`.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Print the daemon's reply document (JSON) instead of a sentence.
    #[arg(long)]
    pub reply_json: bool,
}

/// Run `wshard annotate`; returns the exit code (0 added, 1 refused, 2 usage or I/O).
pub fn run(args: AnnotateArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let at = match parse_at(&args.at) {
        Ok(at) => at,
        Err(e) => {
            let _ = writeln!(err, "wshard annotate: --at: {e}");
            return exit::ERROR;
        }
    };
    let data = match (args.text, args.json) {
        (Some(t), _) => EventData::Text(t),
        (None, Some(j)) => match serde_json::from_str(&j) {
            Ok(v) => EventData::Json(v),
            Err(e) => {
                let _ = writeln!(err, "wshard annotate: --json is not JSON: {e}");
                return exit::ERROR;
            }
        },
        (None, None) => EventData::Text(String::new()),
    };
    let req = AnnotateRequest {
        episode: args.episode,
        at,
        label: args.label,
        data,
    };
    let opts = ControlOptions {
        control: args.control,
        config: args.config,
        json: args.reply_json,
    };
    annotate(&opts, req, out, err)
}

/// `wshard annotate EPISODE`: one operator annotation, committed by the daemon.
fn annotate(
    opts: &ControlOptions,
    req: AnnotateRequest,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let t = Duration::from_secs(10);
    let req = Request::Annotate(req);
    run_json_verb("annotate", opts, &req, t, render_annotate, out, err)
}
