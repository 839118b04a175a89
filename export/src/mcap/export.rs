//! Export many episodes: resolve the inputs, check the output directory, write one MCAP
//! per episode (several at once with `workers`), and report each in episode order.

use std::path::{Path, PathBuf};

use super::error::McapError;
use super::options::McapOptions;
use super::writer::{export_episode, EpisodeMcap};
use crate::inputs::{resolve_inputs, Inputs, Skipped};

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

/// Refuse a non-empty `out_dir` unless `overwrite`; create it.
fn prepare_output(out_dir: &Path, overwrite: bool) -> Result<(), McapError> {
    match std::fs::read_dir(out_dir) {
        Ok(mut entries) => {
            if !overwrite && entries.next().is_some() {
                return Err(McapError::OutputNotEmpty {
                    dir: out_dir.to_path_buf(),
                });
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir_all(out_dir)
            .map_err(|e| McapError::io("create directory", out_dir, e)),
        Err(e) => Err(McapError::io("list", out_dir, e)),
    }
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
    prepare_output(out_dir, opts.overwrite)?;
    let run = |dir: &Path| {
        let r = export_episode(dir, out_dir, opts);
        progress(dir, &r);
        r
    };
    let episodes = if opts.workers > 1 && resolved.episodes.len() > 1 {
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
    Ok(McapExport {
        episodes,
        skipped: resolved.skipped,
    })
}
