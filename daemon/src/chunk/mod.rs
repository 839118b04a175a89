//! Chunks: the open chunk's columns, and publishing a finished chunk durably.

pub mod columns;
pub mod gaps;
pub mod publish;
pub mod step;

pub use columns::ChunkColumns;
pub use gaps::SeqGaps;
