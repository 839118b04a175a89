//! The upload thread ([`spawn`]) and one pass of it ([`Uploader::cycle`]): scan the data
//! directory for finished episodes (status `complete`, `interrupted` or `recovered`; never
//! one being recorded, never a `.partial`), enqueue them (hashed, journaled), send their
//! blobs (`blob`), record them `uploaded`, append them to the dataset, record them
//! `published`, then apply retention and the quota (`evict`).
//!
//! Offline-first: a store error leaves the queue as it is and the thread waits
//! (`retry_min_ms` doubling to `retry_max_ms`, with jitter; configuration-class errors
//! wait the longest) before trying again. A queue-log error stops the uploader (state
//! `error`) until a restart. Recording never waits for it: its own thread, the store's own
//! runtime, and no lock shared with ingest held across any I/O.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use wshard::episode_dir::index::EpisodeStatus;
use wshard::episode_dir::EpisodeDir;
use wshard_publish::episodes::{is_publishable, select, LocalEpisode, LocalFile};
use wshard_publish::{Credentials, DatasetId, PublishError, Publisher, Store};

use super::pace::{wait_until, Backoff, Pacer};
use super::queue_log::{QueueLog, QueueLogError};
use super::record::{QueuedFile, Record};
use super::settings::UploaderSettings;
use super::state::{EpisodeUpload, QueueState};
use super::view::{UploadShared, UploaderState};
use crate::episode::layout::QUARANTINE_DIR;
use crate::fsio::Fs;

/// Attempts of one append when other publishers move `latest.json` at the same time.
pub const APPEND_ATTEMPTS: usize = 5;

/// Why a pass stopped.
#[derive(Debug, thiserror::Error)]
pub enum CycleError {
    /// The queue log failed: the uploader stops.
    #[error(transparent)]
    Queue(#[from] QueueLogError),
    /// The store failed: retry after the backoff.
    #[error(transparent)]
    Store(#[from] PublishError),
    /// The daemon is shutting down.
    #[error("stopped")]
    Stopped,
}

/// What failed about one episode (skipped until a restart).
#[derive(Debug)]
pub(super) enum EpisodeError {
    Cycle(CycleError),
    /// Its local files cannot be read or changed since they were enqueued.
    Local(PublishError),
}

impl From<QueueLogError> for EpisodeError {
    fn from(e: QueueLogError) -> Self {
        Self::Cycle(CycleError::Queue(e))
    }
}

impl From<CycleError> for EpisodeError {
    fn from(e: CycleError) -> Self {
        Self::Cycle(e)
    }
}

/// The short kind of a store error, for status and metrics.
#[must_use]
pub fn error_kind(e: &PublishError) -> &'static str {
    match e {
        PublishError::CredentialsMissing { .. } => "credentials_missing",
        PublishError::CredentialsRejected { .. } => "credentials_rejected",
        PublishError::Forbidden { .. } => "forbidden",
        PublishError::BucketNotFound { .. } => "bucket_not_found",
        PublishError::EndpointUnreachable { .. } => "endpoint_unreachable",
        PublishError::StoreUnavailable { .. } => "store_unavailable",
        PublishError::BlobMismatch { .. } => "blob_mismatch",
        PublishError::LatestConflict { .. } => "latest_conflict",
        PublishError::UploadGone { .. } => "upload_gone",
        PublishError::InvalidConfig { .. } | PublishError::InvalidDataset { .. } => "config",
        PublishError::Io { .. }
        | PublishError::EpisodeRead { .. }
        | PublishError::ManifestRead { .. }
        | PublishError::LocalChunkMismatch { .. }
        | PublishError::EpisodeNotFinished { .. }
        | PublishError::EpisodeNotFound { .. }
        | PublishError::EpisodeStatusUnknown { .. }
        | PublishError::AnnotationsRead { .. } => "local_episode",
        _ => "store",
    }
}

/// The uploader: the queue, the store (built at the first pass that needs it), the
/// counters it shows.
pub struct Uploader {
    pub(super) fs: Arc<dyn Fs>,
    pub(super) settings: UploaderSettings,
    pub(super) log: QueueLog,
    pub(super) state: QueueState,
    pub(super) shared: Arc<UploadShared>,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) pacer: Pacer,
    pub(super) publisher: Option<Publisher>,
    /// Episodes left out until a restart, with why.
    pub(super) skipped: BTreeMap<String, String>,
}

