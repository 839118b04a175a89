//! `wshard export lerobot`: episodes as one LeRobotDataset v3 directory, the layout the
//! `lerobot` package (0.4, `codebase_version` "v3.0") loads:
//!
//! ```text
//! meta/info.json                                 fps, features (dtype, shape, names, video info), paths
//! meta/stats.json                                per-feature min/max/mean/std/count/q01..q99
//! meta/tasks.parquet                             task text (pandas index) -> task_index
//! meta/episodes/chunk-000/file-000.parquet       per episode: tasks, length, data and video offsets, stats
//! data/chunk-000/file-000.parquet                one row per frame, many episodes per file
//! videos/<key>/chunk-000/file-000.mp4            many episodes per file, back to back
//! ```
//!
//! - [`options`]: what is asked (fps, state/action channels, codec, ...).
//! - `crate::inputs`: which episodes; [`select`]: which channels become which feature
//!   (`crate::channel_filter`: `--exclude`); [`mismatch`]: every episode has the first one's
//!   features, or the error says what differs.
//! - [`frames`]: an episode on the fixed-rate clock (`wshard::align`).
//! - [`tasks`]: each frame's task from the episode's `instruction` events.
//! - [`stats`]: the statistics; [`tables`]: the Parquet tables; [`video`]: ffmpeg;
//!   [`sinks`]: files that roll over at LeRobot's size limits; [`meta`]: info.json,
//!   stats.json and the paths; [`episode`]: one episode written; [`output`]: the partial
//!   directory renamed at the end.
//!
//! The format is written out in `docs/EXPORT.md`, "LeRobot".

pub mod episode;
pub mod error;
pub mod export;
pub mod frames;
pub mod meta;
pub mod mismatch;
pub mod options;
pub mod output;
pub mod select;
pub mod sinks;
pub mod stats;
pub mod tables;
pub mod tasks;
pub mod video;

pub use error::{FeatureMismatch, LerobotError};
pub use export::{export, Summary};
pub use options::{parse_fps, LerobotOptions, VideoCodec, MAX_FPS};
