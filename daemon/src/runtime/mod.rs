//! Process-level plumbing: the server loop and its controls, the data directory lock, and
//! where the log goes.

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
