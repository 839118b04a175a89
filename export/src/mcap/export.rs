//! Export many episodes: resolve the inputs, check the output directory, write one MCAP
//! per episode (several at once with `workers`), and report each in episode order.
//!
//! The output directory's marker (`crate::output_marker`) lists the files exports wrote
//! there. With `overwrite`, a directory exports made takes new files: each exported
//! episode's file replaces the one of the same episode, the files of other episodes stay
//! (one file per episode: they are still whole). While the export runs the marker also
//! lists the files about to be written, so an export stopped half-way leaves a directory
//! that can be written into again; at the end it lists the earlier files and those written.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::error::McapError;
use super::options::McapOptions;
use super::writer::{export_episode, mcap_file, EpisodeMcap};
use crate::inputs::{resolve_inputs, Inputs, Skipped};
use crate::output_marker::{self, Marker};

/// The MCAP export's name in the output's marker.
const EXPORT: &str = "mcap";

/// What an export did: per episode (sorted by id) its file or its error, and what the
/// data directories held that was not exported.
#[derive(Debug)]
pub struct McapExport {
    pub episodes: Vec<(PathBuf, Result<EpisodeMcap, McapError>)>,
    pub skipped: Vec<Skipped>,
}

impl McapExport {
    /// The episodes that failed.
    pub fn failures(&self) -> impl Iterator<Item = (&PathBuf, &McapError)> {
        self.episodes
            .iter()
            .filter_map(|(d, r)| r.as_ref().err().map(|e| (d, e)))
    }
}

/// The name of an episode's file in the output directory.
fn file_name(out_dir: &Path, episode_id: &str) -> String {
    mcap_file(out_dir, episode_id)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Refuse a non-empty `out_dir` unless `overwrite` and an export made it; create it; mark
/// the files about to be written (`planned`). The earlier export's marker, if any.
fn prepare_output(
    out_dir: &Path,
    overwrite: bool,
    planned: &BTreeSet<String>,
) -> Result<Option<Marker>, McapError> {
    let prior = match std::fs::read_dir(out_dir) {
        Ok(mut entries) => {
            if entries.next().is_none() {
                None
            } else if overwrite {
                Some(output_marker::check_replaceable(out_dir)?)
            } else {
                return Err(McapError::OutputNotEmpty {
                    dir: out_dir.to_path_buf(),
                });
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(out_dir)
                .map_err(|e| McapError::io("create directory", out_dir, e))?;
            None
        }
        Err(e) => return Err(McapError::io("list", out_dir, e)),
    };
    let mut marked = planned.clone();
    if let Some(p) = &prior {
        marked.extend(p.files.iter().cloned());
    }
    output_marker::write(out_dir, EXPORT, &marked)?;
    Ok(prior)
}

/// Mark the earlier files and the `written` ones.
fn finish_output(
    out_dir: &Path,
    prior: Option<Marker>,
    written: &BTreeSet<String>,
) -> Result<(), McapError> {
    let mut marked = prior.map(|p| p.files).unwrap_or_default();
    marked.extend(written.iter().cloned());
    output_marker::write(out_dir, EXPORT, &marked)?;
    Ok(())
}

/// Export every episode `inputs` name into `out_dir` (`<episode>.mcap` each). An episode
/// that fails does not stop the others; `progress` is called as each one ends (in any
/// order when `workers` > 1).
///
/// # Errors
/// [`McapError::Inputs`] (the errors of [`resolve_inputs`]), [`McapError::OutputNotEmpty`], and I/O errors on
/// `out_dir`; an episode's own error is in [`McapExport::episodes`].
pub fn export_mcap(
    inputs: &[PathBuf],
    out_dir: &Path,
    opts: &McapOptions,
    progress: &(dyn Fn(&Path, &Result<EpisodeMcap, McapError>) + Sync),
) -> Result<McapExport, McapError> {
    let resolved = resolve_inputs(inputs)?;
    export_resolved(resolved, out_dir, opts, progress)
}

/// [`export_mcap`] of inputs already resolved with [`resolve_inputs`].
///
/// # Errors
/// [`McapError::OutputNotEmpty`] and I/O errors on `out_dir`.
pub fn export_resolved(
    resolved: Inputs,
    out_dir: &Path,
    opts: &McapOptions,
    progress: &(dyn Fn(&Path, &Result<EpisodeMcap, McapError>) + Sync),
) -> Result<McapExport, McapError> {
    let planned: BTreeSet<String> = resolved
        .episodes
        .iter()
        .map(|e| file_name(out_dir, &e.episode_id))
        .collect();
    let prior = prepare_output(out_dir, opts.overwrite, &planned)?;
    let run = |dir: &Path| {
        let r = export_episode(dir, out_dir, opts);
        progress(dir, &r);
        r
    };
    let episodes: Vec<(PathBuf, Result<EpisodeMcap, McapError>)> =
        if opts.workers > 1 && resolved.episodes.len() > 1 {
            use rayon::prelude::*;
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(opts.workers)
                .build()
                .map_err(|e| McapError::io("start workers", out_dir, std::io::Error::other(e)))?;
            pool.install(|| {
                resolved
                    .episodes
                    .par_iter()
                    .map(|e| (e.dir.clone(), run(&e.dir)))
                    .collect()
            })
        } else {
            resolved
                .episodes
                .iter()
                .map(|e| (e.dir.clone(), run(&e.dir)))
                .collect()
        };
    let written: BTreeSet<String> = episodes
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok())
        .filter_map(|r| r.file.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    finish_output(out_dir, prior, &written)?;
    Ok(McapExport {
        episodes,
        skipped: resolved.skipped,
    })
}
