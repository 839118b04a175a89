//! `wshard dataset list|show|pull` (docs/PUBLISH.md, "Remote reads and the cache"): the
//! datasets under the store's prefix with their latest version, one version's episodes and
//! files, and a version materialized in a directory through the blob cache.
//!
//! Exit codes: 0 done, 1 failed (store, dataset or version not found, a blob that does not
//! hash to its name), 2 usage or setup (bad name, store settings, credentials missing, no
//! cache directory).

use std::io::Write;
use std::path::PathBuf;

use serde_json::json;
use wshard_publish::cache::BlobCache;
use wshard_publish::dataset::{list, pull, show};
use wshard_publish::hash::is_sha256_hex;
use wshard_publish::url::VERSION_SEP;
use wshard_publish::{DatasetId, PublishError};

use crate::output::table::{Align, Table};
use crate::store::args::StoreArgs;
use crate::store::exit_code::{exit_code, EXIT_USAGE};
use crate::store::remote::env_cache;

/// Datasets on the store: list, show, pull
///
/// `list` (with their latest version), `show WS/NAME[@VERSION]` (episodes, files, sizes,
/// status), `pull WS/NAME[@VERSION] DIR` (through the cache, every file hash-checked).
///
/// Exit codes: 0 ok, 1 failed, 2 usage or setup.
#[derive(Debug, clap::Args)]
pub struct DatasetArgs {
    #[command(subcommand)]
    pub verb: DatasetVerb,
}

/// The verbs of `wshard dataset`.
#[derive(Clone, Debug, clap::Subcommand)]
pub enum DatasetVerb {
    /// Every dataset under the prefix with its latest version, episodes and bytes.
    List {
        #[command(flatten)]
        store: StoreArgs,
        /// Print one JSON object per dataset per line.
        #[arg(long)]
        json: bool,
    },
    /// A version's episodes (status) and files (size, sha256); the latest by default.
    Show {
        /// WS/NAME, or WS/NAME@VERSION for a given version.
        #[arg(value_name = "WS/NAME[@VERSION]")]
        dataset: String,
        #[command(flatten)]
        store: StoreArgs,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write a version's episodes under DIR (DIR/EPISODE/FILE) through the blob cache:
    /// blobs the cache holds are not downloaded, every file is SHA-256 checked, files
    /// already in place are left alone.
    Pull {
        /// WS/NAME, or WS/NAME@VERSION for a given version.
        #[arg(value_name = "WS/NAME[@VERSION]")]
        dataset: String,
        /// The directory to write into (created when absent).
        dir: PathBuf,
        #[command(flatten)]
        store: StoreArgs,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// `WS/NAME[@VERSION]`.
///
/// # Errors
/// [`PublishError::InvalidDataset`].
pub fn parse_spec(s: &str) -> Result<(DatasetId, Option<String>), PublishError> {
    let (name, version) = match s.split_once(VERSION_SEP) {
        Some((n, v)) => (n, Some(v)),
        None => (s, None),
    };
    let ds = DatasetId::parse(name)?;
    if let Some(v) = version {
        if !is_sha256_hex(v) {
            return Err(PublishError::InvalidDataset {
                name: s.to_owned(),
                reason: "the version after `@` is not 64 lower-case hex digits",
            });
        }
    }
    Ok((ds, version.map(str::to_owned)))
}

fn io_err(e: std::io::Error) -> PublishError {
    PublishError::Io {
        path: PathBuf::from("<stdout>"),
        source: e,
    }
}

fn run_verb(verb: &DatasetVerb, out: &mut dyn Write) -> Result<(), PublishError> {
    match verb {
        DatasetVerb::List { store, json } => {
            let p = store.publisher()?;
            let all = list(&p, env_cache().as_ref())?;
            if *json {
                for d in &all {
                    let doc = json!({"dataset": d.dataset.to_string(), "latest": d.latest,
                        "episodes": d.episodes, "bytes": d.bytes});
                    writeln!(out, "{doc}").map_err(io_err)?;
                }
                return Ok(());
            }
            let mut t = Table::new(&[
                ("dataset", Align::Left),
                ("latest", Align::Left),
                ("episodes", Align::Right),
                ("bytes", Align::Right),
            ]);
            for d in &all {
                t.push(vec![
                    d.dataset.to_string(),
                    d.latest.clone().unwrap_or_else(|| "-".into()),
                    d.episodes.to_string(),
                    d.bytes.to_string(),
                ]);
            }
            t.write(out).map_err(io_err)?;
            writeln!(out, "({} datasets)", all.len()).map_err(io_err)
        }
        DatasetVerb::Show {
            dataset,
            store,
            json,
        } => {
            let (ds, version) = parse_spec(dataset)?;
            let p = store.publisher()?;
            let (hash, m) = show(&p, env_cache().as_ref(), &ds, version.as_deref())?;
            if *json {
                let mut doc = m.to_value();
                doc["version"] = json!(hash);
                return writeln!(out, "{doc}").map_err(io_err);
            }
            writeln!(out, "dataset  {ds}\nversion  {hash}").map_err(io_err)?;
            writeln!(
                out,
                "{} episodes, {} bytes",
                m.episodes.len(),
                m.total_bytes()
            )
            .map_err(io_err)?;
            let mut t = Table::new(&[
                ("episode", Align::Left),
                ("status", Align::Left),
                ("file", Align::Left),
                ("size", Align::Right),
                ("sha256", Align::Left),
            ]);
            for (key, ep) in &m.episodes {
                for (file, f) in &ep.files {
                    t.push(vec![
                        key.clone(),
                        ep.status.clone(),
                        file.clone(),
                        f.size.to_string(),
                        f.sha256.clone(),
                    ]);
                }
            }
            t.write(out).map_err(io_err)
        }
        DatasetVerb::Pull {
            dataset,
            dir,
            store,
            json,
        } => {
            let (ds, version) = parse_spec(dataset)?;
            let cache = BlobCache::from_env()?;
            let p = store.publisher()?;
            let r = pull(&p, &cache, &ds, version.as_deref(), dir)?;
            if *json {
                let doc = json!({"dataset": ds.to_string(), "version": r.version,
                    "dir": dir.display().to_string(), "episodes": r.episodes, "files": r.files,
                    "bytes": r.bytes, "downloaded_files": r.downloaded_files,
                    "downloaded_bytes": r.downloaded_bytes, "written_files": r.written_files});
                return writeln!(out, "{doc}").map_err(io_err);
            }
            writeln!(
                out,
                "pulled {ds}@{} into {}: {} episodes, {} files, {} bytes; downloaded {} blobs ({} bytes), wrote {} files (all sha256-checked)",
                r.version,
                dir.display(),
                r.episodes,
                r.files,
                r.bytes,
                r.downloaded_files,
                r.downloaded_bytes,
                r.written_files
            )
            .map_err(io_err)
        }
    }
}

/// Run `wshard dataset VERB`; returns the exit code.
pub fn run(verb: &DatasetVerb, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match run_verb(verb, out) {
        Ok(()) => 0,
        Err(e) => {
            let _ = writeln!(err, "wshard dataset: {e}");
            match e {
                PublishError::CacheDirUnknown => EXIT_USAGE,
                _ => exit_code(&e),
            }
        }
    }
}
