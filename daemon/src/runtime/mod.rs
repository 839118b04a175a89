//! Process-level plumbing: the server loop and its controls.

pub mod server;

pub use server::{run, Control, RunError};
