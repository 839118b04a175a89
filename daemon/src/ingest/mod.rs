//! Unix-socket ingest: listener, per-connection protocol handling, responses, and the
//! shared-memory transport (`shm`: the ring consumer, the daemon's only `unsafe` code;
//! `shm_session`: a connection's ring).

pub mod connection;
pub mod context;
pub mod listener;
pub mod responder;
pub mod shm;
mod shm_session;
mod steps;

pub use context::ServerContext;
