//! `wshard export lerobot`: the LeRobot export's arguments and run (the work is
//! `wshard_export::lerobot`).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use wshard::align::Policy;
use wshard_export::lerobot::{self, parse_fps, LerobotOptions, VideoCodec};

use super::failure::failed;
use crate::exit_status::Status;

/// Arguments of `wshard export lerobot`.
#[derive(Debug, clap::Args)]
pub struct LerobotArgs {
    /// Episode directories (not one still recording), or data directories holding them
    /// (their finished episodes).
    #[arg(required = true, value_name = "EPISODE_OR_DATA_DIR")]
    pub inputs: Vec<PathBuf>,
    /// The output directory (the dataset root); refused when not empty unless --overwrite.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: PathBuf,
    /// Frames per second of the dataset's clock, a whole number (default: the rate of the
    /// first picture stream by name, else of the first exported stream, rounded).
    #[arg(long, value_name = "HZ", value_parser = parse_fps)]
    pub fps: Option<u32>,
    /// Channels of observation.state, concatenated in order (STREAM/CHANNEL or CHANNEL;
    /// repeat or comma-separate). Default: every low-dimensional signal-lane channel, streams
    /// by name, except integers float32 cannot hold exactly (32/64-bit: times in ns).
    #[arg(long, value_name = "CHANNEL", value_delimiter = ',')]
    pub state: Vec<String>,
    /// Channels of action, as for --state. Default: every low-dimensional action-lane
    /// channel.
    #[arg(long, value_name = "CHANNEL", value_delimiter = ',')]
    pub action: Vec<String>,
    /// Leave out the channels matching PATTERN (STREAM/CHANNEL, `*` any characters:
    /// '*/receive_t_ns'); repeat or comma-separate. A pattern matching no channel is refused.
    #[arg(long, value_name = "PATTERN", value_delimiter = ',')]
    pub exclude: Vec<String>,
    /// How low-dimensional channels are resampled onto the clock: hold, nearest or linear
    /// (pictures: nearest).
    #[arg(long, value_name = "POLICY", default_value = "hold", value_parser = parse_policy)]
    pub lowdim_policy: Policy,
    /// Video codec: h264 (libx264; any picture size) or av1 (libsvtav1, LeRobot's own
    /// default; Debian 12's needs pictures of at least 64x64).
    #[arg(long, value_name = "CODEC", default_value = "h264", value_parser = parse_codec)]
    pub vcodec: VideoCodec,
    /// The event label whose text events are the tasks.
    #[arg(long, value_name = "LABEL", default_value = lerobot::options::DEFAULT_TASK_LABEL)]
    pub task_event: String,
    /// robot_type of meta/info.json.
    #[arg(long, value_name = "TYPE")]
    pub robot_type: Option<String>,
    /// The ffmpeg program.
    #[arg(long, value_name = "PATH", default_value = lerobot::options::DEFAULT_FFMPEG)]
    pub ffmpeg: PathBuf,
    /// Replace an earlier export's output in the output directory (the files its
    /// .wshard-export.json lists); a directory holding any other file is refused.
    #[arg(long)]
    pub overwrite: bool,
    /// Begin the next data file (at an episode boundary) once one holds this many MB (0: one
    /// episode per file).
    #[arg(long, value_name = "MB", default_value_t = lerobot::options::DEFAULT_DATA_FILES_SIZE_IN_MB)]
    pub data_file_size_mb: u64,
    /// The same for video files.
    #[arg(long, value_name = "MB", default_value_t = lerobot::options::DEFAULT_VIDEO_FILES_SIZE_IN_MB)]
    pub video_file_size_mb: u64,
    /// No progress lines.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// A value clap refuses, with what was expected.
#[derive(Debug, thiserror::Error)]
#[error("expected {expected}")]
pub struct BadValue {
    expected: &'static str,
}

fn parse_policy(s: &str) -> Result<Policy, BadValue> {
    Policy::parse(s).ok_or(BadValue {
        expected: "hold, nearest or linear",
    })
}

fn parse_codec(s: &str) -> Result<VideoCodec, BadValue> {
    VideoCodec::parse(s).ok_or(BadValue {
        expected: "h264 or av1",
    })
}

fn options(args: &LerobotArgs) -> LerobotOptions {
    let chosen = |v: &Vec<String>| (!v.is_empty()).then(|| v.clone());
    LerobotOptions {
        fps: args.fps,
        state: chosen(&args.state),
        action: chosen(&args.action),
        exclude: args.exclude.clone(),
        lowdim_policy: args.lowdim_policy,
        video_codec: args.vcodec,
        task_label: args.task_event.clone(),
        robot_type: args.robot_type.clone(),
        ffmpeg: args.ffmpeg.clone(),
        overwrite: args.overwrite,
        data_files_size_in_mb: args.data_file_size_mb,
        video_files_size_in_mb: args.video_file_size_mb,
    }
}

/// Run the export; the exit code: 0 done, 1 an episode could not be read or does not fit
/// the dataset, 2 usage, ffmpeg or I/O error.
pub fn run(args: &LerobotArgs, out: &mut impl Write, err: &mut impl Write) -> u8 {
    let opts = options(args);
    let quiet = args.quiet;
    // On a terminal one progress line rewritten in place, else a line per episode.
    let terminal = std::io::stderr().is_terminal();
    let mut shown = false;
    let mut on_episode = |i: usize, n: usize, id: &str, frames: usize| {
        if quiet {
            return;
        }
        if terminal {
            let _ = write!(err, "\r\x1b[K[{i}/{n}] {id}: {frames} frames");
            let _ = err.flush();
            shown = true;
        } else {
            let _ = writeln!(err, "[{i}/{n}] {id}: {frames} frames");
        }
    };
    let result = lerobot::export(&args.inputs, &args.output, &opts, &mut on_episode);
    if shown {
        let _ = writeln!(err);
    }
    match result {
        Ok(s) => {
            for skipped in &s.skipped {
                let _ = writeln!(err, "skipped {}: {}", skipped.dir.display(), skipped.reason);
            }
            for (channel, why) in &s.left_out {
                let _ = writeln!(err, "left out {channel}: {why}");
            }
            let _ = writeln!(
                out,
                "wrote {}: {} episodes, {} frames at {} fps, {} tasks, videos: {}",
                s.output.display(),
                s.episodes,
                s.frames,
                s.fps,
                s.tasks,
                if s.videos.is_empty() {
                    "none".to_owned()
                } else {
                    s.videos.join(", ")
                }
            );
            Status::Ok.code()
        }
        Err(e) => failed(err, "lerobot", &e, e.is_bad_input()),
    }
}
