//! Chunks: the open chunk's columns, writing a sealed chunk's file durably, and committing
//! the episode's chunk manifest. It may call `episode`, `fsio` and `error` only: no thread,
//! no connection, no session.
//!
//! - `columns`: the open chunk, one buffer per channel, CRC32C extended as timesteps arrive;
//!   `gaps`: the seq ranges a shared-memory producer dropped.
//! - `compress`: a chunk's blocks compressed on the shared compression pool.
//! - `chunk_file`: the chunk file written to its `.partial` and hashed, then made durable
//!   under its final name; `digest`: its SHA-256; `prealloc`: its exact length reserved.
//! - `manifest_commit`: the manifest replaced atomically and durably.

pub(crate) mod chunk_file;
pub(crate) mod columns;
pub(crate) mod compress;
pub(crate) mod digest;
pub(crate) mod gaps;
pub(crate) mod manifest_commit;
pub(crate) mod prealloc;

pub(crate) use columns::ChunkColumns;
pub use columns::{META_EPISODE_KEY, META_STREAM_KEY};
pub use gaps::{GapsError, SeqGaps};
