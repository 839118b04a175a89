//! What a LeRobot export is asked for.

use std::path::PathBuf;

use wshard::align::Policy;

use super::error::LerobotError;

/// The highest `--fps` accepted.
pub const MAX_FPS: u32 = 1000;

/// The event label whose text events are the episode's task.
pub const DEFAULT_TASK_LABEL: &str = "instruction";

/// LeRobot's default data file size (MB).
pub const DEFAULT_DATA_FILES_SIZE_IN_MB: u64 = 100;
/// LeRobot's default video file size (MB).
pub const DEFAULT_VIDEO_FILES_SIZE_IN_MB: u64 = 200;

/// The ffmpeg program run when none is named.
pub const DEFAULT_FFMPEG: &str = "ffmpeg";

/// The video codec of the exported videos.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VideoCodec {
    /// H.264 (libx264), yuv420p (yuv444p for odd picture sides): any picture size, decoded
    /// by PyAV and torchcodec. The default.
    #[default]
    H264,
    /// AV1 (libsvtav1), yuv420p, LeRobot's own default; Debian 12's SVT-AV1 needs both
    /// picture sides at least 64 pixels.
    Av1,
}

impl VideoCodec {
    /// `h264` or `av1`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::H264 => "h264",
            Self::Av1 => "av1",
        }
    }

    /// Parse `h264` / `libx264` or `av1` / `libsvtav1`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "h264" | "libx264" => Some(Self::H264),
            "av1" | "libsvtav1" => Some(Self::Av1),
            _ => None,
        }
    }

    /// The ffmpeg encoder.
    #[must_use]
    pub fn encoder(self) -> &'static str {
        match self {
            Self::H264 => "libx264",
            Self::Av1 => "libsvtav1",
        }
    }
}

/// Options of a LeRobot export.
#[derive(Clone, Debug, PartialEq)]
pub struct LerobotOptions {
    /// Frames per second of the aligned clock; `None`: the rate of the first picture
    /// stream (else of the first stream), rounded.
    pub fps: Option<u32>,
    /// Channels of `observation.state` (`STREAM/CHANNEL` or a channel name only one stream
    /// has), concatenated in this order; `None`: every low-dimensional signal-lane channel.
    pub state: Option<Vec<String>>,
    /// Channels of `action`, as for `state`; `None`: every low-dimensional action-lane
    /// channel.
    pub action: Option<Vec<String>>,
    /// Channels left out of every feature (`crate::channel_filter` patterns over
    /// `STREAM/CHANNEL`).
    pub exclude: Vec<String>,
    /// How low-dimensional channels are resampled onto the clock (pictures: `nearest`).
    pub lowdim_policy: Policy,
    pub video_codec: VideoCodec,
    /// The event label of the task texts.
    pub task_label: String,
    /// `robot_type` of `meta/info.json`.
    pub robot_type: Option<String>,
    /// The ffmpeg program.
    pub ffmpeg: PathBuf,
    /// Replace a non-empty output directory.
    pub overwrite: bool,
    /// A data file is closed (at an episode boundary) once it holds this many MB; 0: one
    /// episode per file. info.json's `data_files_size_in_mb`.
    pub data_files_size_in_mb: u64,
    /// The same for video files (`video_files_size_in_mb`).
    pub video_files_size_in_mb: u64,
}

impl Default for LerobotOptions {
    fn default() -> Self {
        Self {
            fps: None,
            state: None,
            action: None,
            exclude: Vec::new(),
            lowdim_policy: Policy::Hold,
            video_codec: VideoCodec::H264,
            task_label: DEFAULT_TASK_LABEL.to_owned(),
            robot_type: None,
            ffmpeg: PathBuf::from(DEFAULT_FFMPEG),
            overwrite: false,
            data_files_size_in_mb: DEFAULT_DATA_FILES_SIZE_IN_MB,
            video_files_size_in_mb: DEFAULT_VIDEO_FILES_SIZE_IN_MB,
        }
    }
}

/// Parse an `--fps` value: a whole number from 1 to [`MAX_FPS`].
///
/// # Errors
/// [`LerobotError::BadFps`].
pub fn parse_fps(s: &str) -> Result<u32, LerobotError> {
    let bad = || LerobotError::BadFps {
        fps: s.to_owned(),
        max: MAX_FPS,
    };
    let fps: u32 = s.trim().parse().map_err(|_| bad())?;
    check_fps(fps).map_err(|_| bad())
}

/// `fps` if it is from 1 to [`MAX_FPS`].
///
/// # Errors
/// [`LerobotError::BadFps`].
pub fn check_fps(fps: u32) -> Result<u32, LerobotError> {
    if (1..=MAX_FPS).contains(&fps) {
        Ok(fps)
    } else {
        Err(LerobotError::BadFps {
            fps: fps.to_string(),
            max: MAX_FPS,
        })
    }
}
