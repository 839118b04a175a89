//! The mapped shared-memory ring of wshardd's ingest protocol (docs/PROTOCOL.md,
//! "Shared-memory transport"), as both of its sides use it: the daemon, which consumes it,
//! and the Rust client, which produces into it.
//!
//! - [`check_ring_fd`]: the rule a ring memfd keeps before anything maps it (a sealed memfd
//!   of exactly the ring's size), so that no mapping of it can be cut short.
//! - [`MappedRing`]: the mapping, its atomic control words (`head`, `tail`, the two
//!   `*_sleeping` flags, the producer's drop counters) and copies of slots out of it and
//!   into it. Its module is the only one with `unsafe` code on the ring.
//!
//! The layout, the geometry rules and the byte encodings of the ring header and of slot
//! headers are the sans-io protocol crate's (`wshard_ingest_proto::ring`); the consumer's
//! and the producer's rules (which word to load or store when, the eventfd wake-ups) are
//! the daemon's and the client's. This crate may call `wshard_ingest_proto` and nix only.

mod mapping;
mod ring_fd;

pub use mapping::{MapError, MappedRing, SlotError};
pub use ring_fd::{check_ring_fd, RingFdError};
