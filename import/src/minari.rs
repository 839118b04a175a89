//! Minari datasets in the HDF5 layout the `minari` package (0.5) writes:
//! `<dataset>/data/metadata.json` and `<dataset>/data/main_data.hdf5` holding one group
//! `episode_{i}` per episode with `observations` (a dataset, or nested groups for Dict and
//! Tuple spaces), `actions` (likewise), `rewards`, `terminations`, `truncations` and
//! optionally `infos` (nested), and the episode's attributes (`id`, `seed`, `total_steps`,
//! `options/...`).
//!
//! Minari stores N+1 observations (and infos) for N steps. One row per observation: the
//! episode has T = N+1 steps; `actions`, `rewards`, `terminations` and `truncations` (N
//! rows) fill rows 0..N-1 (row t holds the action taken at observation t and what it
//! earned) and the last row is zero (no action, reward 0, flags false). `done` is true on
//! the last row.
//!
//! | key | goes to |
//! |---|---|
//! | `observations` | signal channel `obs`, or `obs/{key}` (`obs/{a}/{b}`, `obs/_index_0`, ...) |
//! | `actions` | action channel `action`, or `action/{key}` |
//! | `rewards` | the `reward` block (and channel `reward` when not f32, as Minari's f64) |
//! | `terminations`, `truncations` | signal channels of the same names |
//! | `infos/...` | signal channels `infos/...` |
//!
//! JPEG-encoded image observations (Minari's `jpeg_encoding` for image spaces), text
//! spaces and the `arrow` data format are refused with an error naming the key.

use std::path::{Path, PathBuf};

use hdf5::Group;
use serde_json::Value;
use wshard::episode::{DType, Episode, Lane};
use wshard::IoError;

use crate::array::Array;
use crate::build::{import_metadata, EpisodeBuilder};
use crate::error::{ImportError, Result};
use crate::hdf5_read::{attrs_json, h5err, member, names, open, read_all, Member};
use crate::options::{id_safe, indexed_id, stem, ImportOptions};
use crate::pipeline::write_all;
use crate::sink::{EpisodeSink, WrittenEpisode};

/// The data file of a Minari dataset.
pub const MAIN_FILE: &str = "main_data.hdf5";
/// The dataset's metadata file, beside [`MAIN_FILE`].
pub const METADATA_FILE: &str = "metadata.json";
/// The folder of both under the dataset's directory.
pub const DATA_DIR: &str = "data";
/// Prefix of episode groups.
pub const EPISODE_PREFIX: &str = "episode_";
/// Keys every episode group has.
pub const REQUIRED_KEYS: [&str; 5] = [
    "observations",
    "actions",
    "rewards",
    "terminations",
    "truncations",
];
/// The start of a JPEG stream.
const JPEG_MAGIC: [u8; 3] = [0xFF, 0xD8, 0xFF];

/// A Minari dataset found on disk.
#[derive(Debug)]
pub struct MinariSource {
    pub main: PathBuf,
    /// `metadata.json`, when present.
    pub metadata: Option<Value>,
    /// The dataset's name: its `dataset_id`, else its directory's name.
    pub name: String,
}

fn read_json(path: &Path) -> Result<Option<Value>> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| ImportError::BadData {
                path: path.to_path_buf(),
                key: METADATA_FILE.into(),
                message: format!("not JSON: {e}"),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ImportError::Io(IoError::new("read", path, source))),
    }
}

