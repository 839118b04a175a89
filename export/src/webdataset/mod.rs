//! `wshard export webdataset`: training shards for WebDataset readers (as vla_foundry
//! streams them), one sample per frame of a chosen picture channel.
//!
//! A sample holds a window of `past + 1 + future` low-dimensional steps `stride` rows apart
//! on one clock (the aligned view of `wshard::align`), the pictures at the given offsets in
//! raw frames, JPEG (colour, mono) or 16-bit PNG in millimetres (depth), and its metadata and
//! language instructions. The layout, every default and every decision are written out in
//! `docs/EXPORT.md`, "WebDataset".
//!
//! - [`options`]: the options, [`WebdatasetOptions`].
//! - which episodes: `crate::inputs`, cut to `max_episodes`.
//! - [`episode`]: the anchor channel, picture channels and the low-dimensional clock.
//! - [`window`]: windows, padding, image frames (pure).
//! - [`plan`]: which anchors become samples.
//! - [`sample`]: one sample's files.
//! - [`frames`]: each picture frame of a batch encoded once, in parallel.
//! - [`image`], [`resize`]: JPEG / PNG encoding.
//! - [`npz`]: `.npy` and stored zip writing.
//! - [`shard`]: tar shards.
//! - [`stats`], [`percentile`]: `stats.json`.
//! - [`meta_files`]: manifest, config and processing metadata.
//! - [`ids`]: sample ids.
//! - [`output`]: the partial output directory.

pub mod episode;
pub mod error;
pub mod frames;
pub mod ids;
pub mod image;
pub mod meta_files;
pub mod npz;
pub mod options;
pub mod output;
pub mod percentile;
pub mod plan;
pub mod resize;
mod run;
pub mod sample;
pub mod shard;
pub mod stats;
pub mod values;
pub mod window;

pub use error::WebdatasetError;
pub use options::{parse_resize, LowdimClock, WebdatasetOptions};
pub use run::{export, ExportSummary, Progress};
