//! Chunks: the open chunk's columns, and publishing a finished chunk durably.
//! It may call `episode`, `fsio` and `error` only: no thread, no connection, no session.

pub mod columns;
pub mod digest;
pub mod gaps;
pub mod prealloc;
pub mod publish;

pub use columns::ChunkColumns;
pub use gaps::{GapsError, SeqGaps};
