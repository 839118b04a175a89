//! D4RL HDF5 files: one file holding every step of a dataset, split into episodes.
//!
//! | key | goes to |
//! |---|---|
//! | `observations` | signal channel `obs` |
//! | `actions` | action channel `action` |
//! | `rewards` | the `reward` block (and channel `reward` when not f32) |
//! | `terminals`, `timeouts` | signal channels of the same names |
//! | `next_observations` (optional) | signal channel `next_obs` |
//! | `infos/*` (optional, nested) | signal channels `infos/...` |
//! | other per-step datasets | signal channels of the same names |
//! | `metadata/*` scalars | `meta/episode.metadata.d4rl` |
//!
//! An episode ends at a step whose `terminals` or `timeouts` is set; a last run of steps
//! after the last such step is an episode too (D4RL's own `sequence_dataset` drops it).
//! Ids: `{prefix}-{index:06}`, the prefix being the file stem unless `--prefix`.
//!
//! Reading and writing overlap ([`crate::pipeline`]): a reader thread reads windows of
//! whole episodes (every key's rows at once, so each compressed HDF5 chunk is inflated
//! about once; deflate-only chunked datasets of rank 1 and 2 through
//! [`crate::chunked`], their chunks inflated on every core) while the previous window is encoded and written, and the one before it
//! synced and renamed, as one batch of the sink (their syncs in flight together).

use std::path::{Path, PathBuf};

use hdf5::Dataset;
use serde_json::{Map, Value};
use wshard::episode::{Episode, Lane};

use crate::array::Array;
use crate::build::{import_metadata, EpisodeBuilder};
use crate::chunked::ChunkedReader;
use crate::error::{ImportError, Result};
use crate::hdf5_read::{attrs_json, member, names, open, read_all, read_rows, shape_of, Member};
use crate::options::{indexed_id, stem, ImportOptions};
use crate::pipeline::write_all_with;
use crate::sink::{EpisodeSink, WrittenEpisode};

/// Keys every D4RL file has.
pub const REQUIRED_KEYS: [&str; 5] = [
    "observations",
    "actions",
    "rewards",
    "terminals",
    "timeouts",
];
/// Bytes read at once, summed over keys (whole episodes; at least one). Small enough that
/// the buffers stay in the allocator's heap (64 MiB windows cost page faults of fresh
/// mmapped memory every window: 0.3 s of system time per 50 MB).
const WINDOW_BYTES: u64 = 4 << 20;

/// One per-step dataset and where it goes.
struct Key {
    key: String,
    channel: String,
    lane: Lane,
    ds: Dataset,
    row_bytes: u64,
    /// The parallel chunk reader when the dataset is deflate-only and chunked.
    chunked: Option<ChunkedReader>,
}

/// The plan of one file: its keys, episode boundaries and metadata.
struct Plan {
    path: PathBuf,
    keys: Vec<Key>,
    /// `[start, end)` of each episode.
    episodes: Vec<(u64, u64)>,
    prefix: String,
    metadata: Map<String, Value>,
}

fn channel_of(key: &str) -> (String, Lane) {
    match key {
        "observations" => ("obs".into(), Lane::Signal),
        "actions" => ("action".into(), Lane::Action),
        "next_observations" => ("next_obs".into(), Lane::Signal),
        k => (k.to_owned(), Lane::Signal),
    }
}

/// Every dataset under `group` (recursively), with its full key.
fn datasets(
    path: &Path,
    group: &hdf5::Group,
    prefix: &str,
    out: &mut Vec<(String, Dataset)>,
) -> Result<()> {
    for name in names(path, group, prefix)? {
        let key = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        match member(path, group, &name, &key)? {
            Some(Member::Group(g)) => datasets(path, &g, &key, out)?,
            Some(Member::Dataset(d)) => out.push((key, d)),
            None => {}
        }
    }
    Ok(())
}

