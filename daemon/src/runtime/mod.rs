//! Process-level services that ingest and control share: the server context and settings.
//! It may call `registry`, `session`, `episode` and `fsio`; never `ingest`, `control` or `server`.
//!
//! - [`context`]: the [`ServerContext`] every connection and the control socket hold.
//! - [`settings`]: the config mapped to episode settings and the parts SIGHUP may change.
//! - [`access`], [`disk`]: the allowlists, and free space against the `[disk]` watermarks.
//! - [`listeners`], [`activation`]: the sockets, bound here or passed by systemd.
//! - [`lock`]: the data directory lock. [`logging`]: where the log goes.
//! - [`notify`], [`supervise`], [`watchdog`]: sd_notify and the writer-heartbeat watchdog.

pub mod access;
pub mod activation;
pub mod context;
pub mod disk;
pub mod listeners;
pub mod lock;
pub mod logging;
pub mod notify;
pub mod settings;
pub mod supervise;
pub mod watchdog;

pub use context::ServerContext;
