//! The episode sink: writes each imported episode into a data directory in the layout the
//! daemon writes for a single-stream episode (`{EP}/{EP}_manifest.wshard`, status
//! `complete`, and `{EP}_chunk_NNNN.wshard`), crash-safely, through [`Fs`]:
//!
//! 1. the episode is written under a hidden staging directory `.import-{EP}.partial`
//!    (readers and exports skip hidden directories), every file synced, then the staging
//!    directory synced;
//! 2. with `--overwrite`, an existing `{EP}` is first renamed to `.import-{EP}.old`;
//! 3. the staging directory is renamed to `{EP}` and the data directory synced: only then
//!    does the episode exist, complete; the old copy is removed afterwards.
//!
//! A failure or a crash at any step leaves at most the hidden staging (or `.old`)
//! directory, which the next import of the same id removes first.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::json;
use wshard::codec::Codec;
use wshard::episode::{Episode, EpisodeWriteOptions};
use wshard::manifest::{
    chunk_file_name, manifest_file_name, sha256_hex, split_episode, ChunkRef, Manifest,
};
use wshard_recorder::episode::{validate_episode_id, EpisodeIdError};
use wshard_recorder::fsio::Fs;

use crate::error::{ImportError, Result};

/// Steps per chunk unless the chunk would exceed [`CHUNK_MAX_BYTES`] (the daemon's
/// `rotation.max_timesteps` default).
pub const DEFAULT_CHUNK_STEPS: u64 = 100_000;
/// Largest uncompressed chunk payload the importer writes (the daemon's 256 MiB chunk
/// budget, halved).
pub const CHUNK_MAX_BYTES: u64 = 128 << 20;
/// Prefix and suffixes of the hidden directories of an import in progress.
const STAGING_PREFIX: &str = ".import-";
const STAGING_SUFFIX: &str = ".partial";
const OLD_SUFFIX: &str = ".old";
/// The `importer` key of the manifests written.
const IMPORTER: &str = concat!("wshard-import/", env!("CARGO_PKG_VERSION"));

/// How episodes are written.
#[derive(Clone, Debug)]
pub struct SinkOptions {
    /// Replace an existing episode directory of the same id.
    pub overwrite: bool,
    /// Block codec of channels, `reward` and `done`.
    pub codec: Codec,
    /// Most steps per chunk file.
    pub chunk_steps: u64,
}

impl Default for SinkOptions {
    fn default() -> Self {
        Self {
            overwrite: false,
            codec: Codec::zstd(),
            chunk_steps: DEFAULT_CHUNK_STEPS,
        }
    }
}

/// What one written episode is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WrittenEpisode {
    pub id: String,
    pub dir: PathBuf,
    pub steps: u64,
    pub chunks: u64,
}

/// Writes episodes into one data directory.
pub struct EpisodeSink<'a> {
    fs: &'a dyn Fs,
    data_dir: PathBuf,
    opts: SinkOptions,
}

fn id_message(e: &EpisodeIdError) -> String {
    e.to_string()
}

impl<'a> EpisodeSink<'a> {
    /// A sink writing into `data_dir` (created when missing).
    ///
    /// # Errors
    /// [`ImportError::Write`] when the directory cannot be created.
    pub fn new(fs: &'a dyn Fs, data_dir: &Path, opts: SinkOptions) -> Result<Self> {
        if !fs.exists(data_dir) {
            fs.create_dir_all(data_dir)
                .map_err(|source| ImportError::Write {
                    id: String::new(),
                    op: "create data directory",
                    path: data_dir.to_path_buf(),
                    source,
                })?;
        }
        Ok(Self {
            fs,
            data_dir: data_dir.to_path_buf(),
            opts,
        })
    }