fn plan(path: &Path, opts: &ImportOptions) -> Result<Plan> {
    let file = open(path)?;
    for key in REQUIRED_KEYS {
        if !file.link_exists(key) || file.dataset(key).is_err() {
            return Err(ImportError::MissingKey {
                path: path.to_path_buf(),
                key: key.to_owned(),
            });
        }
    }
    let mut all = Vec::new();
    datasets(path, &file, "", &mut all)?;
    let obs_shape = all
        .iter()
        .find(|(k, _)| k == "observations")
        .map(|(_, d)| shape_of(d))
        .unwrap_or_default();
    if obs_shape.is_empty() {
        return Err(ImportError::WrongRank {
            path: path.to_path_buf(),
            key: "observations".into(),
            shape: obs_shape,
            expected: "at least one dimension (steps first)",
        });
    }
    let n = obs_shape[0];
    let mut metadata = Map::new();
    let mut keys = Vec::new();
    for (key, ds) in all {
        let shape = shape_of(&ds);
        if let Some(name) = key.strip_prefix("metadata/") {
            if shape.is_empty() {
                if let Ok(a) = read_all(path, &ds, &key) {
                    if let Some(v) = scalar_json(&a) {
                        metadata.insert(name.to_owned(), v);
                    }
                }
            }
            continue;
        }
        let required = REQUIRED_KEYS.contains(&key.as_str())
            || key == "next_observations"
            || key.starts_with("infos/");
        if shape.first() != Some(&n) {
            if required {
                if shape.is_empty() {
                    return Err(ImportError::WrongRank {
                        path: path.to_path_buf(),
                        key,
                        shape,
                        expected: "at least one dimension (steps first)",
                    });
                }
                return Err(ImportError::LengthMismatch {
                    path: path.to_path_buf(),
                    key,
                    found: shape[0],
                    expected: n,
                    reference: "observations".into(),
                });
            }
            continue; // not per-step: not converted
        }
        let dtype = crate::hdf5_read::dtype_of(path, &ds, &key)?;
        let row_bytes = shape.iter().skip(1).product::<u64>() * dtype.size() as u64;
        let (channel, lane) = channel_of(&key);
        let chunked = ChunkedReader::new(path, &ds, &key)?;
        keys.push(Key {
            key,
            channel,
            lane,
            ds,
            row_bytes,
            chunked,
        });
    }
    // Channel order: observations, actions, next observations, then the rest by name.
    keys.sort_by_key(|k| {
        let rank = ["observations", "actions", "next_observations"]
            .iter()
            .position(|&p| p == k.key)
            .unwrap_or(usize::MAX);
        (rank, k.key.clone())
    });
    for key in ["rewards", "terminals", "timeouts"] {
        if let Some(k) = keys.iter().find(|k| k.key == key) {
            let shape = shape_of(&k.ds);
            if shape.iter().skip(1).any(|&d| d != 1) {
                return Err(ImportError::WrongRank {
                    path: path.to_path_buf(),
                    key: key.into(),
                    shape,
                    expected: "one value per step",
                });
            }
        }
    }
    let flag = |key: &str| -> Result<Vec<bool>> {
        let ds = file
            .dataset(key)
            .map_err(|e| crate::hdf5_read::h5err(path, key, &e))?;
        Ok(read_all(path, &ds, key)?.to_bool())
    };
    let (terminals, timeouts) = (flag("terminals")?, flag("timeouts")?);
    let mut episodes = Vec::new();
    let mut start = 0u64;
    for (i, (t, o)) in terminals.iter().zip(&timeouts).enumerate() {
        if *t || *o {
            episodes.push((start, i as u64 + 1));
            start = i as u64 + 1;
        }
    }
    if start < n {
        episodes.push((start, n));
    }
    if episodes.is_empty() {
        return Err(ImportError::Empty {
            path: path.to_path_buf(),
            message: "`observations` has no rows".into(),
        });
    }
    metadata.extend(attrs_json(&file));
    Ok(Plan {
        path: path.to_path_buf(),
        keys,
        episodes,
        prefix: opts.prefix_or(&stem(path)),
        metadata,
    })
}

/// A scalar dataset's value as JSON (numbers as f64, flags as booleans).
fn scalar_json(a: &Array) -> Option<Value> {
    if a.dtype == wshard::episode::DType::Bool {
        return a.to_bool().first().map(|&v| Value::from(v));
    }
    a.to_f64().first().map(|&v| Value::from(v))
}

