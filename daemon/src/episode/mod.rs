//! What an episode is to the daemon: its schema (where its files live is the
//! `wshard-storage` crate's `layout`).
//! A leaf: it calls nothing else of the daemon (only the `wshard` format crate).

pub(crate) mod schema;

pub use schema::{ChannelDecl, ChannelSchema, Durability, EpisodeSchema, SchemaError};
