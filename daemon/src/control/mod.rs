//! The operator's control plane: the control socket and the optional Prometheus endpoint.
//! It may call `ingest` (peer credentials), `runtime` (the server context) and what is below.
//!
//! The operator's control socket (`wshard status`, `episodes`, `close`, `metrics`) and the
//! optional loopback HTTP endpoint for Prometheus. The protocol is in `docs/CONTROL.md`.
//!
//! - [`protocol`]: requests, replies, typed error codes.
//! - [`request_io`]: reading one bounded request before a deadline.
//! - [`server`]: the control socket's accept loop, access checks, dispatch.
//! - [`status`]: the `status` snapshot. [`episodes`]: the `episodes` list.
//! - [`on_disk`]: an episode's chunk-file bytes and length from its manifest, for both.
//! - [`close`]: `close EPISODE`. [`metrics`]: the exposition (prometheus-client).
//! - [`rates`]: per-episode rates, from samples taken every second.
//! - [`http`]: `GET /metrics` on `control.metrics_listen` (hyper on a one-thread tokio
//!   runtime of its own).
//! - [`accept`]: the control socket's accept loop (a thread per request).
//!
//! [`spawn`] starts everything in a [`std::thread::Scope`], from a listener bound with
//! [`crate::runtime::listeners::bind`] or handed over by socket activation. The control socket
//! stays on threads: its `close` verb blocks while an episode is finalized.

pub mod accept;
pub mod close;
pub mod episodes;
pub mod http;
pub mod metrics;
pub mod on_disk;
pub mod protocol;
pub mod rates;
pub mod request_io;
pub mod server;
pub mod status;

use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::Scope;
use std::time::{Duration, Instant};

use wshardd_config::Config;

use crate::runtime::ServerContext;
use rates::{RateSampler, SAMPLE_EVERY};

/// What the control socket needs from the config besides the server context (the disk
/// watermarks are read from `ctx.disk`, which SIGHUP updates).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControlSettings {
    /// The control socket path (reported by `status`).
    pub socket_path: PathBuf,
}

impl ControlSettings {
    /// The settings of `cfg`.
    #[must_use]
    pub fn from_config(cfg: &Config) -> Self {
        Self {
            socket_path: cfg.control.path.clone(),
        }
    }
}

/// Shared by the control threads.
#[derive(Debug)]
pub struct ControlState {
    pub ctx: Arc<ServerContext>,
    pub settings: ControlSettings,
    pub rates: RateSampler,
}

impl ControlState {
    /// The state for `ctx`.
    #[must_use]
    pub fn new(ctx: Arc<ServerContext>, settings: ControlSettings) -> Self {
        Self {
            ctx,
            settings,
            rates: RateSampler::default(),
        }
    }
}

/// Sample the episodes' counters every [`SAMPLE_EVERY`] until shutdown.
pub fn sample_loop(st: &ControlState) {
    let mut next = Instant::now();
    while !st.ctx.shutdown.load(Ordering::Acquire) {
        if Instant::now() >= next {
            st.rates.sample(&st.ctx.registry);
            next += SAMPLE_EVERY;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

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
