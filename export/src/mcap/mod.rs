//! `wshard export mcap`: one MCAP file per episode, for Foxglove, PlotJuggler and rerun.
//!
//! - [`options`]: compression (zstd, lz4, none), chunk size, how pictures are written.
//! - [`schemas`]: the JSON Schemas (`wshard.Vector`, `foxglove.RawImage`,
//!   `foxglove.CompressedImage`, `wshard.Event`, `wshard.Annotation`).
//! - `vector`, `picture` (JPEG / PNG by `crate::picture_encode`), `events`: the JSON message of a
//!   step of a low-dimensional channel, of a picture, of an event.
//! - `plan`: an episode's channels as MCAP channels (topic `/STREAM/CHANNEL`).
//! - [`writer`]: one episode to one file, messages in log-time order; `summary_order`
//!   makes its summary section the same bytes on every run.
//! - [`export`]: episode or data directories in (resolved by `crate::inputs`), one file
//!   per episode out.
//! - [`error`]: the errors, [`McapError`].
//!
//! See docs/EXPORT.md, "MCAP".

pub mod error;
mod events;
pub mod export;
pub mod options;
mod picture;
mod plan;
pub mod schemas;
mod stamp;
mod summary_order;
mod vector;
pub mod writer;

pub use crate::inputs::{resolve_inputs, EpisodeInput, Inputs, InputsError, Skipped};
pub use error::McapError;
pub use events::{ANNOTATIONS_TOPIC, EVENTS_TOPIC};
pub use export::{export_mcap, export_resolved, McapExport};
pub use options::{
    ImageMode, McapCompression, McapOptions, DEFAULT_CHUNK_SIZE, DEFAULT_JPEG_QUALITY,
};
pub use plan::topic;
pub use writer::{export_episode, mcap_file, EpisodeMcap, EPISODE_METADATA, PARTIAL_SUFFIX};