/// Find the dataset given its directory, its `data/` folder or its `main_data.hdf5`.
///
/// # Errors
/// [`ImportError::NotFormat`] when none of these holds `main_data.hdf5`,
/// [`ImportError::Unsupported`] for a dataset in another data format.
pub fn locate(input: &Path) -> Result<MinariSource> {
    let main = if input.is_file() {
        input.to_path_buf()
    } else if input.join(DATA_DIR).join(MAIN_FILE).is_file() {
        input.join(DATA_DIR).join(MAIN_FILE)
    } else if input.join(MAIN_FILE).is_file() {
        input.join(MAIN_FILE)
    } else {
        std::fs::metadata(input)
            .map_err(|source| ImportError::Io(IoError::new("open", input, source)))?;
        return Err(ImportError::NotFormat {
            path: input.to_path_buf(),
            expected: "a Minari dataset",
            message: format!("no {DATA_DIR}/{MAIN_FILE} or {MAIN_FILE} in it"),
        });
    };
    let meta_path = main.with_file_name(METADATA_FILE);
    let metadata = read_json(&meta_path)?;
    if let Some(fmt) = metadata
        .as_ref()
        .and_then(|m| m.get("data_format"))
        .and_then(Value::as_str)
    {
        if fmt != "hdf5" {
            return Err(ImportError::Unsupported {
                path: meta_path,
                key: "data_format".into(),
                what: format!("Minari data format {fmt:?} (only hdf5 is read)"),
            });
        }
    }
    let dir_name = main
        .parent()
        .and_then(|d| {
            if d.file_name().is_some_and(|n| n == DATA_DIR) {
                d.parent()
            } else {
                Some(d)
            }
        })
        .map_or_else(|| stem(&main), stem);
    let name = metadata
        .as_ref()
        .and_then(|m| m.get("dataset_id"))
        .and_then(Value::as_str)
        .map_or(dir_name, str::to_owned);
    Ok(MinariSource {
        main,
        metadata,
        name,
    })
}

/// The `env_id` in the metadata's `env_spec` (a JSON string), if any.
fn env_id_of(metadata: Option<&Value>) -> Option<String> {
    let spec = metadata?.get("env_spec")?.as_str()?;
    let v: Value = serde_json::from_str(spec).ok()?;
    v.get("id")?.as_str().map(str::to_owned)
}

