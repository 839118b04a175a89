//! The WShard episode profile (role 0x05, spec 10-12).
//!
//! - [`model`]: [`Episode`], [`Channel`], [`AuxBlock`], [`Timebase`].
//! - [`dtype`]: the 13 element types.
//! - [`meta`]: `meta/wshard`, `meta/episode`, `meta/channels` JSON.
//! - [`go_json`]: JSON bytes exactly as Go's encoder writes them.
//! - [`residual`]: `sign2nddiff` residual bits.
//! - [`StoredEpisode`]: an episode's meta and its other blocks as stored (copied without
//!   decoding).

pub mod dtype;
pub mod go_json;
pub mod meta;
pub mod model;
mod read;
pub mod residual;
mod stored;
mod write;

pub use dtype::DType;
pub use meta::MetaStyle;
pub use model::{names, AuxBlock, Channel, ChunkInfo, Episode, Lane, Timebase};
pub use stored::StoredEpisode;
pub use write::{EpisodeWriteOptions, PlannedBlock};
