//! `wshard upload status|retry|drop [EPISODE]`: the daemon's upload queue, through its
//! control socket: list the entries (state, attempts, last error), try an episode again
//! now, or drop it from the queue (its files kept, never evicted).

use std::io::{self, Write};
use std::time::Duration;

use serde_json::Value;
use wshard_recorder::control::protocol::{Request, UploadAction};

use crate::control_socket::args::ControlArgs;
use crate::control_socket::call::run_json_verb;

/// How long to wait for the daemon's answer (`drop` waits for the upload thread to record
/// it, up to 20 s).
const REPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// The robot's upload queue: list it, retry or drop an episode
///
/// `status [EPISODE]` lists the queue's entries (or one episode's): state (queued,
/// uploading, uploaded, published, evicting, evicted, dropped), bytes not yet on the
/// store, failed attempts since the daemon started and the last error. `retry EPISODE`
/// tries the episode again now (the uploader's backoff starts over; an episode left out
/// until a restart is taken back). `drop EPISODE` removes it from the queue, durably: it is
/// never uploaded, published or evicted afterwards, and its files are never touched.
/// `retry` and `drop` need root, the daemon's uid or gid, or control.admin_uids/admin_gids;
/// `status` the ingest allowlist.
///
/// Exit codes: 0 done, 1 the daemon refused (UNKNOWN_EPISODE: not in the queue nor the data
/// directory; NOT_QUEUED: not waiting in the queue; PERMISSION_DENIED; TIMEOUT), 2 it cannot
/// be reached (no daemon, bad config), the id is no episode id (BAD_REQUEST) or the reply
/// is bad.
#[derive(Debug, clap::Args)]
pub struct UploadArgs {
    #[command(subcommand)]
    pub action: UploadVerb,
}

/// What to do.
#[derive(Debug, clap::Subcommand)]
pub enum UploadVerb {
    /// List the queue's entries, or one episode's
    Status {
        /// Only this episode.
        episode: Option<String>,
        #[command(flatten)]
        control: ControlArgs,
    },
    /// Try an episode again now (the backoff starts over)
    Retry {
        /// The episode id.
        episode: String,
        #[command(flatten)]
        control: ControlArgs,
    },
    /// Drop an episode from the queue (its files kept, never evicted)
    Drop {
        /// The episode id.
        episode: String,
        #[command(flatten)]
        control: ControlArgs,
    },
}

/// Run `wshard upload`; returns the exit code.
pub fn run(args: UploadArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let (action, episode, control) = match args.action {
        UploadVerb::Status { episode, control } => (UploadAction::Status, episode, control),
        UploadVerb::Retry { episode, control } => (UploadAction::Retry, Some(episode), control),
        UploadVerb::Drop { episode, control } => (UploadAction::Drop, Some(episode), control),
    };
    let opts = &control.options();
    let req = Request::Upload { action, episode };
    let render: fn(&Value, &mut dyn Write) -> io::Result<()> = match action {
        UploadAction::Status => render_entries,
        UploadAction::Retry => render_retry,
        UploadAction::Drop => render_drop,
    };
    run_json_verb("upload", opts, &req, REPLY_TIMEOUT, render, out, err)
}

fn text(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The `upload status` result: one line per entry.
fn render_entries(r: &Value, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "uploader: {}", text(&r["state"]))?;
    let entries = r["entries"].as_array().map_or(&[][..], Vec::as_slice);
    if entries.is_empty() {
        return writeln!(out, "the upload queue is empty");
    }
    writeln!(
        out,
        "{:<32} {:<10} {:>14} {:>8}  LAST ERROR",
        "EPISODE", "STATE", "PENDING BYTES", "ATTEMPTS"
    )?;
    for e in entries {
        let last = match &e["last_error"] {
            Value::Null => "-".to_owned(),
            le => format!("{}: {}", text(&le["kind"]), text(&le["message"])),
        };
        writeln!(
            out,
            "{:<32} {:<10} {:>14} {:>8}  {last}",
            text(&e["episode"]),
            text(&e["state"]),
            text(&e["pending_bytes"]),
            text(&e["attempts"]),
        )?;
    }
    Ok(())
}

fn render_retry(r: &Value, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "episode `{}` ({}): the uploader tries it again now",
        text(&r["episode"]),
        text(&r["state"])
    )
}

fn render_drop(r: &Value, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "episode `{}` dropped from the upload queue (was {}): it is not uploaded; its files \
         are kept and never evicted",
        text(&r["episode"]),
        text(&r["was"])
    )
}
