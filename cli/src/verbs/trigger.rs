//! `wshard trigger [--pre 30s] [--post 10s] [--reason TEXT] [--streams a,b] [--at T_NS]`:
//! persist the window `[t - pre, t + post]` of the daemon's flight streams as a new episode
//! through the control socket (verb `trigger`); the reply names the episode at once.

use std::io::{self, Write};
use std::time::Duration;

use serde_json::Value;
use wshard_recorder::control::protocol::Request;
use wshard_recorder::control::trigger_request::{DEFAULT_POST_MS, DEFAULT_PRE_MS};
use wshard_recorder::flight::TriggerRequest;

use crate::control_socket::args::ControlArgs;
use crate::control_socket::call::run_json_verb;

const NS_PER_MS: i64 = 1_000_000;
/// How long the CLI waits for the reply (the daemon answers at once).
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// Persist a window of the flight streams as a new episode
///
/// Persist the window [t - pre, t + post] of every stream recording in flight mode (or of
/// those named) as a new multi-stream episode; `t` is each stream's latest t_ns, or
/// `--at`. A trigger while a window is still pending extends it (`merged`). Needs root,
/// the daemon's uid or gid, or control.admin_uids/admin_gids.
///
/// Exit codes: 0 done, 1 the daemon refused (no flight stream, unknown stream, nothing
/// recorded yet, permission denied), 2 a bad request (a negative or too long window), it
/// cannot be reached (no daemon, bad config) or its reply is bad.
#[derive(Debug, clap::Args)]
pub struct TriggerArgs {
    /// Time before t kept: `30s`, `500ms`, `2m` (a bare number is seconds; default 30s).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_ms, allow_hyphen_values = true)]
    pub pre: Option<i64>,
    /// Time after t kept (default 10s).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_ms, allow_hyphen_values = true)]
    pub post: Option<i64>,
    /// Why: written as the window episode's `trigger` event.
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub reason: String,
    /// Only these streams (`EPISODE` or `EPISODE/STREAM`, comma-separated).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub streams: Option<Vec<String>>,
    /// t itself, in the producers' t_ns (default: each stream's latest t_ns).
    #[arg(long = "at", value_name = "T_NS", allow_hyphen_values = true)]
    pub at_ns: Option<i64>,
    #[command(flatten)]
    pub control: ControlArgs,
}

/// A `--pre`/`--post` value that is not a duration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("`{0}` is not a duration (30s, 500ms, 2m, 1h)")]
    NotADuration(String),
    #[error("`{0}` is too long")]
    TooLong(String),
}

/// `30s`, `500ms`, `2m`, `1h` or a bare number of seconds, in milliseconds (may be
/// negative: the daemon refuses it with a typed error).
///
/// # Errors
/// The text is none of those, or too long to count in milliseconds.
pub fn parse_duration_ms(text: &str) -> Result<i64, DurationError> {
    let t = text.trim();
    let (num, unit_ms) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1_000)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60_000)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3_600_000)
    } else {
        (t, 1_000)
    };
    let n: i64 = num
        .trim()
        .parse()
        .map_err(|_| DurationError::NotADuration(text.to_owned()))?;
    n.checked_mul(unit_ms)
        .ok_or_else(|| DurationError::TooLong(text.to_owned()))
}

fn render(r: &Value, out: &mut dyn Write) -> io::Result<()> {
    let merged = if r["merged"] == Value::Bool(true) {
        " (extends the pending window)"
    } else {
        ""
    };
    writeln!(
        out,
        "window episode `{}`{merged}: t_ns {} ..= {}",
        r["episode"].as_str().unwrap_or_default(),
        r["window_start_ns"],
        r["window_end_ns"]
    )
}

/// Run `wshard trigger`; returns the exit code.
pub fn run(args: TriggerArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let opts = &args.control.options();
    let req = Request::Trigger(TriggerRequest {
        pre_ns: args.pre.unwrap_or(DEFAULT_PRE_MS).saturating_mul(NS_PER_MS),
        post_ns: args
            .post
            .unwrap_or(DEFAULT_POST_MS)
            .saturating_mul(NS_PER_MS),
        reason: args.reason,
        streams: args.streams,
        at_ns: args.at_ns,
    });
    run_json_verb("trigger", opts, &req, REPLY_TIMEOUT, render, out, err)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn flight_cli_durations() {
        assert_eq!(parse_duration_ms("30s"), Ok(30_000));
        assert_eq!(parse_duration_ms("500ms"), Ok(500));
        assert_eq!(parse_duration_ms("2m"), Ok(120_000));
        assert_eq!(parse_duration_ms("7"), Ok(7_000));
        assert_eq!(parse_duration_ms("-1s"), Ok(-1_000));
        assert!(parse_duration_ms("soon").is_err());
    }
}
