//! Writing shards: reserve, write blocks, finalize.

mod options;
mod writer;

pub use options::{Reserve, ShardOptions};
pub use writer::{BlockOptions, BlockStream, Precompressed, ShardWriter, WrittenBlock};
