//! The episode sink: writes each imported episode into a data directory in the layout the
//! daemon writes for a single-stream episode (`{EP}/{EP}_manifest.wshard`, status
//! `complete`, and `{EP}_chunk_NNNN.wshard`), crash-safely, through [`Fs`]:
//!
//! 1. the episode is written under a hidden staging directory `.import-{EP}.partial`
//!    (readers and exports skip hidden directories), every file synced, then the staging
//!    directory synced (for a batch of episodes, all their syncs at once, on
//!    [`SYNC_THREADS`] threads, so that the file system commits them together);
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
use wshard::digest::sha256_hex;
use wshard::episode::{Episode, EpisodeWriteOptions};
use wshard::manifest::{chunk_file_name, manifest_file_name, split_episode, ChunkRef, Manifest};
use wshard_storage::fsio::{DurableFile, Fs};
use wshard_storage::layout::{validate_episode_id, EpisodeIdError};

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
/// Syncs in flight at once: concurrent fsyncs share the file system's journal commits.
pub const SYNC_THREADS: usize = 8;
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
            fs.create_dir_all(data_dir).map_err(ImportError::write(
                "",
                "create data directory",
                data_dir,
            ))?;
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
        validate_episode_id(id, wshard_storage::layout::MAX_EPISODE_ID_BYTES).map_err(|e| {
            ImportError::BadEpisodeId {
                id: id.to_owned(),
                source_path: source.to_path_buf(),
                message: id_message(&e),
            }
        })?;
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
    /// As [`EpisodeSink::write_batch`].
    pub fn write(&self, ep: &Episode, source: &Path) -> Result<WrittenEpisode> {
        let mut w = self.write_batch(std::slice::from_ref(ep), source)?;
        w.pop()
            .ok_or_else(|| ImportError::Usage("no episode written".into()))
    }

    /// Write every episode of `eps` as `{data_dir}/{id}`, each durably and atomically:
    /// all are written under their staging directories first, then every file and staging
    /// directory is synced at once ([`SYNC_THREADS`] syncs in flight, so the file system
    /// commits them together), then each staging directory is renamed into place and the
    /// data directory synced once.
    ///
    /// # Errors
    /// As [`EpisodeSink::check_id`], [`ImportError::Format`] when an episode cannot be
    /// encoded, [`ImportError::Write`] naming the step and path that failed. Staging
    /// directories of episodes not renamed are removed (best effort); episodes renamed
    /// before a failing rename stay, complete.
    pub fn write_batch(&self, eps: &[Episode], source: &Path) -> Result<Vec<WrittenEpisode>> {
        let batch = self.stage_batch(eps, source)?;
        self.commit_batch(batch)
    }

    /// The first half of [`EpisodeSink::write_batch`]: check the ids and write every
    /// episode under its staging directory, unsynced. Nothing is visible until
    /// [`EpisodeSink::commit_batch`]; a batch dropped uncommitted leaves only hidden
    /// staging directories (removed by the next import of their ids).
    ///
    /// # Errors
    /// As [`EpisodeSink::write_batch`]; the batch's staging directories are removed.
    pub fn stage_batch(&self, eps: &[Episode], source: &Path) -> Result<StagedBatch> {
        for ep in eps {
            self.check_id(&ep.id, source)?;
        }
        let mut batch = StagedBatch::default();
        for ep in eps {
            match self.stage(ep) {
                Ok((st, mut files)) => {
                    batch.episodes.push(st);
                    batch.files.append(&mut files);
                }
                Err(e) => {
                    self.discard(&batch.episodes);
                    self.discard(&[Staged {
                        id: ep.id.clone(),
                        steps: 0,
                        chunks: 0,
                    }]);
                    return Err(e);
                }
            }
        }
        Ok(batch)
    }

    /// The second half of [`EpisodeSink::write_batch`]: sync every file and staging
    /// directory of `batch` (all in flight together), rename each into place, sync the
    /// data directory.
    ///
    /// # Errors
    /// As [`EpisodeSink::write_batch`].
    pub fn commit_batch(&self, mut batch: StagedBatch) -> Result<Vec<WrittenEpisode>> {
        let r = self.sync_staged(&mut batch);
        let r = r.and_then(|()| self.commit(&batch.episodes));
        if r.is_err() {
            self.discard(&batch.episodes);
        }
        r
    }

    /// Drop a staged batch without committing it: its staging directories are removed
    /// (best effort).
    pub fn abandon_batch(&self, batch: StagedBatch) {
        let StagedBatch { episodes, files } = batch;
        drop(files);
        self.discard(&episodes);
    }

    /// Remove the staging directories of `staged` that are still there (best effort: the
    /// next import of an id removes its stale staging directory anyway).
    fn discard(&self, staged: &[Staged]) {
        for st in staged {
            let staging = self.hidden(&st.id, STAGING_SUFFIX);
            if self.fs.exists(&staging) {
                let _ = remove_tree(self.fs, &staging);
            }
        }
    }

    /// Sync every file of the batch, then every staging directory.
    fn sync_staged(&self, batch: &mut StagedBatch) -> Result<()> {
        let files = std::mem::take(&mut batch.files);
        sync_parallel(files.into_iter().map(|mut f| {
            move || {
                f.file
                    .sync_all()
                    .map_err(ImportError::write(&f.id, "fsync", &f.path))
            }
        }))?;
        sync_parallel(batch.episodes.iter().map(|st| {
            move || {
                let dir = self.hidden(&st.id, STAGING_SUFFIX);
                self.fs.sync_dir(&dir).map_err(ImportError::write(
                    &st.id,
                    "fsync staging directory",
                    &dir,
                ))
            }
        }))
    }

    /// Write `ep` under its staging directory, unsynced; returns the open files.
    fn stage(&self, ep: &Episode) -> Result<(Staged, Vec<OpenFile>)> {
        let id = ep.id.as_str();
        let staging = self.hidden(id, STAGING_SUFFIX);
        let werr = |op, path: &Path| ImportError::write(id, op, path);
        let ferr = |source| ImportError::Format {
            id: id.to_owned(),
            source,
        };
        if self.fs.exists(&staging) {
            remove_tree(self.fs, &staging)
                .map_err(werr("remove stale staging directory", &staging))?;
        }
        self.fs
            .create_dir(&staging)
            .map_err(werr("create staging directory", &staging))?;
        let opts = EpisodeWriteOptions {
            default_codec: self.opts.codec,
            ..EpisodeWriteOptions::default()
        };
        let mut files = Vec::new();
        let mut manifest = Manifest::new(ep.id.clone(), ep.env_id.clone());
        for c in split_episode(ep, self.chunk_steps(ep)).map_err(ferr)? {
            let index = c.chunk.map_or(0, |i| i.chunk_index);
            let bytes = c.to_bytes(&opts).map_err(ferr)?;
            let name = chunk_file_name(id, index);
            let path = staging.join(&name);
            let f = self
                .write_file(&path, &bytes)
                .map_err(|(op, e)| werr(op, &path)(e))?;
            files.push(OpenFile {
                id: id.to_owned(),
                path,
                file: f,
            });
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
        let f = self
            .write_file(&mpath, &mbytes)
            .map_err(|(op, e)| werr(op, &mpath)(e))?;
        files.push(OpenFile {
            id: id.to_owned(),
            path: mpath,
            file: f,
        });
        Ok((
            Staged {
                id: ep.id.clone(),
                steps: ep.length,
                chunks,
            },
            files,
        ))
    }

    /// Rename every staged episode into place, then sync the data directory (and drop
    /// replaced copies).
    fn commit(&self, staged: &[Staged]) -> Result<Vec<WrittenEpisode>> {
        let mut out = Vec::with_capacity(staged.len());
        let mut olds = Vec::new();
        let mut r = Ok(());
        for st in staged {
            match self.rename_into_place(&st.id) {
                Ok(old) => {
                    olds.extend(old.map(|o| (st.id.clone(), o)));
                    out.push(WrittenEpisode {
                        id: st.id.clone(),
                        dir: self.data_dir.join(&st.id),
                        steps: st.steps,
                        chunks: st.chunks,
                    });
                }
                Err(e) => {
                    r = Err(e);
                    break;
                }
            }
        }
        let synced = self.fs.sync_dir(&self.data_dir).map_err(ImportError::write(
            staged.first().map_or("", |e| e.id.as_str()),
            "fsync data directory",
            &self.data_dir,
        ));
        r?;
        synced?;
        if !olds.is_empty() {
            for (id, old) in &olds {
                remove_tree(self.fs, old).map_err(ImportError::write(
                    id,
                    "remove the replaced episode",
                    old,
                ))?;
            }
            self.fs
                .sync_dir(&self.data_dir)
                .map_err(ImportError::write(
                    "",
                    "fsync data directory",
                    &self.data_dir,
                ))?;
        }
        Ok(out)
    }

    /// Rename `.import-{id}.partial` to `{id}`, an existing `{id}` first to
    /// `.import-{id}.old` (returned).
    fn rename_into_place(&self, id: &str) -> Result<Option<PathBuf>> {
        let werr = |op, path: &Path| ImportError::write(id, op, path);
        let staging = self.hidden(id, STAGING_SUFFIX);
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
            .rename(&staging, &target)
            .map_err(werr("rename the staging directory to", &target))?;
        Ok(replacing.then_some(old))
    }

    /// Create `path` and write `bytes` (not synced); returns the open file.
    fn write_file(
        &self,
        path: &Path,
        bytes: &[u8],
    ) -> Result<Box<dyn DurableFile>, (&'static str, std::io::Error)> {
        let mut f = self.fs.create_new(path).map_err(|e| ("create", e))?;
        f.write_all(bytes).map_err(|e| ("write", e))?;
        Ok(f)
    }
}

