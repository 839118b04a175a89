//! What can go wrong in an MCAP export; every error names the input, episode, stream,
//! channel, step or file it is about.

use std::path::PathBuf;

use wshard::episode_dir::EpisodeDirError;
use wshard::IoError;

use crate::inputs::InputsError;
use crate::output_marker::MarkerError;

/// An MCAP export error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McapError {
    /// The inputs name no episodes to export (`crate::inputs`).
    #[error(transparent)]
    Inputs(#[from] InputsError),
    /// The output directory already holds files.
    #[error("output directory {} is not empty (pass --overwrite to replace the output of an export there)", dir.display())]
    OutputNotEmpty { dir: PathBuf },
    /// With `overwrite`, an output directory no export made, or one holding a file its
    /// export did not write (`crate::output_marker`); nothing in it is removed.
    #[error(transparent)]
    Output(#[from] MarkerError),
    /// A file-system call failed.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The episode could not be opened or one of its streams read.
    #[error("episode {}: {source}", dir.display())]
    Episode {
        dir: PathBuf,
        #[source]
        source: EpisodeDirError,
    },
    /// A step's timestamp is before 1970: MCAP log times are unsigned nanoseconds.
    #[error("episode `{episode}`, stream `{stream}`, step {step}: timestamp {t_ns} ns is before the Unix epoch (MCAP log times are unsigned)")]
    NegativeTime {
        episode: String,
        stream: String,
        step: u64,
        t_ns: i64,
    },
    /// An event's or annotation's time is before 1970.
    #[error("episode `{episode}`, {what} seq {seq} (`{label}`): time {t_ns} ns is before the Unix epoch (MCAP log times are unsigned)")]
    NegativeEventTime {
        episode: String,
        what: &'static str,
        seq: u64,
        label: String,
        t_ns: i64,
    },
    /// Two channels would get the same MCAP topic.
    #[error("episode `{episode}`: stream `{stream}`, channel `{channel}` would be topic `{topic}`, which another channel has")]
    DuplicateTopic {
        episode: String,
        stream: String,
        channel: String,
        topic: String,
    },
    /// A picture could not be encoded.
    #[error("episode `{episode}`, stream `{stream}`, channel `{channel}`, step {step}: {format} encoding failed: {message}")]
    Encode {
        episode: String,
        stream: String,
        channel: String,
        step: u64,
        format: &'static str,
        message: String,
    },
    /// The MCAP writer failed (an I/O error under it, or a limit of the format).
    #[error("episode `{episode}`: writing {}: {source}", file.display())]
    Write {
        episode: String,
        file: PathBuf,
        #[source]
        source: mcap::McapError,
    },
}

impl McapError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io(IoError::new(op, path, source))
    }

    /// True when the episode's data is what is wrong (the CLI's exit 1); false for usage
    /// and I/O errors (exit 2).
    #[must_use]
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            Self::Episode { .. }
                | Self::NegativeTime { .. }
                | Self::NegativeEventTime { .. }
                | Self::DuplicateTopic { .. }
                | Self::Encode { .. }
        )
    }
}
