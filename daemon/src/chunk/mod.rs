//! Chunks: the open chunk's columns, and publishing a finished chunk durably.
//! It may call `episode`, `fsio` and `error` only: no thread, no connection, no session.

pub(crate) mod chunk_file;
pub(crate) mod columns;
pub(crate) mod digest;
pub(crate) mod gaps;
pub(crate) mod prealloc;

pub(crate) use columns::ChunkColumns;
pub use columns::{META_EPISODE_KEY, META_STREAM_KEY};
pub use gaps::{GapsError, SeqGaps};