/// An episode written under its staging directory.
#[derive(Debug)]
struct Staged {
    id: String,
    steps: u64,
    chunks: u64,
}

/// Episodes written under their staging directories, not yet synced or visible
/// ([`EpisodeSink::stage_batch`], [`EpisodeSink::commit_batch`]).
#[derive(Default)]
pub struct StagedBatch {
    episodes: Vec<Staged>,
    files: Vec<OpenFile>,
}

impl StagedBatch {
    /// The number of episodes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.episodes.len()
    }

    /// True when it holds no episode.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.episodes.is_empty()
    }
}

/// A file of episode `id` written, not yet synced.
struct OpenFile {
    id: String,
    path: PathBuf,
    file: Box<dyn DurableFile>,
}

/// Run `jobs` (syncs) on up to [`SYNC_THREADS`] threads; the first error wins.
fn sync_parallel<F>(jobs: impl Iterator<Item = F>) -> Result<()>
where
    F: FnOnce() -> Result<()> + Send,
{
    let jobs: Vec<F> = jobs.collect();
    if jobs.len() <= 1 {
        return jobs.into_iter().try_for_each(|j| j());
    }
    let per = jobs.len().div_ceil(SYNC_THREADS);
    let mut groups: Vec<Vec<F>> = Vec::new();
    for j in jobs {
        match groups.last_mut() {
            Some(g) if g.len() < per => g.push(j),
            _ => groups.push(vec![j]),
        }
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = groups
            .into_iter()
            .map(|g| s.spawn(move || g.into_iter().try_for_each(|j| j())))
            .collect();
        let mut r = Ok(());
        for h in handles {
            let one = h
                .join()
                .unwrap_or_else(|_| Err(ImportError::Usage("a sync thread panicked".into())));
            if r.is_ok() {
                r = one;
            }
        }
        r
    })
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
