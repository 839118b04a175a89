//! What an episode is to the daemon: its schema and its files (the layout is the
//! `wshard-storage` crate's, re-exported).
//! A leaf: it calls nothing else of the daemon (only the `wshard` format crate).

pub use wshard_storage::layout;
pub(crate) mod schema;

pub use layout::{validate_episode_id, EpisodeIdError, EpisodeLayout};
pub use schema::{ChannelDecl, ChannelSchema, Durability, EpisodeSchema, SchemaError};
