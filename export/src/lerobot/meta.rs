//! `meta/info.json` and `meta/stats.json`, and the file paths of a LeRobot v3 dataset.

use std::path::Path;

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::error::LerobotError;
use super::select::Plan;
use super::stats::FeatureStats;

/// The dataset format this export writes.
pub const CODEBASE_VERSION: &str = "v3.0";
/// Files per chunk directory (LeRobot's `DEFAULT_CHUNK_SIZE`).
pub const CHUNKS_SIZE: u64 = 1000;
/// Bytes per MB, as LeRobot counts them.
pub const BYTES_PER_MB: u64 = 1024 * 1024;
/// `data_path` of info.json.
pub const DATA_PATH: &str = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet";
/// `video_path` of info.json.
pub const VIDEO_PATH: &str = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4";
/// The episodes table (one file: `meta/episodes/chunk-000/file-000.parquet`).
pub const EPISODES_FILE: &str = "meta/episodes/chunk-000/file-000.parquet";
/// The tasks table.
pub const TASKS_FILE: &str = "meta/tasks.parquet";
/// The dataset description.
pub const INFO_FILE: &str = "meta/info.json";
/// The dataset's statistics.
pub const STATS_FILE: &str = "meta/stats.json";

/// `data/chunk-C/file-F.parquet`.
#[must_use]
pub fn data_file(chunk: u64, file: u64) -> String {
    format!("data/chunk-{chunk:03}/file-{file:03}.parquet")
}

/// `videos/KEY/chunk-C/file-F.mp4`.
#[must_use]
pub fn video_file(key: &str, chunk: u64, file: u64) -> String {
    format!("videos/{key}/chunk-{chunk:03}/file-{file:03}.mp4")
}

/// The next `(chunk, file)` after `(chunk, file)`, as LeRobot's `update_chunk_file_indices`.
#[must_use]
pub fn next_file(chunk: u64, file: u64) -> (u64, u64) {
    if file + 1 >= CHUNKS_SIZE {
        (chunk + 1, 0)
    } else {
        (chunk, file + 1)
    }
}

/// How a video feature was encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VideoInfo {
    /// `h264` or `av1` (PyAV's codec name).
    pub codec: &'static str,
    pub pix_fmt: &'static str,
}

/// Totals of the dataset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Totals {
    pub episodes: u64,
    pub frames: u64,
    pub tasks: u64,
}

/// The file size limits (MB) of the dataset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileSizes {
    pub data_mb: u64,
    pub video_mb: u64,
}

fn default_feature(dtype: &str) -> Value {
    json!({"dtype": dtype, "shape": [1], "names": null})
}

/// The `features` of info.json.
#[must_use]
pub fn features(plan: &Plan, fps: u32, videos: &[VideoInfo]) -> Map<String, Value> {
    let mut f = Map::new();
    for v in plan.vectors() {
        f.insert(
            v.key.to_owned(),
            json!({"dtype": "float32", "shape": [v.dim()], "names": v.names}),
        );
    }
    for (v, info) in plan.videos.iter().zip(videos) {
        f.insert(
            v.key.clone(),
            json!({
                "dtype": "video",
                "shape": [v.height, v.width, 3],
                "names": ["height", "width", "channels"],
                "info": {
                    "video.height": v.height,
                    "video.width": v.width,
                    "video.codec": info.codec,
                    "video.pix_fmt": info.pix_fmt,
                    "video.is_depth_map": false,
                    "video.fps": fps,
                    "video.channels": 3,
                    "has_audio": false
                }
            }),
        );
    }
    f.insert("timestamp".into(), default_feature("float32"));
    for name in ["frame_index", "episode_index", "index", "task_index"] {
        f.insert(name.into(), default_feature("int64"));
    }
    f
}

/// The whole `meta/info.json`.
#[must_use]
pub fn info(
    plan: &Plan,
    fps: u32,
    videos: &[VideoInfo],
    totals: &Totals,
    sizes: FileSizes,
    robot_type: Option<&str>,
) -> Value {
    json!({
        "codebase_version": CODEBASE_VERSION,
        "robot_type": robot_type,
        "total_episodes": totals.episodes,
        "total_frames": totals.frames,
        "total_tasks": totals.tasks,
        "chunks_size": CHUNKS_SIZE,
        "data_files_size_in_mb": sizes.data_mb,
        "video_files_size_in_mb": sizes.video_mb,
        "fps": fps,
        "splits": {"train": format!("0:{}", totals.episodes)},
        "data_path": DATA_PATH,
        "video_path": if plan.videos.is_empty() { Value::Null } else { json!(VIDEO_PATH) },
        "features": features(plan, fps, videos),
    })
}

/// `meta/stats.json`: each feature's statistics.
#[must_use]
pub fn stats(features: &[(String, FeatureStats)]) -> Value {
    Value::Object(
        features
            .iter()
            .map(|(k, s)| (k.clone(), s.to_json()))
            .collect(),
    )
}

/// Write `value` as JSON indented by 4 (as LeRobot's `write_json`).
///
/// # Errors
/// [`LerobotError::Json`], [`LerobotError::Io`].
pub fn write_json(path: &Path, value: &Value) -> Result<(), LerobotError> {
    let mut bytes = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut bytes, formatter);
    value
        .serialize(&mut ser)
        .map_err(|source| LerobotError::Json {
            file: path.to_path_buf(),
            source,
        })?;
    bytes.push(b'\n');
    std::fs::write(path, bytes).map_err(|e| LerobotError::io("write", path, e))
}
