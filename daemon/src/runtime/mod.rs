//! Process-level plumbing: the server loop and its controls, and the data directory lock.

pub mod access;
pub mod lock;
pub mod server;

pub use server::{run, Control, RunError};