    /// The data directory.
    #[must_use]
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Check an episode id (the daemon's rule) and that it may be written.
    ///
    /// # Errors
    /// [`ImportError::BadEpisodeId`], [`ImportError::EpisodeExists`].
    pub fn check_id(&self, id: &str, source: &Path) -> Result<()> {
        validate_episode_id(id, wshard_recorder::episode::layout::MAX_EPISODE_ID_BYTES).map_err(
            |e| ImportError::BadEpisodeId {
                id: id.to_owned(),
                source_path: source.to_path_buf(),
                message: id_message(&e),
            },
        )?;
        if !self.opts.overwrite && self.fs.exists(&self.data_dir.join(id)) {
            return Err(ImportError::EpisodeExists {
                id: id.to_owned(),
                data_dir: self.data_dir.clone(),
            });
        }
        Ok(())
    }

    fn hidden(&self, id: &str, suffix: &str) -> PathBuf {
        self.data_dir.join(format!("{STAGING_PREFIX}{id}{suffix}"))
    }

    /// Steps per chunk for `ep`: the option, lowered so that a chunk stays under
    /// [`CHUNK_MAX_BYTES`].
    fn chunk_steps(&self, ep: &Episode) -> u64 {
        let step: u64 = ep
            .channels
            .iter()
            .map(|c| c.step_bytes().unwrap_or(u64::MAX))
            .fold(5u64, u64::saturating_add);
        (CHUNK_MAX_BYTES / step).clamp(1, self.opts.chunk_steps.max(1))
    }

    /// Write `ep` as `{data_dir}/{ep.id}`, durably and atomically.
    ///
    /// # Errors
    /// As [`EpisodeSink::check_id`], [`ImportError::Format`] when the episode cannot be
    /// encoded, [`ImportError::Write`] naming the step and path that failed.
    pub fn write(&self, ep: &Episode, source: &Path) -> Result<WrittenEpisode> {
        self.check_id(&ep.id, source)?;
        let staging = self.hidden(&ep.id, STAGING_SUFFIX);
        let r = self.write_staged(ep, &staging);
        if r.is_err() {
            // Best effort: the next import of this id removes it anyway.
            let _ = remove_tree(self.fs, &staging);
        }
        r
    }

    fn write_staged(&self, ep: &Episode, staging: &Path) -> Result<WrittenEpisode> {
        let id = ep.id.as_str();
        let werr = |op: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| ImportError::Write {
                id: id.to_owned(),
                op,
                path,
                source,
            }
        };
        let ferr = |source| ImportError::Format {
            id: id.to_owned(),
            source,
        };
        if self.fs.exists(staging) {
            remove_tree(self.fs, staging)
                .map_err(werr("remove stale staging directory", staging))?;
        }
        self.fs
            .create_dir(staging)
            .map_err(werr("create staging directory", staging))?;
        let opts = EpisodeWriteOptions {
            default_codec: self.opts.codec,
            ..EpisodeWriteOptions::default()
        };
        let mut manifest = Manifest::new(ep.id.clone(), ep.env_id.clone());
        for c in split_episode(ep, self.chunk_steps(ep)).map_err(ferr)? {
            let index = c.chunk.map_or(0, |i| i.chunk_index);
            let bytes = c.to_bytes(&opts).map_err(ferr)?;
            let name = chunk_file_name(id, index);
            let path = staging.join(&name);
            self.write_file(&path, &bytes)
                .map_err(|(op, e)| werr(op, &path)(e))?;
            let start = c.timestep_range.map_or(0, |r| r[0]);
            manifest.push_chunk(ChunkRef {
                chunk_index: index,
                uri: name,
                sha256: sha256_hex(&bytes),
                timestep_range: [start, (start + c.length).saturating_sub(1)],
                length_t: c.length,
                extra: serde_json::Map::new(),
            });
        }
        manifest.status = Some("complete".into());
        manifest.extra.insert("importer".into(), json!(IMPORTER));
        let chunks = manifest.chunks.len() as u64;
        let mpath = staging.join(manifest_file_name(id));
        let mbytes = manifest.to_bytes().map_err(ferr)?;
        self.write_file(&mpath, &mbytes)
            .map_err(|(op, e)| werr(op, &mpath)(e))?;
        self.fs
            .sync_dir(staging)
            .map_err(werr("fsync staging directory", staging))?;
        let target = self.data_dir.join(id);
        let old = self.hidden(id, OLD_SUFFIX);
        let replacing = self.fs.exists(&target);
        if replacing {
            if self.fs.exists(&old) {
                remove_tree(self.fs, &old).map_err(werr("remove stale old copy", &old))?;
            }
            self.fs
                .rename(&target, &old)
                .map_err(werr("move the existing episode aside to", &old))?;
        }
        self.fs
            .rename(staging, &target)
            .map_err(werr("rename the staging directory to", &target))?;
        self.fs
            .sync_dir(&self.data_dir)
            .map_err(werr("fsync data directory", &self.data_dir))?;
        if replacing {
            remove_tree(self.fs, &old).map_err(werr("remove the replaced episode", &old))?;
            self.fs
                .sync_dir(&self.data_dir)
                .map_err(werr("fsync data directory", &self.data_dir))?;
        }
        Ok(WrittenEpisode {
            id: id.to_owned(),
            dir: target,
            steps: ep.length,
            chunks,
        })
    }

    /// Create `path`, write `bytes`, fsync it.
    fn write_file(&self, path: &Path, bytes: &[u8]) -> Result<(), (&'static str, std::io::Error)> {
        let mut f = self.fs.create_new(path).map_err(|e| ("create", e))?;
        f.write_all(bytes).map_err(|e| ("write", e))?;
        f.sync_all().map_err(|e| ("fsync", e))?;
        Ok(())
    }
}

/// Remove `path` and everything under it.
fn remove_tree(fs: &dyn Fs, path: &Path) -> std::io::Result<()> {
    for entry in fs.read_dir(path)? {
        if fs.remove_file(&entry).is_err() {
            remove_tree(fs, &entry)?;
        }
    }
    fs.remove_dir(path)
}
