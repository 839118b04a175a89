//! The operator's control plane: the control socket and the optional Prometheus endpoint.
//! It may call `ingest` (peer credentials), `runtime` (the server context) and what is below.
//!
//! The operator's control socket (`wshard status`, `episodes`, `close`, `stop`, `abort`,
//! `keep`, `split`, `trigger`, `upload`, `annotate`, `metrics`) and the
//! optional loopback HTTP endpoint for Prometheus. The protocol is in `docs/CONTROL.md`.
//!
//! - [`protocol`]: requests, replies, typed error codes.
//! - [`request_io`]: reading one bounded request before a deadline.
//! - [`server`]: the control socket's accept loop, access checks, dispatch.
//! - [`status`]: the `status` snapshot. [`episodes`]: the `episodes` list.
//! - [`on_disk`]: an episode's chunk-file bytes and length from its manifest, for both.
//! - [`close`]: `close`, `stop` and `abort EPISODE` (they differ by the final status).
//! - [`keep`]: `keep EPISODE` (the keep mark that exempts it from eviction).
//! - [`part_target`]: what an episode id names for `close`, `stop`, `abort`, `keep` and
//!   `split` (an open episode by its id or its part recording now, a finished part).
//! - [`multi_parts`]: a multi-stream episode's parts in `status`, `episodes`, the metrics.
//! - [`upload_verb`]: `upload status|retry|drop [EPISODE]` (the upload queue's entries, an
//!   operator's retry or drop).
//! - [`metrics`]: the exposition (prometheus-client).
//! - [`annotate`]: `annotate EPISODE`, with its arguments in [`annotate_request`].
//! - [`trigger`]: `trigger` (the flight recorder's windows), with its arguments in
//!   [`trigger_request`].
//! - [`upload`]: the robot's uploader in `status`, `episodes` and the metrics.
//!   [`flight_metrics`]: the flight recorder's rings and triggers in the metrics.
//! - [`unix_time`]: times as seconds since the epoch, and [`families`]: writing one metric
//!   family; two leaves the JSON views and the metrics share.
//! - [`rates`]: per-episode rates, from samples taken every second.
//! - [`http`]: `GET /metrics` on `control.metrics_listen` (hyper on a one-thread tokio
//!   runtime of its own).
//! - [`accept`]: the control socket's accept loop (a thread per request).
//! - [`state`]: what the control threads share ([`ControlState`]); the children use it, and
//!   only this file uses the children, so no two of these modules use each other.
//!
//! [`spawn`] starts everything in a [`std::thread::Scope`], from a listener bound with
//! `crate::runtime::listeners::bind` or handed over by socket activation. The control socket
//! stays on threads: its `close` verb blocks while an episode is finalized.

pub mod accept;
pub mod annotate;
pub mod annotate_request;
pub mod close;
pub mod episodes;
pub mod families;
pub mod flight_metrics;
pub mod http;
pub mod keep;
pub mod metrics;
pub mod multi_parts;
pub mod on_disk;
pub mod part_target;
pub mod parts_metrics;
pub mod protocol;
pub mod rates;
pub mod request_io;
pub mod server;
pub mod split;
pub mod split_multi;
pub mod state;
pub mod status;
pub mod trigger;
pub mod trigger_request;
pub mod unix_time;
pub mod upload;
pub mod upload_verb;

use std::os::unix::net::UnixListener;
use std::sync::Arc;
use std::thread::Scope;

use crate::runtime::ServerContext;
pub use state::{sample_loop, ControlSettings, ControlState};

/// Start the control socket on `socket`, the rate sampler, and the metrics endpoint on
/// `metrics` when there is one, as threads of `scope`; they return once `ctx.shutdown` is set.
pub fn spawn<'scope>(
    scope: &'scope Scope<'scope, '_>,
    socket: UnixListener,
    metrics: Option<http::Endpoint>,
    ctx: Arc<ServerContext>,
    settings: ControlSettings,
) {
    let st = Arc::new(ControlState::new(ctx, settings));
    let sampler = st.clone();
    scope.spawn(move || sample_loop(&sampler));
    if let Some(endpoint) = metrics {
        let s = st.clone();
        let started = std::thread::Builder::new()
            .name(http::THREAD_NAME.into())
            .spawn_scoped(scope, move || http::serve(endpoint, &s));
        if let Err(e) = started {
            tracing::error!("control.metrics_listen: cannot start its thread: {e}");
        }
    }
    scope.spawn(move || server::serve(&socket, &st));
}
