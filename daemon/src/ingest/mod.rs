//! Unix-socket ingest: listener, per-connection protocol handling, responses.

pub mod connection;
pub mod context;
pub mod listener;
pub mod responder;

pub use context::ServerContext;