/// The episode groups, by episode number.
fn episode_groups(path: &Path, file: &hdf5::File) -> Result<Vec<(u64, String)>> {
    let mut out: Vec<(u64, String)> = names(path, file, "/")?
        .into_iter()
        .filter_map(|n| {
            n.strip_prefix(EPISODE_PREFIX)
                .and_then(|i| i.parse::<u64>().ok())
                .map(|i| (i, n))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Every dataset under `m` as `(key suffix, dataset)`, depth first, sorted.
fn leaves(
    path: &Path,
    m: Member,
    key: &str,
    rel: &str,
    out: &mut Vec<(String, String, hdf5::Dataset)>,
) -> Result<()> {
    match m {
        Member::Dataset(d) => out.push((key.to_owned(), rel.to_owned(), d)),
        Member::Group(g) => {
            for name in names(path, &g, key)? {
                let k = format!("{key}/{name}");
                let r = if rel.is_empty() {
                    name.clone()
                } else {
                    format!("{rel}/{name}")
                };
                if let Some(sub) = member(path, &g, &name, &k)? {
                    leaves(path, sub, &k, &r, out)?;
                }
            }
        }
    }
    Ok(())
}

/// Where one space of an episode group goes.
struct Space<'a> {
    /// The member of the episode group (`observations`, `actions`, `infos`).
    name: &'a str,
    /// Channel id (or prefix of ids for nested spaces).
    base: &'a str,
    lane: Lane,
}

/// Read the space `sp` of episode group `group` (a dataset or nested groups) as channels
/// named `{base}` / `{base}/{rel}`; arrays of `n` rows get one zero row appended.
fn space_channels(
    b: &mut EpisodeBuilder,
    path: &Path,
    (group, ep_key): (&Group, &str),
    sp: &Space<'_>,
    n: u64,
) -> Result<()> {
    let (name, base, lane) = (sp.name, sp.base, sp.lane);
    let key = format!("{ep_key}/{name}");
    let Some(m) = member(path, group, name, &key)? else {
        return Ok(());
    };
    let mut found = Vec::new();
    leaves(path, m, &key, "", &mut found)?;
    for (k, rel, ds) in found {
        let mut a = read_all(path, &ds, &k)?;
        refuse_jpeg(path, &k, &a)?;
        if a.shape.is_empty() {
            continue; // a scalar in infos: not per-step
        }
        if a.steps() == n {
            a.pad_rows(1);
        }
        let id = if rel.is_empty() {
            base.to_owned()
        } else {
            format!("{base}/{rel}")
        };
        b.channel(&id, lane, &k, a)?;
    }
    Ok(())
}

/// Minari's JPEG encoding of image spaces: rows of encoded bytes.
fn refuse_jpeg(path: &Path, key: &str, a: &Array) -> Result<()> {
    if a.dtype == DType::U8 && a.shape.len() == 2 && a.data.starts_with(&JPEG_MAGIC) {
        return Err(ImportError::Unsupported {
            path: path.to_path_buf(),
            key: key.to_owned(),
            what: "JPEG-encoded image observations (Minari jpeg_encoding); create the dataset \
                   with jpeg_encoding=False"
                .into(),
        });
    }
    Ok(())
}

fn episode_from(
    src: &MinariSource,
    file: &hdf5::File,
    group_name: &str,
    id: &str,
    opts: &ImportOptions,
) -> Result<Episode> {
    let path = src.main.as_path();
    let g = file
        .group(group_name)
        .map_err(|e| h5err(path, group_name, &e))?;
    for key in REQUIRED_KEYS {
        if !g.link_exists(key) {
            return Err(ImportError::MissingKey {
                path: path.to_path_buf(),
                key: format!("{group_name}/{key}"),
            });
        }
    }
    let rk = format!("{group_name}/rewards");
    let rewards_ds = g.dataset("rewards").map_err(|e| h5err(path, &rk, &e))?;
    let mut rewards = read_all(path, &rewards_ds, &rk)?;
    if rewards.shape.is_empty() {
        return Err(ImportError::WrongRank {
            path: path.to_path_buf(),
            key: rk,
            shape: rewards.shape,
            expected: "one value per step",
        });
    }
    let n = rewards.steps();
    let (hz, hz_source) = opts.rate(None);
    let env = opts
        .env_id
        .clone()
        .or_else(|| env_id_of(src.metadata.as_ref()))
        .unwrap_or_default();
    let mut b = EpisodeBuilder::new(id, &env, hz, n + 1, path, &format!("{rk} + 1"));
    let space = |name, base, lane| Space { name, base, lane };
    let obs = space("observations", "obs", Lane::Signal);
    space_channels(&mut b, path, (&g, group_name), &obs, n)?;
    let act = space("actions", "action", Lane::Action);
    space_channels(&mut b, path, (&g, group_name), &act, n)?;
    rewards.pad_rows(1);
    b.reward(&rk, rewards)?;
    for key in ["terminations", "truncations"] {
        let k = format!("{group_name}/{key}");
        let ds = g.dataset(key).map_err(|e| h5err(path, &k, &e))?;
        let mut a = read_all(path, &ds, &k)?;
        if a.steps() == n && !a.shape.is_empty() {
            a.pad_rows(1);
        }
        b.flag(key, &k, a)?;
    }
    if g.link_exists("infos") {
        let infos = space("infos", "infos", Lane::Signal);
        space_channels(&mut b, path, (&g, group_name), &infos, n)?;
    }
    b.metadata("import", import_metadata("minari", path, hz_source));
    let mut m = attrs_json(&g);
    m.insert("dataset_id".into(), Value::from(src.name.clone()));
    b.metadata("minari", Value::Object(m));
    Ok(b.finish())
}

/// Import every episode of the Minari dataset at `input` into `sink`. Ids
/// (`{prefix}-{episode number:06}`, the prefix being the dataset id made id-safe unless
/// `--prefix`) are checked before anything is written.
///
/// # Errors
/// The dataset's errors and write errors; episodes written before an error stay.
pub fn import_minari(
    sink: &EpisodeSink<'_>,
    input: &Path,
    opts: &ImportOptions,
) -> Result<Vec<WrittenEpisode>> {
    let src = locate(input)?;
    let file = open(&src.main)?;
    let groups = episode_groups(&src.main, &file)?;
    if groups.is_empty() {
        return Err(ImportError::Empty {
            path: src.main.clone(),
            message: format!("no {EPISODE_PREFIX}N groups"),
        });
    }
    let prefix = opts.prefix.clone().unwrap_or_else(|| id_safe(&src.name));
    let ids: Vec<String> = groups
        .iter()
        .map(|(i, _)| indexed_id(&prefix, *i))
        .collect();
    for id in &ids {
        sink.check_id(id, &src.main)?;
    }
    let (src, file) = (&src, &file);
    let batches = groups
        .iter()
        .zip(&ids)
        .map(move |((_, g), id)| Ok(vec![episode_from(src, file, g, id, opts)?]));
    write_all(sink, &src.main, batches)
}
