//! Reading shards: one validating parser ([`ShardIndex`]) over any [`ReadAt`] source.

mod index;
mod limits;
mod mmap;
mod reader;
mod source;

pub use index::ShardIndex;
pub use limits::ReadLimits;
pub use mmap::MappedShard;
pub use reader::{BlockCheck, ShardReader};
pub use source::ReadAt;
