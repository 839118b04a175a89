//! `wshard-recorder`: the daemon `wshardd` and the operator CLI `wshard`.
//!
//! ## Layout
//! - [`cli`]: the `wshard` operator verbs (`inspect`, `verify`, `recover`, `cat`).
//! - [`fsio`]: the only module that calls fsync / rename / fsync(dir), behind the [`fsio::Fs`] trait.
//! - [`journal`]: the per-episode journal (LevelDB-log framing with CRC32C).
//! - [`episode`]: an episode's schema and on-disk layout.
//! - [`chunk`]: the open chunk's columns; publishing a chunk and the manifest.
//! - [`session`]: one recording episode: writer and publisher threads.
//! - [`recovery`]: replaying journals after a crash.
//! - [`ingest`]: the Unix socket: listener, connections, responses.
//! - [`registry`]: the open episodes and daemon counters, for status and metrics.
//! - [`control`]: the operator's control socket (status, episodes, close, Prometheus metrics).
//! - [`runtime`]: `run`, shutdown and reload, the data directory lock.

pub mod chunk;
pub mod cli;
pub mod control;
pub mod episode;
pub mod error;
pub mod fsio;
pub mod ingest;
pub mod journal;
pub mod recovery;
pub mod registry;
pub mod runtime;
pub mod server;
pub mod session;
