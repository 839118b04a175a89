//! One episode into the dataset: its rows to the data file, its pictures to the videos, its
//! statistics and its row of the episodes table.

use wshard::episode_dir::{EpisodeDir, StreamData};

use super::error::LerobotError;
use super::frames::EpisodeFrames;
use super::select::{Plan, VideoFeature};
use super::sinks::{DataSink, VideoSink};
use super::stats::{FeatureStats, COLOR_CHANNELS};
use super::tables::{DataRows, EpisodeRow};
use super::tasks::{frame_tasks, TaskTable};
use super::video::RGB_BYTES;

/// Values a u8 pixel takes.
const PIXEL_VALUES: usize = 256;

/// Where the dataset stands: frames written so far, the tasks seen.
#[derive(Debug, Default)]
pub struct Progress {
    pub frames: i64,
    pub tasks: TaskTable,
}

/// The default per-frame features, in the order LeRobot lists them.
pub const DEFAULT_FEATURES: [&str; 5] = [
    "timestamp",
    "frame_index",
    "episode_index",
    "index",
    "task_index",
];

fn as_f64<T: Copy>(v: &[T], f: impl Fn(T) -> f64) -> Vec<f64> {
    v.iter().map(|x| f(*x)).collect()
}

/// Write `video`'s frames of the episode to `sink`; the histograms of its pixels.
fn write_video(
    episode: &EpisodeDir,
    video: &VideoFeature,
    rows: &[i64],
    data: &StreamData,
    sink: &mut VideoSink,
) -> Result<[[u64; PIXEL_VALUES]; COLOR_CHANNELS], LerobotError> {
    let mut hist = [[0u64; PIXEL_VALUES]; COLOR_CHANNELS];
    let channel = data.channel(&video.source.channel);
    let mut rgb: Vec<u8> = Vec::new();
    sink.begin_episode()?;
    for &row in rows {
        let step = channel
            .zip(u64::try_from(row).ok())
            .and_then(|(c, r)| c.step(r))
            .ok_or_else(|| LerobotError::MissingStep {
                episode: episode.episode_id().to_owned(),
                channel: video.source.key(),
                step: row,
            })?;
        let frame: &[u8] = if video.mono {
            rgb.clear();
            rgb.extend(step.iter().flat_map(|&p| [p; RGB_BYTES]));
            &rgb
        } else {
            step
        };
        for px in frame.chunks_exact(RGB_BYTES) {
            for (c, &v) in px.iter().enumerate() {
                hist[c][usize::from(v)] += 1;
            }
        }
        sink.push(frame)?;
    }
    Ok(hist)
}

/// Export one episode as dataset episode `index`.
///
/// # Errors
/// Reading the picture streams, writing the files.
#[allow(clippy::too_many_arguments)]
pub fn write_episode(
    episode: &EpisodeDir,
    index: i64,
    plan: &Plan,
    frames: &EpisodeFrames,
    fps: u32,
    task_label: &str,
    state: &mut Progress,
    data: &mut DataSink,
    videos: &mut [VideoSink],
) -> Result<EpisodeRow, LerobotError> {
    let n = frames.len();
    let length = i64::try_from(n).unwrap_or(i64::MAX);
    let (per_frame, distinct) = frame_tasks(episode, task_label, &frames.t_ns);
    let task_index: Vec<i64> = per_frame.iter().map(|t| state.tasks.index_of(t)).collect();
    let frame_index: Vec<i64> = (0..length).collect();
    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
    let timestamp: Vec<f32> = (0..n).map(|k| (k as f64 / f64::from(fps)) as f32).collect();
    let global: Vec<i64> = (state.frames..state.frames + length).collect();
    let mut vectors = Vec::new();
    let mut stats = Vec::new();
    for v in plan.vectors() {
        let values: &[f32] = if v.key == super::select::STATE_KEY {
            &frames.state
        } else {
            &frames.action
        };
        vectors.push((values, v.dim()));
        stats.push((
            v.key.to_owned(),
            FeatureStats::of_vectors(&as_f64(values, f64::from), v.dim()),
        ));
    }
    let rows = DataRows {
        vectors,
        timestamp,
        frame_index,
        episode_index: vec![index; n],
        index: global,
        task_index,
    };
    let (data_chunk, data_file) = data.write(&rows)?;
    let mut spans = Vec::with_capacity(plan.videos.len());
    let mut streams: Vec<StreamData> = Vec::new();
    for (k, (video, sink)) in plan.videos.iter().zip(videos.iter_mut()).enumerate() {
        let stream = &video.source.stream;
        let pos = match streams.iter().position(|s| s.name() == stream) {
            Some(p) => p,
            None => {
                let read = episode
                    .read_stream(stream)
                    .map_err(|source| LerobotError::Episode {
                        path: episode.path().to_path_buf(),
                        source: Box::new(source),
                    })?;
                streams.push(read);
                streams.len() - 1
            }
        };
        let picks = frames.picture_rows.get(k).map_or(&[][..], Vec::as_slice);
        let hist = write_video(episode, video, picks, &streams[pos], sink)?;
        spans.push(sink.end_episode()?);
        stats.push((video.key.clone(), FeatureStats::of_pixels(&hist, n as u64)));
    }
    #[allow(clippy::cast_precision_loss)]
    let defaults: [Vec<f64>; 5] = [
        as_f64(&rows.timestamp, f64::from),
        as_f64(&rows.frame_index, |x| x as f64),
        as_f64(&rows.episode_index, |x| x as f64),
        as_f64(&rows.index, |x| x as f64),
        as_f64(&rows.task_index, |x| x as f64),
    ];
    for (name, values) in DEFAULT_FEATURES.iter().zip(defaults) {
        stats.push(((*name).to_owned(), FeatureStats::of_vectors(&values, 1)));
    }
    let row = EpisodeRow {
        episode_index: index,
        tasks: distinct,
        length,
        data_chunk_index: i64::try_from(data_chunk).unwrap_or(i64::MAX),
        data_file_index: i64::try_from(data_file).unwrap_or(i64::MAX),
        dataset_from_index: state.frames,
        dataset_to_index: state.frames + length,
        videos: spans,
        stats,
    };
    state.frames += length;
    Ok(row)
}
