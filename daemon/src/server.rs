//! The daemon's main loop, `run`: recovery, the sockets, the ingest and control threads,
//! reload and shutdown. The top layer: it calls `runtime`, `recovery`, `ingest` and `control`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use wshardd_config::Config;

use crate::ingest::listener::accept_loop;
use crate::recovery::{recover_data_dir, RecoveryReport};
use crate::runtime::access::{AccessPolicy, GroupError};
use crate::runtime::activation::{self, ActivationError, ListenEnv};
use crate::runtime::listeners::{self, BindError, SocketError};
use crate::runtime::lock::{self, LockError};
use crate::runtime::settings::{session_settings, tunables};
use crate::runtime::supervise::Service;
use crate::runtime::ServerContext;
use wshard_storage::fsio::{Fs, RealFs};

/// How long shutdown waits for the upload thread to leave a store call.
const UPLOADER_STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

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
    /// `control.metrics_listen` cannot be bound.
    #[error(transparent)]
    MetricsListen(#[from] crate::control::http::MetricsBindError),
    /// `access.socket_group` names no group, or the socket cannot be given to it.
    #[error(transparent)]
    SocketGroup(#[from] GroupError),
    /// The sockets passed by systemd (`LISTEN_FDS`) are unusable.
    #[error(transparent)]
    Activation(#[from] ActivationError),
}

impl From<SocketError> for RunError {
    fn from(e: SocketError) -> Self {
        match e {
            SocketError::Bind(e) => Self::Bind(e),
            SocketError::Group(e) => Self::SocketGroup(e),
        }
    }
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
    // systemd: sd_notify (READY, STATUS, WATCHDOG, STOPPING, EXTEND_TIMEOUT_USEC) and the
    // sockets it passed; both no-ops outside systemd (runtime/supervise.rs, activation.rs).
    let service = Service::from_env();
    let activated = activation::take(&ListenEnv::from_env())?;
    service.notifier.status("recovering");
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
    // Directories that are not episodes are left as they are (logged by recovery).
    let all = recover_data_dir(&fs, &cfg.data_dir, &settings);
    for r in all.episodes {
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
    // The control socket first: it is up once the ingest socket accepts.
    // Passed by systemd (wshardd-control.socket) or bound at control.path (+ socket_group).
    let (control_listener, control_file) = listeners::open_control(cfg, activated.control)?;
    let metrics_listener = match cfg.control.metrics_listen.as_str() {
        "" => None,
        addr => match crate::control::http::bind(addr) {
            Ok(l) => Some(l),
            Err(e) => {
                control_file.remove();
                return Err(e.into());
            }
        },
    };
    // Passed by systemd (wshardd.socket) or bound here at socket.path (+ socket_group).
    let (listener, ingest_file) = match listeners::open_ingest(cfg, activated.ingest) {
        Ok(x) => x,
        Err(e) => {
            control_file.remove();
            return Err(e.into());
        }
    };
    let ctx = Arc::new(ServerContext::new(cfg, fs, control.shutdown.clone()));
    // Trigger windows a crash left pending are built from the rings' files.
    let (windows, bad) = crate::flight::resume::resume_pending(&ctx.flight);
    if windows > 0 {
        tracing::warn!(windows, "flight: finishing trigger windows left pending");
    }
    for b in bad {
        tracing::error!("flight: a pending window record cannot be read, left in place: {b}");
    }
    // The first measurement decides before any OPEN is accepted.
    ctx.disk.check_now();
    if let Ok(mut r) = ctx.registry.recovery.lock() {
        r.clone_from(&recovered);
    }
    if let Ok(mut r) = ctx.registry.recovery_left_alone.lock() {
        *r = all.left_alone;
    }
    tracing::info!(socket = %cfg.socket.path.display(), data_dir = %cfg.data_dir.display(), "wshardd ready");
    on_ready(&recovered);
    service.ready(&ctx.registry);
    // Set once every connection has finished: the supervisor's last word.
    let finished = AtomicBool::new(false);
    // The robot's uploader: its own thread (never joined by recording), after recovery.
    let uploader = if cfg.publish.enabled {
        let settings = crate::upload::UploaderSettings::from_config(cfg);
        match crate::upload::spawn(
            ctx.fs.clone(),
            settings,
            ctx.upload.clone(),
            control.shutdown.clone(),
        ) {
            Ok(h) => Some(h),
            Err(e) => {
                tracing::error!("the uploader thread cannot start: {e}");
                ctx.upload
                    .set_error(crate::upload::UploaderState::Error, "thread", e.to_string());
                None
            }
        }
    } else {
        None
    };
    std::thread::scope(|s| {
        s.spawn(|| service.supervise(&ctx.registry, &control.shutdown, &finished));
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
                        ctx.disk.set_config(new.disk.clone());
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
        s.spawn(|| ctx.disk.run(&control.shutdown));
        crate::control::spawn(
            s,
            control_listener,
            metrics_listener,
            ctx.clone(),
            crate::control::ControlSettings::from_config(cfg),
        );
        accept_loop(&listener, &ctx);
        finished.store(true, Ordering::Release);
    });
    if let Some(h) = uploader {
        h.finish(UPLOADER_STOP_WAIT);
    }
    drop(listener);
    ingest_file.remove();
    control_file.remove();
    tracing::info!("wshardd stopped: every open episode was finalized");
    Ok(())
}
