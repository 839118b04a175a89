//! One call of a control socket verb (`wshard status`, `episodes`, `close EPISODE`,
//! `annotate EPISODE`, `metrics`): the request sent, the reply printed as text or (`--json`)
//! as the daemon's JSON reply, a refusal reported.
//!
//! Exit codes: 0 done; 1 the daemon refused or could not do it (unknown episode,
//! permission denied, close timed out); 2 usage or I/O (no daemon, bad config, bad reply).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::client::{request, socket_path, Reply};
use crate::exit_status::exit;
use wshard_recorder::control::protocol::Request;

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

/// The error codes that mean "the request was understood and refused" (exit 1).
const REFUSALS: [&str; 14] = [
    "UNKNOWN_EPISODE",
    "PERMISSION_DENIED",
    "TIMEOUT",
    "NOT_SPLITTABLE",
    "EMPTY_PART",
    "PART_ID_TOO_LONG",
    "PART_EXISTS",
    "NO_FLIGHT_STREAM",
    "UNKNOWN_STREAM",
    "NOTHING_RECORDED",
    "QUOTA_EXCEEDED",
    "PART_FINISHED",
    "WINDOW_PENDING",
    "NOT_QUEUED",
];

/// Send `req` to the control socket of `opts`; on failure, say why on `err` and give the
/// exit code.
pub fn call(
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
pub fn report_error(
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

/// Prints a reply's `result` as text.
pub type Render = fn(&Value, &mut dyn Write) -> std::io::Result<()>;

/// Run a verb whose reply is JSON: send `req`, then print the reply (`--json`) or its
/// `result` through `render`, or report the refusal; returns the exit code.
pub fn run_json_verb(
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
