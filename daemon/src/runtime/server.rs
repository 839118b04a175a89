//! `run`: recovery, bind, accept until shutdown, finalize everything, return.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use wshardd_config::Config;

use crate::fsio::{Fs, RealFs};
use crate::ingest::context::{session_settings, tunables};
use crate::ingest::listener::{accept_loop, bind, BindError};
use crate::ingest::ServerContext;
use crate::recovery::{recover_all, RecoveryReport};
use crate::runtime::access::AccessPolicy;
use crate::runtime::lock::{self, LockError};

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("data directory {}: {source}", path.display())]
    DataDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Another process (a `wshardd`, or `wshard recover --apply`) holds the data directory.
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Bind(#[from] BindError),
}

/// Signals from the outside world.
#[derive(Clone, Debug, Default)]
pub struct Control {
    /// Set to stop: stop accepting, finalize every open episode as `interrupted`, return.
    pub shutdown: Arc<AtomicBool>,
    /// Set to re-read the config (SIGHUP); cleared when handled.
    pub reload: Arc<AtomicBool>,
}

/// Run the daemon with `cfg` until `control.shutdown` is set. `reload_config` re-reads the
/// config when `control.reload` is set. `on_ready` is called once recovery has finished and
/// the socket is accepting.
///
/// # Errors
/// [`RunError`] when the data directory or the socket cannot be set up, or when another
/// process holds the data directory's lock (`data_dir/.wshardd.lock`).
pub fn run(
    cfg: &Config,
    control: &Control,
    reload_config: &(dyn Fn() -> Option<Config> + Sync),
    on_ready: &dyn Fn(&[RecoveryReport]),
) -> Result<(), RunError> {
    let fs: Arc<dyn Fs> = Arc::new(RealFs);
    fs.create_dir_all(&cfg.data_dir)
        .map_err(|source| RunError::DataDir {
            path: cfg.data_dir.clone(),
            source,
        })?;
    // Held until `run` returns: nobody else recovers or records into this directory.
    let _data_dir_lock = lock::acquire(&cfg.data_dir)?;
    let settings = session_settings(cfg);
    let mut recovered = Vec::new();
    for r in recover_all(&fs, &cfg.data_dir, &settings) {
        match r {
            Ok(report) => {
                tracing::warn!("recovery: {}", report.summary());
                recovered.push(report);
            }
            Err((episode, e)) => {
                tracing::error!(episode, "recovery failed, files left as they were: {e}")
            }
        }
    }
    let listener = bind(&cfg.socket.path, cfg.socket.mode)?;
    let ctx = Arc::new(ServerContext::new(cfg, fs, control.shutdown.clone()));
    if let Ok(mut r) = ctx.registry.recovery.lock() {
        r.clone_from(&recovered);
    }
    tracing::info!(socket = %cfg.socket.path.display(), data_dir = %cfg.data_dir.display(), "wshardd ready");
    on_ready(&recovered);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !control.shutdown.load(Ordering::Acquire) {
                if control.reload.swap(false, Ordering::AcqRel) {
                    if let Some(new) = reload_config() {
                        let (applied, restart) = cfg.reloadable_diff(&new);
                        if let Ok(mut t) = ctx.tunables.write() {
                            *t = tunables(&new);
                        }
                        if let Ok(mut a) = ctx.access.write() {
                            *a = AccessPolicy::from_config(&new);
                        }
                        tracing::info!(
                            ?applied,
                            ?restart,
                            "configuration reloaded (changes needing a restart were ignored)"
                        );
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        });
        accept_loop(&listener, &ctx);
    });
    drop(listener);
    let _ = std::fs::remove_file(&cfg.socket.path);
    tracing::info!("wshardd stopped: every open episode was finalized");
    Ok(())
}
