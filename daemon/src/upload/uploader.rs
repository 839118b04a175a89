//! The uploader ([`Uploader`]) and one pass of it ([`Uploader::cycle`]): take the episodes
//! the finishers handed over (`handoff`; the data directory itself is listed at the first
//! pass and then every `scan_interval`, a safety rescan), keep the finished ones (status
//! `complete`, `interrupted` or `recovered`; never one being recorded, never a `.partial`),
//! enqueue them (hashed, journaled), send their
//! blobs (the publish crate's `BlobSender`, with the queue's hooks: `queue_hooks`), record
//! them `uploaded`, append them to the dataset, record them `published`, then apply
//! retention and the quota (`evict`).
//!
//! Offline-first: a store error leaves the queue as it is and the thread waits (`thread`)
//! before trying again. A queue-log error stops the uploader (state `error`) until a
//! restart. Recording never waits for it: its own thread, the store's own runtime, and no
//! lock shared with ingest held across any I/O.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use wshard::episode_dir::index::EpisodeStatus;
use wshard::episode_dir::EpisodeDir;
use wshard_publish::append::APPEND_ATTEMPTS;
use wshard_publish::blob::{Blob, BlobAction, BlobSender, BlobSource, SendError, StoredCopies};
use wshard_publish::episodes::{is_publishable, select, LocalEpisode, LocalFile};
use wshard_publish::{Credentials, DatasetId, PublishError, Publisher, Store};

use super::error::{error_kind, is_multipart_step_failure, CycleError, EpisodeError};
use super::evict::{tree_bytes, EvictionNeed, LocalCopies};
use super::pace::Pacer;
use super::protected::protection;
use super::queue::UploadQueue;
use super::queue_hooks::QueueHooks;
use super::queue_log::QueueLogError;
use super::record::{QueuedFile, Record};
use super::settings::UploaderSettings;
use super::state::{EpisodeUpload, QueueState};
use super::view::{UploadShared, UploaderState};
use wshard_storage::fsio::Fs;
use wshard_storage::keep;
use wshard_storage::layout::QUARANTINE_DIR;

