//! `wshard status`, `wshard episodes`, `wshard close EPISODE`, `wshard annotate EPISODE`,
//! `wshard metrics`: the
//! control socket's verbs, printed as text or (`--json`) as the daemon's JSON reply.
//!
//! Exit codes: 0 done; 1 the daemon refused or could not do it (unknown episode,
//! permission denied, close timed out); 2 usage or I/O (no daemon, bad config, bad reply).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::client::{request, socket_path, Reply};
use super::render::{render_annotate, render_close, render_episodes, render_status};
use wshard_recorder::control::annotate_request::AnnotateRequest;
use wshard_recorder::control::protocol::{Request, DEFAULT_CLOSE_TIMEOUT_MS};

/// Where the control socket is and how to print.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ControlOptions {
    /// `--control PATH`: the socket itself.
    pub control: Option<PathBuf>,
    /// `--config PATH`: the config naming `control.path`.
    pub config: Option<PathBuf>,
    /// `--json`: print the daemon's reply document.
    pub json: bool,
}

/// Exit codes of the control verbs.
pub mod exit {
    pub const OK: u8 = 0;
    /// The daemon refused or failed the request.
    pub const REFUSED: u8 = 1;
    /// Usage or I/O: no daemon, bad config, unreadable reply.
    pub const ERROR: u8 = 2;
}

/// The error codes that mean "the request was understood and refused" (exit 1).
const REFUSALS: [&str; 3] = ["UNKNOWN_EPISODE", "PERMISSION_DENIED", "TIMEOUT"];

fn call(
    name: &str,
    opts: &ControlOptions,
    req: &Request,
    timeout: Duration,
    err: &mut dyn Write,
) -> Result<Reply, u8> {
    let path = socket_path(opts.control.as_deref(), opts.config.as_deref()).map_err(|e| {
        let _ = writeln!(err, "wshard {name}: {e}");
        exit::ERROR
    })?;
    request(&path, req, timeout).map_err(|e| {
        let _ = writeln!(err, "wshard {name}: {e}");
        exit::ERROR
    })
}

/// Print an `{"ok":false}` reply; returns the exit code.
fn report_error(
    name: &str,
    doc: &Value,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let code = doc["error"]["code"].as_str().unwrap_or("?");
    let message = doc["error"]["message"].as_str().unwrap_or("(no message)");
    if json {
        let _ = writeln!(out, "{doc}");
    }
    let _ = writeln!(err, "wshard {name}: {code}: {message}");
    if REFUSALS.contains(&code) {
        exit::REFUSED
    } else {
        exit::ERROR
    }
}

type Render = fn(&Value, &mut dyn Write) -> std::io::Result<()>;

fn run_json_verb(
    name: &str,
    opts: &ControlOptions,
    req: &Request,
    timeout: Duration,
    render: Render,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let doc = match call(name, opts, req, timeout, err) {
        Ok(Reply::Json(doc)) => doc,
        Ok(Reply::Text(_)) => {
            let _ = writeln!(
                err,
                "wshard {name}: the daemon answered with text, not JSON"
            );
            return exit::ERROR;
        }
        Err(code) => return code,
    };
    if doc["ok"] != Value::Bool(true) {
        return report_error(name, &doc, opts.json, out, err);
    }
    let written = if opts.json {
        writeln!(out, "{doc}")
    } else {
        render(&doc["result"], out)
    };
    match written {
        Ok(()) => exit::OK,
        Err(e) => {
            let _ = writeln!(err, "wshard {name}: writing the output: {e}");
            exit::ERROR
        }
    }
}

/// `wshard status`.
pub fn status(opts: &ControlOptions, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let t = Duration::from_secs(10);
    run_json_verb("status", opts, &Request::Status, t, render_status, out, err)
}

/// `wshard episodes`.
pub fn episodes(opts: &ControlOptions, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
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

/// `wshard close EPISODE`: waits up to `timeout_ms` (default 10 s) for the episode to be
/// finalized.
pub fn close(
    opts: &ControlOptions,
    episode: &str,
    timeout_ms: Option<u64>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let timeout_ms = timeout_ms.unwrap_or(DEFAULT_CLOSE_TIMEOUT_MS);
    let req = Request::Close {
        episode: episode.to_owned(),
        timeout_ms,
    };
    let t = Duration::from_millis(timeout_ms) + Duration::from_secs(10);
    run_json_verb("close", opts, &req, t, render_close, out, err)
}

/// `wshard annotate EPISODE`: one operator annotation, committed by the daemon.
pub fn annotate(
    opts: &ControlOptions,
    req: AnnotateRequest,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let t = Duration::from_secs(10);
    let req = Request::Annotate(req);
    run_json_verb("annotate", opts, &req, t, render_annotate, out, err)
}

/// `wshard metrics`: the Prometheus text exposition, as the daemon wrote it.
pub fn metrics(opts: &ControlOptions, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match call(
        "metrics",
        opts,
        &Request::Metrics,
        Duration::from_secs(10),
        err,
    ) {
        Ok(Reply::Text(text)) => match out.write_all(text.as_bytes()) {
            Ok(()) => exit::OK,
            Err(e) => {
                let _ = writeln!(err, "wshard metrics: writing the output: {e}");
                exit::ERROR
            }
        },
        Ok(Reply::Json(doc)) => report_error("metrics", &doc, opts.json, out, err),
        Err(code) => code,
    }
}