/// One window read: its episodes (index, `[start, end)`) and every key's rows of
/// `[first start, last end)`.
struct Window {
    eps: Vec<(usize, (u64, u64))>,
    arrays: Vec<Array>,
}

/// Read the rows of window `eps` (whole episodes) of every key (on the reader thread).
fn read_window(p: &Plan, eps: &[(usize, (u64, u64))]) -> Result<Window> {
    let (Some(&(_, (w0, _))), Some(&(_, (_, w1)))) = (eps.first(), eps.last()) else {
        return Ok(Window {
            eps: Vec::new(),
            arrays: Vec::new(),
        });
    };
    let arrays = p
        .keys
        .iter()
        .map(|k| match &k.chunked {
            Some(c) => c.read_rows(w0, w1),
            None => read_rows(&p.path, &k.ds, &k.key, w0, w1),
        })
        .collect::<Result<_>>()?;
    Ok(Window {
        eps: eps.to_vec(),
        arrays,
    })
}

/// The episodes of a window read (on the encoding thread).
fn episodes_of(p: &Plan, opts: &ImportOptions, w: Window) -> Result<Vec<Episode>> {
    let Some(&(_, (w0, _))) = w.eps.first() else {
        return Ok(Vec::new());
    };
    let (hz, hz_source) = opts.rate(None);
    let env = opts.env_id.clone().unwrap_or_default();
    let mut out = Vec::with_capacity(w.eps.len());
    for &(index, (s, e)) in &w.eps {
        let id = indexed_id(&p.prefix, index as u64);
        let mut b = EpisodeBuilder::new(&id, &env, hz, e - s, &p.path, "observations");
        for (k, a) in p.keys.iter().zip(&w.arrays) {
            let rows = a.rows(s - w0, e - w0);
            match k.key.as_str() {
                "rewards" => b.reward(&k.key, rows)?,
                "terminals" | "timeouts" => b.flag(&k.key, &k.key, rows)?,
                _ => b.channel(&k.channel, k.lane, &k.key, rows)?,
            }
        }
        b.metadata("import", import_metadata("d4rl", &p.path, hz_source));
        let mut m = p.metadata.clone();
        m.insert("first_step".into(), Value::from(s));
        b.metadata("d4rl", Value::Object(m));
        out.push(b.finish());
    }
    Ok(out)
}

/// Windows of whole episodes, about [`WINDOW_BYTES`] each (at least one episode).
fn windows(p: &Plan) -> Vec<Vec<(usize, (u64, u64))>> {
    let row: u64 = p.keys.iter().map(|k| k.row_bytes).sum::<u64>().max(1);
    let rows_per_window = (WINDOW_BYTES / row).max(1);
    let mut out: Vec<Vec<(usize, (u64, u64))>> = Vec::new();
    let mut cur: Vec<(usize, (u64, u64))> = Vec::new();
    for (i, &(s, e)) in p.episodes.iter().enumerate() {
        if let Some(&(_, (w0, _))) = cur.first() {
            if e - w0 > rows_per_window {
                out.push(std::mem::take(&mut cur));
            }
        }
        cur.push((i, (s, e)));
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Import the D4RL file `path` into `sink`. Ids are checked (valid, not present) before
/// anything is written.
///
/// # Errors
/// The file's errors (missing key, length mismatch, wrong rank, unsupported dtype, not
/// HDF5) and write errors; episodes written before an error stay (each is complete).
pub fn import_d4rl(
    sink: &EpisodeSink<'_>,
    path: &Path,
    opts: &ImportOptions,
) -> Result<Vec<WrittenEpisode>> {
    let p = plan(path, opts)?;
    for i in 0..p.episodes.len() {
        sink.check_id(&indexed_id(&p.prefix, i as u64), path)?;
    }
    let windows = windows(&p);
    let p = &p;
    let reads = windows.iter().map(move |w| read_window(p, w));
    write_all_with(sink, path, reads, |w| episodes_of(p, opts, w))
}