/// The uploader: the queue, the store (built at the first pass that needs it), the
/// counters it shows.
pub struct Uploader {
    fs: Arc<dyn Fs>,
    settings: UploaderSettings,
    queue: UploadQueue,
    shared: Arc<UploadShared>,
    stop: Arc<AtomicBool>,
    pacer: Pacer,
    publisher: Option<Publisher>,
    /// Episodes left out until a restart, with why.
    skipped: BTreeMap<String, String>,
    /// When the data directory was last listed; `None`: the startup scan is due.
    last_scan: Option<Instant>,
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
        let (queue, report) = UploadQueue::open(fs.clone(), &settings.queue_dir, shared.clone())?;
        if report.discarded_bytes > 0 {
            tracing::warn!(
                bytes = report.discarded_bytes,
                "upload queue: a torn tail of the log was dropped (the step it recorded is redone)"
            );
        }
        shared.update(|v| {
            v.dataset.clone_from(&settings.dataset);
            v.robot.clone_from(&settings.robot);
        });
        let pacer = Pacer::new(settings.bandwidth_limit_bytes_per_s);
        let mut me = Self {
            fs,
            settings,
            queue,
            shared,
            stop,
            pacer,
            publisher: None,
            skipped: BTreeMap::new(),
            last_scan: None,
        };
        me.finish_evictions()?;
        Ok(me)
    }

    /// The queue as replayed and changed since.
    #[must_use]
    pub fn state(&self) -> &QueueState {
        self.queue.state()
    }

    /// Append `r` to the queue's log (synced), then apply it.
    fn record(&mut self, r: Record) -> Result<(), QueueLogError> {
        self.queue.record(r)
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// One pass: scan, send, publish, evict. `Ok` when nothing is left to do.
    ///
    /// # Errors
    /// [`CycleError`]: the queue log (stop), the store (retry later), shutdown.
    pub fn cycle(&mut self) -> Result<(), CycleError> {
        let handed = self.shared.handoff.take();
        let rescan_due = self
            .last_scan
            .map_or(true, |t| t.elapsed() >= self.settings.scan_interval);
        if handed.rescan || rescan_due {
            self.last_scan = Some(Instant::now());
            self.scan()?;
        }
        for dir in &handed.dirs {
            self.take_handed(dir)?;
        }
        self.take_requests()?;
        self.evict()?;
        let todo: Vec<String> = self
            .state()
            .in_order()
            .into_iter()
            .filter(|(id, e)| {
                e.stage < EpisodeUpload::Published && !e.dropped && !self.skipped.contains_key(*id)
            })
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
                Err(EpisodeError::Cycle(e)) => {
                    if let CycleError::Store(s) = &e {
                        self.note_attempt(id, error_kind(s), s.to_string());
                    }
                    return Err(e);
                }
                Err(EpisodeError::Local(e)) => {
                    self.note_attempt(id, "local_episode", e.to_string());
                    self.skip(id, &e);
                }
            }
        }
        self.publish_uploaded()?;
        self.evict()?;
        self.shared.update(|v| v.current = None);
        Ok(())
    }

    /// Take the operators' requests: drop an episode not yet published (a `dropped`
    /// record; never sent, published or evicted after it), take back an episode left out
    /// until a restart.
    fn take_requests(&mut self) -> Result<(), QueueLogError> {
        let taken = self.shared.requests.take();
        for id in taken.retry {
            if self.skipped.remove(&id).is_some() {
                tracing::info!(episode = %id, "upload: episode taken back by an operator");
            }
        }
        for id in taken.drop {
            if !self.queue.drop_episode(&id)? {
                continue;
            }
            self.skipped.remove(&id);
            self.shared.update(|v| {
                v.attempts.remove(&id);
            });
            tracing::warn!(episode = %id, "upload: episode dropped from the queue by an operator; its files are kept and never evicted");
        }
        Ok(())
    }

    /// One more failed attempt at episode `id`, shown per episode.
    fn note_attempt(&self, id: &str, kind: &'static str, message: String) {
        self.shared.update(|v| {
            let a = v.attempts.entry(id.to_owned()).or_default();
            a.failed += 1;
            a.last_error = Some((kind, message));
        });
    }

    fn skip(&mut self, id: &str, e: &PublishError) {
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

    /// Enqueue the episode whose directory (or a stream or part directory below it) the
    /// finisher handed over, when it is finished and not in the queue yet. A directory
    /// outside the data directory asks for a rescan instead.
    fn take_handed(&mut self, dir: &std::path::Path) -> Result<(), CycleError> {
        let name = dir
            .strip_prefix(&self.settings.data_dir)
            .ok()
            .and_then(|rel| rel.components().next())
            .and_then(|c| c.as_os_str().to_str())
            .map(str::to_owned);
        let Some(name) = name else {
            tracing::debug!(dir = %dir.display(), "upload: a hand-off outside the data directory; rescanning");
            self.last_scan = None;
            return Ok(());
        };
        if name == QUARANTINE_DIR
            || name.starts_with('.')
            || self.state().episodes.contains_key(&name)
            || self.skipped.contains_key(&name)
        {
            return Ok(());
        }
        tracing::debug!(episode = %name, "upload: episode handed over by the finisher");
        self.consider(&name)
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
            .filter(|n| !self.state().episodes.contains_key(n) && !self.skipped.contains_key(n))
            .collect();
        names.sort();
        for name in names {
            if self.stopped() {
                return Err(CycleError::Stopped);
            }
            self.consider(&name)?;
        }
        Ok(())
    }

    /// Enqueue episode `name` of the data directory when it is finished (never one being
    /// recorded).
    fn consider(&mut self, name: &str) -> Result<(), CycleError> {
        let path = self.settings.data_dir.join(name);
        let finished = EpisodeDir::open(&path)
            .ok()
            .and_then(|d| d.status())
            .is_some_and(is_publishable);
        if !finished {
            return Ok(());
        }
        match select(&self.settings.data_dir, &[name.to_owned()]) {
            Ok(sel) => {
                for ep in sel.episodes {
                    self.enqueue(&ep)?;
                }
            }
            Err(e) => self.skip(name, &e),
        }
        Ok(())
    }

    fn enqueue(&mut self, ep: &LocalEpisode) -> Result<(), QueueLogError> {
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
        let Some(ep) = self.state().episodes.get(id).cloned() else {
            return Ok(());
        };
        if ep.stage >= EpisodeUpload::Uploaded {
            return Ok(());
        }
        for f in &ep.files {
            // An operator's drop is taken between blobs.
            self.take_requests()?;
            if self.state().is_dropped(id) {
                return Ok(());
            }
            if self.state().blobs.contains(&f.sha256) {
                continue;
            }
            self.send_blob(id, f)?;
        }
        self.record(Record::Uploaded {
            episode: id.to_owned(),
        })?;
        self.shared.update(|v| {
            v.attempts.remove(id);
        });
        Ok(())
    }

    /// Send `f` of `episode` with the publish crate's blob sender: a copy the store holds
    /// already is verified, a multipart upload is resumed from the queue (`queue_hooks`
    /// journals it), every send is paced. Then record it `blob`.
    fn send_blob(&mut self, episode: &str, f: &QueuedFile) -> Result<(), EpisodeError> {
        let Some(publisher) = self.publisher.as_ref() else {
            return Err(CycleError::Stopped.into());
        };
        let key = publisher.keys().blob(&f.sha256);
        let path = self.settings.data_dir.join(episode).join(&f.rel);
        let saved = self.queue.state().multipart.get(&f.sha256).cloned();
        let blob = Blob {
            key: &key,
            sha256: &f.sha256,
            size: f.size,
            source: BlobSource::File(&path),
        };
        let mut hooks = QueueHooks {
            queue: &mut self.queue,
            pacer: &mut self.pacer,
            stop: &self.stop,
            shared: &self.shared,
            episode,
            file: &f.rel,
            sha256: &f.sha256,
            size: f.size,
        };
        let sent = BlobSender::new(publisher.store())
            .with_stored_copies(StoredCopies::Verify)
            .send(&blob, saved.as_ref(), &mut hooks);
        match sent {
            // Skipped: the store had it (not a multipart upload completed before a crash).
            Ok(BlobAction::AlreadyStored) if saved.is_none() => {
                self.shared.update(|v| v.counters.blobs_skipped += 1);
            }
            Ok(BlobAction::AlreadyStored) => {}
            Ok(BlobAction::Uploaded { .. }) => {
                self.shared.update(|v| v.counters.blobs_uploaded += 1);
            }
            Err(SendError::Local(PublishError::LocalFileChanged { .. })) => {
                return self.reenqueue(episode)
            }
            Err(SendError::Local(e)) => return Err(EpisodeError::Local(e)),
            Err(SendError::Store(e)) => {
                self.note_multipart_failure(episode, &f.sha256, &e)?;
                return Err(CycleError::Store(e).into());
            }
            Err(SendError::Hook(e)) => return Err(e.into()),
        }
        self.record(Record::Blob {
            sha256: f.sha256.clone(),
        })?;
        Ok(())
    }

    /// A send of blob `sha256` failed with `e`: when that was a step of its multipart
    /// upload with the store answering (not an unreachable store), journal one more failed
    /// attempt at that upload; at `multipart_restart_after` in a row, give the upload up
    /// (aborted on the store, best effort) so that the next attempt starts a new one.
    fn note_multipart_failure(
        &mut self,
        episode: &str,
        sha256: &str,
        e: &PublishError,
    ) -> Result<(), QueueLogError> {
        if !is_multipart_step_failure(e) {
            return Ok(());
        }
        let restart_after = self.settings.multipart_restart_after;
        let Some((m, failures)) = self.queue.multipart_failed(sha256, restart_after)? else {
            return Ok(());
        };
        tracing::warn!(
            episode,
            key = %m.key,
            upload_id = %m.upload_id,
            failures,
            "upload: multipart upload failed {failures} times in a row ({e}); giving it up, the \
             file is sent again in a new upload"
        );
        if let Some(p) = self.publisher.as_ref() {
            // Best effort: a store that keeps failing the upload may fail this too; its
            // lifecycle rule expires abandoned uploads.
            let _ = p.store().abort_multipart(&m.key, &m.upload_id);
        }
        self.shared.update(|v| v.counters.multipart_restarts += 1);
        Ok(())
    }

    /// The episode's files changed since they were enqueued (an annotation added after the
    /// end, say): enqueue it again with its files as they are now.
    fn reenqueue(&mut self, episode: &str) -> Result<(), EpisodeError> {
        let sel =
            select(&self.settings.data_dir, &[episode.to_owned()]).map_err(EpisodeError::Local)?;
        for ep in sel.episodes {
            self.enqueue(&ep)?;
        }
        Err(EpisodeError::Cycle(CycleError::Store(
            PublishError::BlobMismatch {
                key: episode.to_owned(),
                expected: "the files as enqueued".into(),
                found: "a local file changed since; the episode was enqueued again".into(),
            },
        )))
    }

    /// The uploaded episodes not yet published, as the publish crate's episodes.
    fn ready(&self) -> Vec<LocalEpisode> {
        self.state()
            .in_order()
            .into_iter()
            .filter(|(_, e)| e.stage == EpisodeUpload::Uploaded && !e.dropped)
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

    /// The local copies of the episodes, as eviction moves and deletes them.
    fn local_copies(&self) -> LocalCopies<'_> {
        LocalCopies {
            fs: self.fs.as_ref(),
            data_dir: &self.settings.data_dir,
            queue_dir: &self.settings.queue_dir,
        }
    }

    /// Finish the evictions a crash interrupted (`evicting` without `evicted`), then delete
    /// the leftovers of evictions whose deletion was cut short.
    fn finish_evictions(&mut self) -> Result<(), QueueLogError> {
        let open: Vec<String> = self
            .state()
            .episodes
            .iter()
            .filter(|(_, e)| e.stage == EpisodeUpload::Evicting)
            .map(|(id, _)| id.clone())
            .collect();
        for id in open {
            let held = self.shared.clone();
            let guard = held.hold_evictions();
            self.local_copies().move_out(&id)?;
            drop(guard);
            self.finish_moved(&id)?;
        }
        self.local_copies().delete_leftovers()
    }

    /// Evict what the policy asks for (`evict`), oldest published episode first.
    /// Never an episode [`protection`] names (kept, a trigger window), whatever the need; after the pass, the quota's state is
    /// recorded ([`QuotaWatch`](super::quota::QuotaWatch): what is left over the quota
    /// can no longer be evicted).
    fn evict(&mut self) -> Result<(), CycleError> {
        let data_dir = self.settings.data_dir.clone();
        let published: Vec<String> = self
            .state()
            .in_order()
            .into_iter()
            .filter(|(_, e)| e.stage == EpisodeUpload::Published)
            .map(|(id, _)| id.clone())
            .filter(|id| protection(self.fs.as_ref(), &data_dir, id).is_none())
            .collect();
        let result = self.evict_published(published);
        let quota = self.settings.evict.quota_bytes;
        if quota > 0 {
            self.shared.quota.record(tree_bytes(&data_dir), quota);
        }
        result
    }

    /// Evict `published` (oldest first) while the policy asks for it.
    fn evict_published(&mut self, published: Vec<String>) -> Result<(), CycleError> {
        if published.is_empty() {
            return Ok(());
        }
        let mut need = EvictionNeed::measure(&self.settings.evict, &self.settings.data_dir);
        for id in published {
            if self.stopped() {
                return Err(CycleError::Stopped);
            }
            let Some(reason) = need.reason() else {
                break;
            };
            let held = self.shared.clone();
            let guard = held.hold_evictions();
            if keep::is_kept(self.fs.as_ref(), &self.settings.data_dir, &id) {
                drop(guard);
                tracing::debug!(episode = %id, reason, "upload: a kept episode is not evicted");
                continue;
            }
            let size = tree_bytes(&self.settings.data_dir.join(&id));
            tracing::info!(episode = %id, bytes = size, reason, "upload: evicting the local copy of a published episode");
            self.record(Record::Evicting {
                episode: id.clone(),
            })?;
            self.local_copies().move_out(&id)?;
            drop(guard);
            // Counted before `evicted` shows in the queue: whoever sees the state sees the
            // count too.
            self.shared.update(|v| {
                v.counters.episodes_evicted += 1;
                v.counters.evicted_bytes += size;
            });
            self.finish_moved(&id)?;
            need.evicted(size);
        }
        Ok(())
    }

    /// The episode's directory is under `.upload/evicting/`: record `evicted`, delete the
    /// files.
    fn finish_moved(&mut self, id: &str) -> Result<(), QueueLogError> {
        self.record(Record::Evicted {
            episode: id.to_owned(),
        })?;
        self.local_copies().delete_moved(id)
    }
}
