//! `wshard export webdataset|lerobot|mcap`: recorded episodes out to training and viewing
//! tools. Each format's arguments and run live in their own file; the work is the
//! `wshard-export` library's.

pub mod lerobot;
pub mod mcap;
pub mod webdataset;

use std::fmt::Display;
use std::io::Write;

use crate::exit_status::Status;

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

/// The exit status of an export error: 1 when the input data is at fault (an episode that
/// cannot be read or holds data the format cannot take), 2 for usage and I/O errors.
pub(crate) fn error_status(bad_data: bool) -> Status {
    if bad_data {
        Status::Corrupt
    } else {
        Status::Error
    }
}

/// Say `wshard export FORMAT: ERROR` on `err`; the exit code of [`error_status`].
pub(crate) fn failed(err: &mut impl Write, format: &str, e: &impl Display, bad_data: bool) -> u8 {
    let _ = writeln!(err, "wshard export {format}: {e}");
    error_status(bad_data).code()
}
