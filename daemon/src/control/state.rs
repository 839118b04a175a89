//! What the control threads share: the server context, the control settings from the
//! config, and the per-episode rate sampler (with its sampling loop).

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wshardd_config::Config;

use super::rates::{RateSampler, SAMPLE_EVERY};
use crate::runtime::ServerContext;
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
    /// Held while an annotation is committed: one read-append-replace at a time.
    pub annotations: std::sync::Mutex<()>,
}

impl ControlState {
    /// The state for `ctx`.
    #[must_use]
    pub fn new(ctx: Arc<ServerContext>, settings: ControlSettings) -> Self {
        Self {
            ctx,
            settings,
            rates: RateSampler::default(),
            annotations: std::sync::Mutex::new(()),
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
