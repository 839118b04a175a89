//! Writing shards: reserve, write blocks, finalize.

mod options;
mod prepare;
mod writer;

pub use options::{Reserve, ShardOptions};
pub use prepare::{prepare_block, prepare_block_with_crc, PreparedBlock};
pub use writer::{BlockOptions, BlockStream, Precompressed, ShardWriter, WrittenBlock};
