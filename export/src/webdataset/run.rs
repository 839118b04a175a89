//! The export: episodes in id order, each loaded, planned, its samples encoded in parallel
//! batches and written in order, statistics accumulated in sample order, then the dataset
//! files; the output is renamed into place at the end.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::episode::load;
use super::error::WebdatasetError;
use super::frames::encode_batch;
use super::meta_files::{manifest, preprocessing_config, processing_metadata, EpisodeReport};
use super::options::WebdatasetOptions;
use super::output;
use super::plan::{plan, Counts};
use super::sample::{assemble, SampleFiles};
use super::shard::{ShardInfo, ShardWriter};
use super::stats::Stats;
use crate::channel_filter::ChannelFilter;
use crate::inputs::resolve_inputs;
use wshard::episode_dir::EpisodeDir;

/// Samples encoded in parallel between writes.
const BATCH_SAMPLES: usize = 256;

/// What an export reports as it goes (for a progress bar).
#[derive(Debug)]
pub enum Progress<'a> {
    /// An input entry that is not exported, and why.
    LeftOut { path: &'a Path, reason: &'a str },
    /// The episodes to export.
    Episodes { count: usize },
    /// Episode `index` is planned: `samples` will be written.
    EpisodeStarted {
        index: usize,
        episode: &'a str,
        samples: usize,
    },
    /// `count` more samples written.
    SamplesWritten { count: usize },
    /// Episode `index` is done.
    EpisodeDone {
        index: usize,
        episode: &'a str,
        counts: Counts,
    },
}

/// What an export wrote.
#[derive(Debug)]
pub struct ExportSummary {
    pub episodes: Vec<EpisodeReport>,
    pub shards: Vec<ShardInfo>,
    pub samples: usize,
}

/// Export `inputs` (episode or data directories) as WebDataset shards into `output`.
///
/// # Errors
/// [`WebdatasetError`]; the output directory is then left as it was.
pub fn export(
    inputs: &[PathBuf],
    output_dir: &Path,
    opts: &WebdatasetOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<ExportSummary, WebdatasetError> {
    opts.validate()?;
    let mut selected = resolve_inputs(inputs)?;
    if let Some(n) = opts.max_episodes {
        selected.episodes.truncate(n);
    }
    for s in &selected.skipped {
        progress(Progress::LeftOut {
            path: &s.dir,
            reason: &s.reason,
        });
    }
    let episodes = selected
        .episodes
        .iter()
        .map(|e| {
            EpisodeDir::open(&e.dir).map_err(|source| WebdatasetError::Episode {
                episode: e.episode_id.clone(),
                source: Box::new(source),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    ChannelFilter::new(&opts.exclude)?.check_used(&episodes)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.workers)
        .build()
        .map_err(|e| WebdatasetError::BadOption {
            option: "workers",
            message: e.to_string(),
        })?;
    let partial = output::begin(output_dir, opts.overwrite)?;
    let result = write_all(&episodes, &partial, opts, &pool, progress).and_then(|mut summary| {
        let left_out: Vec<(String, String)> = selected
            .skipped
            .iter()
            .map(|s| {
                let name = s
                    .dir
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                (name, s.reason.clone())
            })
            .collect();
        let meta = processing_metadata(opts, &summary.episodes, &left_out, &summary.shards);
        let mut meta_bytes = serde_json::to_vec_pretty(&meta).unwrap_or_default();
        meta_bytes.push(b'\n');
        output::write(&partial, "processing_metadata.json", &meta_bytes)?;
        output::write(
            &partial,
            "preprocessing_config.yaml",
            preprocessing_config(opts).as_bytes(),
        )?;
        output::write(
            &partial,
            "manifest.jsonl",
            manifest(&summary.shards).as_bytes(),
        )?;
        output::commit(&partial, output_dir)?;
        summary.samples = summary.episodes.iter().map(|e| e.counts.samples).sum();
        Ok(summary)
    });
    if result.is_err() {
        output::abandon(&partial);
    }
    result
}

fn write_all(
    episodes: &[EpisodeDir],
    dir: &Path,
    opts: &WebdatasetOptions,
    pool: &rayon::ThreadPool,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<ExportSummary, WebdatasetError> {
    progress(Progress::Episodes {
        count: episodes.len(),
    });
    let mut writer = ShardWriter::new(dir, opts.samples_per_shard);
    let mut stats = Stats::default();
    let mut reports = Vec::with_capacity(episodes.len());
    let t = opts.window_len();
    for (index, dir_ep) in episodes.iter().enumerate() {
        let ep = load(dir_ep, opts)?;
        let (planned, counts) = plan(&ep, opts)?;
        progress(Progress::EpisodeStarted {
            index,
            episode: &ep.id,
            samples: planned.len(),
        });
        for batch in planned.chunks(BATCH_SAMPLES) {
            let built: Vec<Result<SampleFiles, WebdatasetError>> = pool.install(|| {
                let encoded = encode_batch(&ep, batch, opts)?;
                Ok::<_, WebdatasetError>(
                    batch
                        .par_iter()
                        .map(|p| assemble(&ep, p, opts, &encoded))
                        .collect(),
                )
            })?;
            for sample in built {
                let sample = sample?;
                for (key, window) in ep.keys.iter().zip(&sample.windows) {
                    stats.push(&key.key, t, key.width, window)?;
                }
                writer.append(&sample)?;
            }
            progress(Progress::SamplesWritten { count: batch.len() });
        }
        progress(Progress::EpisodeDone {
            index,
            episode: &ep.id,
            counts,
        });
        reports.push(EpisodeReport {
            episode_id: ep.id.clone(),
            anchor_channel: ep.anchor_key.clone(),
            lowdim_clock: ep.lowdim_clock.clone(),
            lowdim_rows: ep.lowdim.rows(),
            lowdim_keys: ep.keys.iter().map(|k| k.key.clone()).collect(),
            pictures: ep.pictures.iter().map(|p| p.key.clone()).collect(),
            counts,
        });
    }
    let shards = writer.finish()?;
    let mut stats_bytes = serde_json::to_vec(&stats.finish()).unwrap_or_default();
    stats_bytes.push(b'\n');
    output::write(dir, "stats.json", &stats_bytes)?;
    Ok(ExportSummary {
        episodes: reports,
        shards,
        samples: 0,
    })
}
