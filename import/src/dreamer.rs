//! DreamerV3 episode files: a directory of `*.npz`, one episode each, one row per
//! observation. Keys:
//!
//! | key | goes to |
//! |---|---|
//! | `reward` | the `reward` block (and channel `reward` when not f32) |
//! | `is_first`, `is_last`, `is_terminal` | signal channels of the same names |
//! | `action` | action channel `action` |
//! | `discount`, `log_*` | signal channels of the same names |
//! | anything else (`image`, `state`, ...) | signal channel `obs/{key}` |
//!
//! `done` is true on the last row. Episode ids: the file stems (made id-safe), or
//! `{prefix}-{index}` in file-name order with `--prefix`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use wshard::episode::{Episode, Lane};
use wshard::IoError;

use crate::array::Array;
use crate::build::{import_metadata, EpisodeBuilder};
use crate::error::{ImportError, Result};
use crate::npz::read_npz;
use crate::options::{id_safe, indexed_id, stem, ImportOptions};
use crate::pipeline::write_all;
use crate::sink::{EpisodeSink, WrittenEpisode};

/// Keys every DreamerV3 episode file has.
pub const REQUIRED_KEYS: [&str; 4] = ["reward", "is_first", "is_last", "is_terminal"];
/// The NPZ key of the actions.
pub const ACTION_KEY: &str = "action";
/// Prefix of observation channels.
pub const OBS_PREFIX: &str = "obs";
/// The file suffix searched in directories.
const NPZ_EXT: &str = "npz";

/// The `.npz` files named by `inputs` (files as given, directories: their `*.npz`), sorted
/// by path.
///
/// # Errors
/// [`ImportError::Io`] for a missing input or an unreadable directory, [`ImportError::Empty`]
/// when a directory holds no `.npz` file.
pub fn npz_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for input in inputs {
        let meta = std::fs::metadata(input)
            .map_err(|source| ImportError::Io(IoError::new("open", input, source)))?;
        if !meta.is_dir() {
            out.push(input.clone());
            continue;
        }
        let mut found: Vec<PathBuf> = std::fs::read_dir(input)
            .and_then(|rd| rd.map(|e| e.map(|e| e.path())).collect())
            .map_err(|source| ImportError::Io(IoError::new("list", input, source)))?;
        found.retain(|p| p.extension().is_some_and(|e| e == NPZ_EXT) && p.is_file());
        if found.is_empty() {
            return Err(ImportError::Empty {
                path: input.clone(),
                message: "the directory holds no *.npz file".into(),
            });
        }
        found.sort();
        out.extend(found);
    }
    Ok(out)
}

/// The channel id and lane of an NPZ key that is not a reward or end flag.
#[must_use]
pub fn channel_for(key: &str) -> (String, Lane) {
    if key == ACTION_KEY {
        (key.to_owned(), Lane::Action)
    } else if key == "discount" || key.starts_with("log_") {
        (key.to_owned(), Lane::Signal)
    } else {
        (format!("{OBS_PREFIX}/{key}"), Lane::Signal)
    }
}

/// One episode from the arrays of one file.
///
/// # Errors
/// [`ImportError::MissingKey`], [`ImportError::WrongRank`], [`ImportError::LengthMismatch`].
pub fn episode_from(
    path: &Path,
    id: &str,
    mut arrays: BTreeMap<String, Array>,
    opts: &ImportOptions,
) -> Result<Episode> {
    for key in REQUIRED_KEYS {
        if !arrays.contains_key(key) {
            return Err(ImportError::MissingKey {
                path: path.to_path_buf(),
                key: key.to_owned(),
            });
        }
    }
    let (hz, hz_source) = opts.rate(None);
    let steps = arrays.get("reward").map_or(0, Array::steps);
    let env = opts.env_id.clone().unwrap_or_default();
    let mut b = EpisodeBuilder::new(id, &env, hz, steps, path, "reward");
    if let Some(r) = arrays.remove("reward") {
        b.reward("reward", r)?;
    }
    for key in ["is_first", "is_last", "is_terminal"] {
        if let Some(a) = arrays.remove(key) {
            b.flag(key, key, a)?;
        }
    }
    for (key, a) in arrays {
        let (cid, lane) = channel_for(&key);
        b.channel(&cid, lane, &key, a)?;
    }
    b.metadata("import", import_metadata("dreamerv3-npz", path, hz_source));
    Ok(b.finish())
}

/// Import every DreamerV3 episode file of `inputs` into `sink`. Ids are checked (valid,
/// unique, not present) before anything is written.
///
/// # Errors
/// The first failing file's error; episodes written before it stay (each is complete).
pub fn import_npz(
    sink: &EpisodeSink<'_>,
    inputs: &[PathBuf],
    opts: &ImportOptions,
) -> Result<Vec<WrittenEpisode>> {
    let files = npz_files(inputs)?;
    let ids: Vec<String> = files
        .iter()
        .enumerate()
        .map(|(i, f)| match &opts.prefix {
            Some(p) => indexed_id(p, i as u64),
            None => id_safe(&stem(f)),
        })
        .collect();
    let mut seen: BTreeMap<&str, &Path> = BTreeMap::new();
    for (id, f) in ids.iter().zip(&files) {
        if let Some(first) = seen.insert(id, f) {
            return Err(ImportError::DuplicateEpisodeId {
                id: id.clone(),
                first: first.to_path_buf(),
                second: f.clone(),
            });
        }
        sink.check_id(id, f)?;
    }
    let source = files.first().map_or_else(PathBuf::new, Clone::clone);
    let batches = ids
        .iter()
        .zip(&files)
        .map(|(id, f)| Ok(vec![episode_from(f, id, read_npz(f)?, opts)?]));
    write_all(sink, &source, batches)
}
