//! Reading shards: one validating parser ([`ShardIndex`]) over any [`ReadAt`] source,
//! including byte ranges fetched on demand ([`RangedSource`]).

mod index;
mod limits;
mod mmap;
mod ranged;
mod reader;
mod source;

pub use index::ShardIndex;
pub use limits::ReadLimits;
pub use mmap::MappedShard;
pub use ranged::{RangeFetch, RangedSource, DEFAULT_PREFETCH_BYTES};
pub use reader::{BlockCheck, ShardReader};
pub use source::ReadAt;
