//! Multi-stream episode directories.
//!
//! - Names: [`name_rule`] (the character and length rule of episode ids and stream names),
//!   [`names`] (file names, stream names).
//! - Models (pure, JSON bytes in and out):
//!   [`index`] (`{EP}_index.json`), [`events`] (`{EP}_events.jsonl`), [`annotations`]
//!   (`{EP}_annotations.json`).
//! - Reading: [`EpisodeDir::open`] opens either layout (a single-stream episode as one
//!   stream `main`), lists its [`StreamInfo`]s and [`EpisodeEvent`]s, and reads each
//!   stream's [`StreamData`] (timestamps, and [`ChannelData`] per channel, memory-mapped
//!   where the chunks allow). The aligned view is in [`crate::align`].
//!
//! See `docs/FORMAT-NOTES.md`, "Reading multi-stream episodes".

pub mod annotations;
mod chunk_file;
mod column;
mod dir;
mod error;
mod event_log;
pub mod events;
pub mod index;
mod json;
pub mod name_rule;
pub mod names;
mod stream;

pub use column::{ChannelData, SegmentLengthError};
pub use dir::{EpisodeDir, Layout};
pub use error::EpisodeDirError;
pub use event_log::{EpisodeEvent, EventOrigin};
pub use stream::{StreamData, StreamDataError, StreamInfo};