impl std::fmt::Debug for Uploader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Uploader")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Uploader {
    /// Open the queue log (replayed, compacted) and finish an eviction a crash interrupted.
    ///
    /// # Errors
    /// The queue log's.
    pub fn open(
        fs: Arc<dyn Fs>,
        settings: UploaderSettings,
        shared: Arc<UploadShared>,
        stop: Arc<AtomicBool>,
    ) -> Result<Self, QueueLogError> {
        let (log, state, report) = QueueLog::open(fs.clone(), &settings.queue_dir)?;
        if report.discarded_bytes > 0 {
            tracing::warn!(
                bytes = report.discarded_bytes,
                "upload queue: a torn tail of the log was dropped (the step it recorded is redone)"
            );
        }
        shared.set_queue(&state);
        shared.update(|v| {
            v.dataset.clone_from(&settings.dataset);
            v.robot.clone_from(&settings.robot);
        });
        let pacer = Pacer::new(settings.bandwidth_limit_bytes_per_s);
        let mut me = Self {
            fs,
            settings,
            log,
            state,
            shared,
            stop,
            pacer,
            publisher: None,
            skipped: BTreeMap::new(),
        };
        me.finish_evictions()?;
        Ok(me)
    }

    /// The queue as replayed and changed since.
    #[must_use]
    pub fn state(&self) -> &QueueState {
        &self.state
    }

    /// Append `r` to the log (synced), then apply it.
    pub(super) fn record(&mut self, r: Record) -> Result<(), QueueLogError> {
        self.log.append(&r)?;
        self.state.apply(&r);
        self.shared.set_queue(&self.state);
        if self.log.needs_compaction() {
            self.log.compact(&self.state)?;
        }
        Ok(())
    }

    pub(super) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// One pass: scan, send, publish, evict. `Ok` when nothing is left to do.
    ///
    /// # Errors
    /// [`CycleError`]: the queue log (stop), the store (retry later), shutdown.
    pub fn cycle(&mut self) -> Result<(), CycleError> {
        self.scan()?;
        self.evict()?;
        let todo: Vec<String> = self
            .state
            .in_order()
            .into_iter()
            .filter(|(id, e)| e.stage < EpisodeUpload::Published && !self.skipped.contains_key(*id))
            .map(|(id, _)| id.clone())
            .collect();
        if todo.is_empty() {
            return Ok(());
        }
        self.shared.update(|v| v.state = UploaderState::Uploading);
        self.connect()?;
        for id in &todo {
            if self.stopped() {
                return Err(CycleError::Stopped);
            }
            match self.send_episode(id) {
                Ok(()) => {}
                Err(EpisodeError::Cycle(e)) => return Err(e),
                Err(EpisodeError::Local(e)) => self.skip(id, &e),
            }
        }
        self.publish_uploaded()?;
        self.evict()?;
        self.shared.update(|v| v.current = None);
        Ok(())
    }

    pub(super) fn skip(&mut self, id: &str, e: &PublishError) {
        tracing::error!(
            episode = id,
            "upload: episode left out until a restart: {e}"
        );
        self.shared.set_error(
            UploaderState::Uploading,
            "local_episode",
            format!("episode {id}: {e}"),
        );
        self.skipped.insert(id.to_owned(), e.to_string());
    }

    /// Build the store client once.
    fn connect(&mut self) -> Result<(), CycleError> {
        if self.publisher.is_none() {
            let creds = Credentials::load_for(self.settings.store.provider)?;
            let store = Store::new(
                self.settings.store.clone(),
                &creds,
                self.settings.transfer.clone(),
            )?;
            self.publisher = Some(Publisher::new(store));
        }
        Ok(())
    }

    /// Enqueue every finished episode of the data directory not in the queue yet.
    fn scan(&mut self) -> Result<(), CycleError> {
        let Ok(rd) = std::fs::read_dir(&self.settings.data_dir) else {
            return Ok(());
        };
        let mut names: Vec<String> = rd
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .filter(|n| n != QUARANTINE_DIR && !n.starts_with('.'))
            .filter(|n| !self.state.episodes.contains_key(n) && !self.skipped.contains_key(n))
            .collect();
        names.sort();
        for name in names {
            if self.stopped() {
                return Err(CycleError::Stopped);
            }
            let path = self.settings.data_dir.join(&name);
            let finished = EpisodeDir::open(&path)
                .ok()
                .and_then(|d| d.status())
                .is_some_and(is_publishable);
            if !finished {
                continue;
            }
            match select(&self.settings.data_dir, std::slice::from_ref(&name)) {
                Ok(sel) => {
                    for ep in sel.episodes {
                        self.enqueue(&ep)?;
                    }
                }
                Err(e) => self.skip(&name, &e),
            }
        }
        Ok(())
    }

    pub(super) fn enqueue(&mut self, ep: &LocalEpisode) -> Result<(), QueueLogError> {
        let files = ep
            .files
            .iter()
            .map(|f| QueuedFile {
                rel: f.rel.clone(),
                sha256: f.sha256.clone(),
                size: f.size,
            })
            .collect();
        tracing::info!(episode = %ep.id, "upload: episode enqueued");
        self.record(Record::Enqueue {
            episode: ep.id.clone(),
            status: ep.status.as_str().to_owned(),
            files,
        })
    }

    /// Send every blob of `id` not verified yet, then record it `uploaded`.
    fn send_episode(&mut self, id: &str) -> Result<(), EpisodeError> {
        let Some(ep) = self.state.episodes.get(id).cloned() else {
            return Ok(());
        };
        if ep.stage >= EpisodeUpload::Uploaded {
            return Ok(());
        }
        for f in &ep.files {
            if self.state.blobs.contains(&f.sha256) {
                continue;
            }
            self.send_blob(id, f)?;
        }
        self.record(Record::Uploaded {
            episode: id.to_owned(),
        })?;
        Ok(())
    }

    /// The uploaded episodes not yet published, as the publish crate's episodes.
    fn ready(&self) -> Vec<LocalEpisode> {
        self.state
            .in_order()
            .into_iter()
            .filter(|(_, e)| e.stage == EpisodeUpload::Uploaded)
            .map(|(id, e)| LocalEpisode {
                id: id.clone(),
                status: EpisodeStatus::parse(&e.status).unwrap_or(EpisodeStatus::Recovered),
                files: e
                    .files
                    .iter()
                    .map(|f| LocalFile {
                        rel: f.rel.clone(),
                        path: self.settings.data_dir.join(id).join(&f.rel),
                        sha256: f.sha256.clone(),
                        size: f.size,
                    })
                    .collect(),
            })
            .collect()
    }

    /// Append the uploaded episodes to the dataset (one new version), then record each
    /// `published`.
    fn publish_uploaded(&mut self) -> Result<(), CycleError> {
        let ready = self.ready();
        if ready.is_empty() {
            return Ok(());
        }
        let dataset = DatasetId::parse(&self.settings.dataset)?;
        let Some(publisher) = self.publisher.as_ref() else {
            return Ok(());
        };
        // The blobs are verified on the store already: nothing is sent but the manifest,
        // the catalog and the pointer, under the robot's key prefix (`<robot>/<episode>`).
        let version = publisher
            .append(
                &dataset,
                Some(&self.settings.robot),
                &ready,
                APPEND_ATTEMPTS,
            )?
            .version_hash;
        let n = ready.len() as u64;
        for ep in ready {
            self.record(Record::Published {
                episode: ep.id,
                dataset: dataset.to_string(),
                version: version.clone(),
            })?;
        }
        tracing::info!(episodes = n, version = %version, dataset = %dataset, "upload: episodes published");
        self.shared.update(|v| v.counters.episodes_published += n);
        Ok(())
    }
}

