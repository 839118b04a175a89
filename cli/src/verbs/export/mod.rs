//! `wshard export webdataset|lerobot|mcap`: recorded episodes out to training and viewing
//! tools. Each format's arguments and run live in their own file ([`webdataset`],
//! [`lerobot`], [`mcap`]); the work is the `wshard-export` library's. [`failure`] is how
//! each says it failed. The formats use `failure`, never this module or each other.

pub mod failure;
pub mod lerobot;
pub mod mcap;
pub mod webdataset;

use std::io::Write;

/// Export episodes for training and viewing: webdataset, lerobot, mcap
///
/// `webdataset` (training shards), `lerobot` (a LeRobotDataset v3), `mcap` (one MCAP per
/// episode, for Foxglove, PlotJuggler, rerun).
///
/// Exit codes: 0 done, 1 an episode could not be read, 2 usage or I/O error.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    #[command(subcommand)]
    pub verb: ExportVerb,
}

/// The formats `wshard export` writes.
#[derive(Debug, clap::Subcommand)]
pub enum ExportVerb {
    /// WebDataset training shards: one sample per frame of a chosen image stream, a window
    /// of low-dimensional steps around it, JPEG/PNG pictures, statistics.
    Webdataset(webdataset::WebdatasetArgs),
    /// A LeRobotDataset v3 directory (Parquet data, ffmpeg videos, meta/).
    Lerobot(lerobot::LerobotArgs),
    /// One MCAP file per episode, for Foxglove, PlotJuggler and rerun.
    Mcap(mcap::McapArgs),
}

/// Run one export; the exit code.
pub fn run(verb: &ExportVerb, out: &mut impl Write, err: &mut impl Write) -> u8 {
    match verb {
        ExportVerb::Webdataset(args) => webdataset::run(args, out, err),
        ExportVerb::Lerobot(args) => lerobot::run(args, out, err),
        ExportVerb::Mcap(args) => mcap::run(args, out, err),
    }
}
