//! Why a WebDataset export fails; each variant names the episode, stream, channel or file.

use std::path::PathBuf;

use wshard::align::AlignError;
use wshard::episode_dir::EpisodeDirError;
use wshard::IoError;

use crate::channel_filter::ExcludeError;
use crate::inputs::InputsError;
use crate::output_marker::MarkerError;
use crate::partial_output::OutputError;

/// A failed WebDataset export.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebdatasetError {
    /// An option is out of range or malformed.
    #[error("option --{option}: {message}")]
    BadOption {
        option: &'static str,
        message: String,
    },
    /// `--exclude` cannot be applied.
    #[error(transparent)]
    Exclude(#[from] ExcludeError),
    /// The inputs name no episodes to export (`crate::inputs`).
    #[error(transparent)]
    Inputs(#[from] InputsError),
    /// An episode that cannot be opened or read.
    #[error("episode {episode}: {source}")]
    Episode {
        episode: String,
        #[source]
        source: Box<EpisodeDirError>,
    },
    /// The aligned view of an episode's low-dimensional channels cannot be built.
    #[error("episode {episode}: aligning the low-dimensional channels: {source}")]
    Align {
        episode: String,
        #[source]
        source: Box<AlignError>,
    },
    /// `--image STREAM/CHANNEL` names no channel of the episode.
    #[error("episode {episode}: --image {spec}: no such channel (picture channels: {available})")]
    UnknownImage {
        episode: String,
        spec: String,
        available: String,
    },
    /// `--image` names a channel that is not a colour, mono or depth picture.
    #[error("episode {episode}: --image {spec}: {dtype} {shape:?} is not a picture channel")]
    NotAPicture {
        episode: String,
        spec: String,
        dtype: String,
        shape: Vec<u64>,
    },
    /// The episode has no picture channel to anchor samples on.
    #[error("episode {episode}: no picture channel (a u8 [h,w,3] colour, u8 [h,w] mono or depth channel) to anchor samples on")]
    NoPictureChannel { episode: String },
    /// The episode has no low-dimensional channel.
    #[error("episode {episode}: no low-dimensional channel (every channel is a picture)")]
    NoLowDim { episode: String },
    /// `--lowdim-clock` names no stream of the episode.
    #[error(
        "episode {episode}: --lowdim-clock {stream}: no stream of that name (streams: {available})"
    )]
    UnknownLowdimClock {
        episode: String,
        stream: String,
        available: String,
    },
    /// A picture stream without frames.
    #[error("episode {episode}: picture stream {stream} has no frames")]
    EmptyPictureStream { episode: String, stream: String },
    /// A NaN or infinite value in a sample's window (unless `--drop-non-finite`).
    #[error("episode {episode}: channel {channel}: non-finite value {value} at low-dimensional row {row} (t_ns {t_ns}) of the sample anchored at frame {anchor}")]
    NonFinite {
        episode: String,
        channel: String,
        row: usize,
        t_ns: i64,
        anchor: usize,
        value: f64,
    },
    /// Two picture channels whose names become the same sample file name.
    #[error(
        "episode {episode}: channels {first} and {second} both become sample files named {name}"
    )]
    NameClash {
        episode: String,
        first: String,
        second: String,
        name: String,
    },
    /// A picture the encoder refused.
    #[error("episode {episode}: {channel} frame {frame}: {what} encoding failed: {message}")]
    Encode {
        episode: String,
        channel: String,
        frame: usize,
        what: &'static str,
        message: String,
    },
    /// A sample's `lowdim.npz` cannot be written.
    #[error("episode {episode}: lowdim.npz: {message}")]
    Npz { episode: String, message: String },
    /// A key's width differs between episodes, so its statistics cannot be combined.
    #[error("stats.json: {0}")]
    Stats(#[from] super::stats::WidthMismatch),
    /// The output directory exists and is not empty (without `overwrite`).
    #[error("output directory {path} is not empty (pass --overwrite to replace it)")]
    OutputNotEmpty { path: PathBuf },
    /// With `overwrite`, an output directory no export made, or one holding a file its
    /// export did not write (`crate::output_marker`); nothing in it is removed.
    #[error(transparent)]
    Output(#[from] MarkerError),
    /// A file system operation failed.
    #[error(transparent)]
    Io(#[from] IoError),
}

impl From<OutputError> for WebdatasetError {
    fn from(e: OutputError) -> Self {
        match e {
            OutputError::NotEmpty { dir } => Self::OutputNotEmpty { path: dir },
            OutputError::NotReplaceable(e) => Self::Output(e),
            OutputError::Io(e) => Self::Io(e),
        }
    }
}

impl WebdatasetError {
    /// An I/O error of `op` on `path`.
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io(IoError::new(op, path, source))
    }

    /// True when the error is about an episode's data (an episode that cannot be read or
    /// holds bad values), false for usage and I/O errors (inputs naming nothing to export:
    /// a path that is not there, no finished episode, an episode still recording, one
    /// given twice; options; the output directory).
    #[must_use]
    pub fn is_bad_input(&self) -> bool {
        !matches!(
            self,
            Self::BadOption { .. }
                | Self::Exclude(_)
                | Self::OutputNotEmpty { .. }
                | Self::Output(_)
                | Self::Io(_)
                | Self::Inputs(_)
        )
    }
}
