//! Unix-socket ingest: listener (with the per-uid connection slots, `slots`), per-connection
//! protocol handling (with its deadlines, `deadline`), responses, and the
//! shared-memory transport (`shm`: the ring consumer, the daemon's only `unsafe` code;
//! `shm_session`: a connection's ring).

pub mod connection;
pub mod deadline;
pub mod listener;
pub mod responder;
pub mod shm;
mod shm_session;
pub mod slots;
mod steps;
