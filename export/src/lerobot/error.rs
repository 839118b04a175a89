//! Why a LeRobot export failed; each variant names the episode, channel, file or program.

use std::path::PathBuf;

use wshard::align::AlignError;
use wshard::episode_dir::EpisodeDirError;
use wshard::IoError;

use crate::channel_filter::ExcludeError;
use crate::inputs::InputsError;
use crate::output_marker::MarkerError;
use crate::partial_output::OutputError;

/// A LeRobot export that could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LerobotError {
    /// The inputs name no episodes to export (`crate::inputs`).
    #[error(transparent)]
    Inputs(#[from] InputsError),
    /// An episode directory could not be read.
    #[error("episode {path}: {source}")]
    Episode {
        path: PathBuf,
        #[source]
        source: Box<EpisodeDirError>,
    },
    /// The aligned view of an episode could not be built.
    #[error("episode {episode}: {source}")]
    Align {
        episode: String,
        #[source]
        source: Box<AlignError>,
    },
    /// `--fps` is not a whole number in range.
    #[error("fps {fps}: LeRobot needs a whole number of frames per second from 1 to {max}")]
    BadFps { fps: String, max: u32 },
    /// No default fps: no stream of the episode says its rate.
    #[error("episode {episode}: no stream says its rate (pass --fps)")]
    NoRate { episode: String },
    /// `--state` / `--action` names a channel that is not there or cannot be a vector.
    #[error("episode {episode}: --{feature} channel `{key}`: {reason}")]
    BadChannel {
        episode: String,
        feature: &'static str,
        key: String,
        reason: String,
    },
    /// `--exclude` cannot be applied.
    #[error(transparent)]
    Exclude(#[from] ExcludeError),
    /// An integer value of a vector channel that float32 cannot hold exactly.
    #[error("episode {episode}: channel `{channel}`: value {value} at frame {frame} is not exactly a float32 (LeRobot's vector dtype holds integers up to 2^24 exactly); leave the channel out of --state/--action or --exclude it")]
    NotFloat32 {
        episode: String,
        channel: String,
        frame: usize,
        value: f64,
    },
    /// Nothing to export: no state, action or picture channel.
    #[error("episode {episode}: no channel to export (no low-dimensional signal or action channel, no colour or mono picture; channels: {available})")]
    NoChannels { episode: String, available: String },
    /// An episode's features differ from the first episode's (a dataset has one schema).
    #[error("{0}")]
    FeatureMismatch(Box<FeatureMismatch>),
    /// The streams of the exported channels do not overlap in time.
    #[error("episode {episode}: streams {streams} do not overlap in time: no frame to export")]
    NoOverlap { episode: String, streams: String },
    /// A picture channel's row is missing in its stream.
    #[error("episode {episode}: channel `{channel}` has no step {step}")]
    MissingStep {
        episode: String,
        channel: String,
        step: i64,
    },
    /// The ffmpeg program is not there.
    #[error("ffmpeg (`{program}`) not found: the LeRobot export encodes its videos with it; install it (Debian: apt-get install ffmpeg) or name it with --ffmpeg PATH")]
    FfmpegMissing { program: PathBuf },
    /// ffmpeg failed.
    #[error("ffmpeg failed writing {file} ({status}): {stderr}")]
    Ffmpeg {
        file: PathBuf,
        status: String,
        stderr: String,
    },
    /// The picture size cannot be encoded with this codec.
    #[error("video {key}: {width}x{height} pictures: {reason}")]
    BadPictureSize {
        key: String,
        width: u64,
        height: u64,
        reason: &'static str,
    },
    /// The output directory holds something already.
    #[error("output {dir} is not empty (pass --overwrite to replace it)")]
    OutputNotEmpty { dir: PathBuf },
    /// With `overwrite`, an output directory no export made, or one holding a file its
    /// export did not write (`crate::output_marker`); nothing in it is removed.
    #[error(transparent)]
    Output(#[from] MarkerError),
    /// A file-system operation failed.
    #[error(transparent)]
    Io(#[from] IoError),
    /// Writing a Parquet file failed.
    #[error("writing {file}: {source}")]
    Parquet {
        file: PathBuf,
        #[source]
        source: parquet::errors::ParquetError,
    },
    /// Building an Arrow table failed.
    #[error("building the {table} table: {source}")]
    Arrow {
        table: &'static str,
        #[source]
        source: arrow_schema::ArrowError,
    },
    /// Writing a JSON file failed.
    #[error("writing {file}: {source}")]
    Json {
        file: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// A feature of an episode that differs from the first episode's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("episode {episode}: feature `{feature}` differs from episode {first}'s: {cause} (one dataset has one set of features; --state, --action and --exclude choose its channels)")]
pub struct FeatureMismatch {
    pub episode: String,
    pub first: String,
    pub feature: String,
    /// What differs, in a few words (the channels only one episode has, a width, a picture
    /// size, the order).
    pub cause: String,
}

impl From<OutputError> for LerobotError {
    fn from(e: OutputError) -> Self {
        match e {
            OutputError::NotEmpty { dir } => Self::OutputNotEmpty { dir },
            OutputError::NotReplaceable(e) => Self::Output(e),
            OutputError::Io(e) => Self::Io(e),
        }
    }
}

impl LerobotError {
    /// An I/O error on `path`.
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io(IoError::new(op, path, source))
    }

    /// True when the input data is at fault (an episode could not be read or does not fit
    /// the dataset), false for usage, program and I/O errors.
    #[must_use]
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            Self::Episode { .. }
                | Self::Align { .. }
                | Self::NoRate { .. }
                | Self::NoChannels { .. }
                | Self::FeatureMismatch(_)
                | Self::NotFloat32 { .. }
                | Self::NoOverlap { .. }
                | Self::MissingStep { .. }
        )
    }
}
