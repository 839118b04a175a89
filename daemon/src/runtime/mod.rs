//! Process-level plumbing: the server loop and its controls, and the data directory lock.

pub mod access;
pub mod activation;
pub mod disk;
pub mod listeners;
pub mod lock;
pub mod notify;
pub mod server;
pub mod supervise;
pub mod watchdog;

pub use server::{run, Control, RunError};
