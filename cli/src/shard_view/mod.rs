//! What a shard says about itself, for the verbs that read shards (`inspect`, `verify`,
//! `cat`): [`describe`], display names for the numbers of a header and index and the
//! words for a read error; [`episode_view`], the dtype and shape of each block of a WShard
//! episode from its meta blocks.
//!
//! It may call only the `wshard` format library; never a verb. `episode_view` uses
//! `describe`, never the reverse.

pub mod describe;
pub mod episode_view;
