//! `wshard-export`: recorded episodes out to the tools people train and look with.
//!
//! Exports read episodes through the format library (`wshard::episode_dir`, and its aligned
//! view `wshard::align` where a format needs one clock: exports align, recording never does).
//!
//! - [`channel_filter`]: `--exclude` patterns, the channels an export leaves out.
//! - [`channel_kind`]: which channels are pictures (colour, mono, depth) and which are
//!   low-dimensional vectors, one rule for every export.
//! - [`inputs`]: which episodes the inputs (episode or data directories) name, one rule
//!   for every export.
//! - [`output_marker`]: the file every export leaves in its output directory naming what
//!   it wrote, so that `--overwrite` replaces an export's own files and nothing else.
//! - [`partial_output`]: an output directory written whole or not at all.
//! - [`picture_encode`]: JPEG (libjpeg-turbo) and PNG encoding of pictures.
//! - `webdataset`: `wshard export webdataset`, training shards (tar) with their statistics.
//! - `lerobot`: `wshard export lerobot`, a LeRobotDataset v3 directory.
//! - `mcap`: `wshard export mcap`, one MCAP file per episode for Foxglove, PlotJuggler and
//!   rerun.

pub mod channel_filter;
pub mod channel_kind;
pub mod inputs;
pub mod lerobot;
pub mod mcap;
pub mod npy;
pub mod output_marker;
pub mod partial_output;
pub mod picture_encode;
pub mod webdataset;