/// The running upload thread.
#[derive(Debug)]
pub struct UploadHandle {
    thread: JoinHandle<()>,
}

impl UploadHandle {
    /// True once the thread has ended (shutdown, or a queue-log error stopped it).
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// Wait up to `timeout` for the thread to end (after shutdown was set); a thread still
    /// in a store call is left behind: the queue is crash-safe, as after a SIGKILL.
    pub fn finish(self, timeout: Duration) {
        let until = Instant::now() + timeout;
        while !self.thread.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        if self.thread.is_finished() {
            let _ = self.thread.join();
        }
    }
}

/// Start the upload thread.
///
/// # Errors
/// The OS error when the thread cannot be started.
pub fn spawn(
    fs: Arc<dyn Fs>,
    settings: UploaderSettings,
    shared: Arc<UploadShared>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<UploadHandle> {
    let thread = std::thread::Builder::new()
        .name("wshardd-upload".into())
        .spawn(move || run(fs, settings, &shared, stop))?;
    Ok(UploadHandle { thread })
}

fn run(
    fs: Arc<dyn Fs>,
    settings: UploaderSettings,
    shared: &Arc<UploadShared>,
    stop: Arc<AtomicBool>,
) {
    if settings.idle_priority {
        if let Err(e) = super::priority::run_current_thread_when_idle() {
            tracing::warn!("{e}; uploading at normal priority");
        }
    }
    let mut backoff = Backoff::new(settings.retry_min, settings.retry_max);
    let scan_interval = settings.scan_interval;
    let mut up = match Uploader::open(fs, settings, shared.clone(), stop.clone()) {
        Ok(u) => u,
        Err(e) => {
            tracing::error!("upload queue cannot be opened; the uploader is stopped: {e}");
            shared.set_error(UploaderState::Error, e.kind(), e.to_string());
            return;
        }
    };
    while !stop.load(Ordering::Acquire) {
        let wait = match up.cycle() {
            Ok(()) => {
                backoff.reset();
                shared.update(|v| {
                    v.state = UploaderState::Idle;
                    v.next_retry = None;
                    v.current = None;
                });
                scan_interval
            }
            Err(CycleError::Stopped) => break,
            Err(CycleError::Queue(e)) => {
                tracing::error!(
                    "upload queue failed; the uploader is stopped until a restart: {e}"
                );
                shared.set_error(UploaderState::Error, e.kind(), e.to_string());
                return;
            }
            Err(CycleError::Store(e)) => {
                let (state, delay) = if e.is_transient()
                    || matches!(
                        e,
                        PublishError::BlobMismatch { .. } | PublishError::UploadGone { .. }
                    ) {
                    (UploaderState::Offline, backoff.next_delay())
                } else {
                    (UploaderState::Error, backoff.long_delay())
                };
                tracing::warn!(retry_in_ms = delay.as_millis() as u64, "upload: {e}");
                shared.set_error(state, error_kind(&e), e.to_string());
                shared.update(|v| v.next_retry = Some(SystemTime::now() + delay));
                delay
            }
        };
        if !wait_until(Instant::now() + wait, &stop) {
            break;
        }
    }
}

/// `data_dir/<episode>/<rel>`.
pub(super) fn local_path(data_dir: &Path, episode: &str, rel: &str) -> PathBuf {
    data_dir.join(episode).join(rel)
}
