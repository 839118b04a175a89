//! Process-level services that ingest and control share: the server context and settings.
//! It may call `registry`, `session`, `upload`, `episode` and `fsio`; never `ingest`, `control` or `server`.
//!
//! - `context`: the `ServerContext` every connection and the control socket hold.
//! - `settings`: the config mapped to episode settings and the parts SIGHUP may change.
//! - `access`, `disk`: the allowlists, and free space against the `[disk]` watermarks.
//! - `listeners`, `activation`: the sockets, bound here or passed by systemd.
//! - [`lock`]: the data directory lock. [`logging`]: where the log goes.
//! - `notify`, `supervise`, `watchdog`: sd_notify and the writer-heartbeat watchdog.

pub(crate) mod access;
pub(crate) mod activation;
pub(crate) mod context;
pub(crate) mod disk;
pub(crate) mod listeners;
pub mod lock;
pub mod logging;
pub(crate) mod notify;
pub(crate) mod settings;
pub(crate) mod supervise;
pub(crate) mod watchdog;

pub(crate) use context::ServerContext;
