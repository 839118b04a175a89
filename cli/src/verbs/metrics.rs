//! `wshard metrics`: a running wshardd's Prometheus text exposition, as the daemon wrote
//! it.

use std::io::Write;
use std::time::Duration;

use wshard_recorder::control::protocol::Request;

use crate::control_socket::args::ControlArgs;
use crate::control_socket::call::{call, report_error};
use crate::control_socket::client::Reply;
use crate::exit_status::exit;

/// A running wshardd's counters in the Prometheus text format
///
/// Exit codes: 0 done, 1 the daemon refused, 2 it cannot be reached (no daemon, bad config)
/// or its reply is bad.
#[derive(Debug, clap::Args)]
pub struct MetricsArgs {
    #[command(flatten)]
    pub control: ControlArgs,
}

/// Run `wshard metrics`; returns the exit code.
pub fn run(args: MetricsArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let opts = &args.control.options();
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
