//! The whole export: episodes in, a LeRobotDataset v3 directory out.

use std::path::{Path, PathBuf};

use super::episode::{write_episode, Progress};
use super::error::LerobotError;
use super::frames::{align_frames, default_fps};
use super::meta::{self, Totals, VideoInfo};
use super::mismatch::check_same;
use super::options::{check_fps, LerobotOptions, VideoCodec};
use super::output;
use super::select::{plan, Plan};
use super::sinks::{DataSink, VideoSettings, VideoSink};
use super::stats::FeatureStats;
use super::tables::{data_schema, write_episodes, write_tasks, EpisodeRow};
use super::video::{pix_fmt, probe};
use crate::channel_filter::ChannelFilter;
use crate::inputs::{resolve_inputs, InputsError, Skipped};
use wshard::episode_dir::EpisodeDir;

/// What an export did.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub output: PathBuf,
    pub fps: u32,
    pub episodes: u64,
    pub frames: u64,
    pub tasks: u64,
    /// The video feature keys.
    pub videos: Vec<String>,
    /// Episodes of data directories left out, and why.
    pub skipped: Vec<Skipped>,
    /// Picture channels left out (`STREAM/CHANNEL`, why).
    pub left_out: Vec<(String, &'static str)>,
}

fn open(dir: &Path) -> Result<EpisodeDir, LerobotError> {
    EpisodeDir::open(dir).map_err(|source| LerobotError::Episode {
        path: dir.to_path_buf(),
        source: Box::new(source),
    })
}

/// One episode done: `(position, total, episode id, frames)`.
pub type OnEpisode<'a> = dyn FnMut(usize, usize, &str, usize) + 'a;

/// Export the episodes of `inputs` as one LeRobotDataset v3 at `output`.
///
/// # Errors
/// [`LerobotError`]: bad options, unreadable or mismatched episodes, a missing ffmpeg,
/// I/O. Nothing is left at `output` on error (the partial directory is removed).
pub fn export(
    inputs: &[PathBuf],
    output: &Path,
    opts: &LerobotOptions,
    on_episode: &mut OnEpisode<'_>,
) -> Result<Summary, LerobotError> {
    if let Some(fps) = opts.fps {
        check_fps(fps)?;
    }
    let resolved = resolve_inputs(inputs)?;
    let episodes = resolved
        .episodes
        .iter()
        .map(|e| open(&e.dir))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(first) = episodes.first() else {
        return Err(InputsError::no_episodes(inputs, resolved.skipped.clone()).into());
    };
    let exclude = ChannelFilter::new(&opts.exclude)?;
    exclude.check_used(&episodes)?;
    let plan0 = plan(first, opts, &exclude)?;
    let fps = match opts.fps {
        Some(f) => f,
        None => default_fps(first, &plan0)?,
    };
    let mut infos = Vec::new();
    for v in &plan0.videos {
        infos.push(VideoInfo {
            codec: opts.video_codec.as_str(),
            pix_fmt: pix_fmt(&v.key, opts.video_codec, v.width, v.height)?,
        });
    }
    if !plan0.videos.is_empty() {
        probe(&opts.ffmpeg)?;
    }
    let partial = output::prepare(output, opts.overwrite)?;
    let result = write_dataset(
        &partial,
        &episodes,
        (&plan0, &exclude),
        fps,
        &infos,
        opts,
        on_episode,
    );
    match result {
        Ok(totals) => {
            output::commit(&partial, output)?;
            Ok(Summary {
                output: output.to_path_buf(),
                fps,
                episodes: totals.episodes,
                frames: totals.frames,
                tasks: totals.tasks,
                videos: plan0.videos.iter().map(|v| v.key.clone()).collect(),
                skipped: resolved.skipped,
                left_out: plan0.left_out,
            })
        }
        Err(e) => {
            output::abandon(&partial);
            Err(e)
        }
    }
}

fn write_dataset(
    root: &Path,
    episodes: &[wshard::episode_dir::EpisodeDir],
    (plan0, exclude): (&Plan, &ChannelFilter),
    fps: u32,
    infos: &[VideoInfo],
    opts: &LerobotOptions,
    on_episode: &mut OnEpisode<'_>,
) -> Result<Totals, LerobotError> {
    let mut data = DataSink::new(root, data_schema(plan0), opts.data_files_size_in_mb);
    let mut videos: Vec<VideoSink> = plan0
        .videos
        .iter()
        .zip(infos)
        .map(|(v, info)| {
            VideoSink::new(
                root,
                VideoSettings {
                    key: v.key.clone(),
                    ffmpeg: opts.ffmpeg.clone(),
                    codec: if info.codec == VideoCodec::Av1.as_str() {
                        VideoCodec::Av1
                    } else {
                        VideoCodec::H264
                    },
                    pix_fmt: info.pix_fmt,
                    width: v.width,
                    height: v.height,
                    fps,
                    limit_mb: opts.video_files_size_in_mb,
                },
            )
        })
        .collect();
    let first_id = episodes
        .first()
        .map(|e| e.episode_id().to_owned())
        .unwrap_or_default();
    let mut progress = Progress::default();
    let mut rows: Vec<EpisodeRow> = Vec::with_capacity(episodes.len());
    for (i, episode) in episodes.iter().enumerate() {
        let p = plan(episode, opts, exclude)?;
        check_same(&first_id, plan0, episode.episode_id(), &p)?;
        let frames = align_frames(episode, &p, fps, opts.lowdim_policy)?;
        let index = i64::try_from(i).unwrap_or(i64::MAX);
        let row = write_episode(
            episode,
            index,
            &p,
            &frames,
            fps,
            &opts.task_label,
            &mut progress,
            &mut data,
            &mut videos,
        )?;
        rows.push(row);
        on_episode(i + 1, episodes.len(), episode.episode_id(), frames.len());
    }
    data.finish()?;
    for v in videos {
        v.finish()?;
    }
    let episodes_file = root.join(meta::EPISODES_FILE);
    if let Some(parent) = episodes_file.parent() {
        output::create_dir(parent)?;
    }
    write_episodes(&episodes_file, plan0, &rows)?;
    write_tasks(&root.join(meta::TASKS_FILE), progress.tasks.tasks())?;
    let totals = Totals {
        episodes: rows.len() as u64,
        frames: u64::try_from(progress.frames).unwrap_or(0),
        tasks: progress.tasks.tasks().len() as u64,
    };
    meta::write_json(
        &root.join(meta::INFO_FILE),
        &meta::info(
            plan0,
            fps,
            infos,
            &totals,
            meta::FileSizes {
                data_mb: opts.data_files_size_in_mb,
                video_mb: opts.video_files_size_in_mb,
            },
            opts.robot_type.as_deref(),
        ),
    )?;
    let features: Vec<String> = rows
        .first()
        .map(|r| r.stats.iter().map(|s| s.0.clone()).collect())
        .unwrap_or_default();
    let aggregated: Vec<(String, FeatureStats)> = features
        .iter()
        .enumerate()
        .filter_map(|(k, name)| {
            let per: Vec<FeatureStats> = rows
                .iter()
                .filter_map(|r| r.stats.get(k).map(|s| s.1.clone()))
                .collect();
            FeatureStats::aggregate(&per).map(|s| (name.clone(), s))
        })
        .collect();
    meta::write_json(&root.join(meta::STATS_FILE), &meta::stats(&aggregated))?;
    Ok(totals)
}
