//! Ingest: the socket's accept loop, one thread per connection, every protocol check.
//! It may call `runtime` (the server context), `session`, `registry`, `multi` (version 2's
//! multi-stream episodes), `episode_files` and `episode`.
//!
//! Timesteps come as socket frames or through a shared-memory ring (the two transports).
//!
//! - [`listener`]: accepting connections, within the connection limits ([`slots`]: per uid).
//! - [`connection`]: one connection's read loop and states (handshake, idle, recording),
//!   with its [`deadline`]s; [`responder`] writes its answers.
//! - `intake`: an open episode's checks of every timestep, and the hand-off to its writer.
//! - `timestep_source`: where the timesteps come from: socket frames or a shared-memory ring.
//! - [`shm`]: the ring consumer, on the mapping of the `wshard-shm-ring` crate (which holds
//!   the ring's `unsafe` code); [`fds`]: receiving file descriptors (`SCM_RIGHTS`) and
//!   checking the eventfds (`/proc`).

pub(crate) mod connection;
pub(crate) mod deadline;
pub(crate) mod fds;
mod intake;
pub(crate) mod listener;
pub(crate) mod responder;
pub(crate) mod shm;
pub(crate) mod slots;
mod timestep_source;
