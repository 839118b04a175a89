//! The upload queue replayed from its log ([`QueueState`]): every episode with its state
//! and files, the blobs verified on the store, and the multipart uploads in progress with
//! their stored parts and failed attempts in a row (the publish crate's [`MultipartUpload`], which its blob sender
//! resumes).

use std::collections::{BTreeMap, BTreeSet};

use wshard_publish::blob::MultipartUpload;

use super::record::{QueuedFile, Record};

/// The state name of an episode an operator dropped from the queue.
pub const DROPPED: &str = "dropped";

/// Where one episode stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EpisodeUpload {
    /// Enqueued; no blob of it verified yet.
    Queued,
    /// Some of its blobs are verified on the store.
    Uploading,
    /// Every blob verified; not yet in the dataset.
    Uploaded,
    /// In the dataset (its `latest.json` points at a version holding it).
    Published,
    /// Published, and its local copy is being removed.
    Evicting,
    /// Published; the local copy is gone.
    Evicted,
}

impl EpisodeUpload {
    /// `queued`, `uploading`, `uploaded`, `published`, `evicting`, `evicted`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Uploading => "uploading",
            Self::Uploaded => "uploaded",
            Self::Published => "published",
            Self::Evicting => "evicting",
            Self::Evicted => "evicted",
        }
    }
}

/// One episode of the queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueuedEpisode {
    /// Order of enqueueing (0 first): eviction goes oldest first.
    pub seq: u64,
    pub status: String,
    pub files: Vec<QueuedFile>,
    /// At least `uploaded`: the stage the log reached (`Queued` until then).
    pub stage: EpisodeUpload,
    /// The dataset and version that published it.
    pub dataset: Option<String>,
    pub version: Option<String>,
    /// Dropped by an operator (`dropped`): out of the queue, never evicted.
    pub dropped: bool,
}

/// The queue.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueState {
    pub episodes: BTreeMap<String, QueuedEpisode>,
    /// Blobs verified on the store.
    pub blobs: BTreeSet<String>,
    /// Multipart uploads in progress, by blob.
    pub multipart: BTreeMap<String, MultipartUpload>,
    /// Failed attempts in a row at the blob's current multipart upload (`mpu_failed`).
    pub mpu_failures: BTreeMap<String, u32>,
    next_seq: u64,
}

impl QueueState {
    /// Apply one record. A record about an episode not enqueued is ignored (it cannot be
    /// written that way; a damaged log is read as far as it goes).
    pub fn apply(&mut self, r: &Record) {
        match r {
            Record::Enqueue {
                episode,
                status,
                files,
            } => {
                let seq = self.next_seq;
                self.next_seq += 1;
                self.episodes.insert(
                    episode.clone(),
                    QueuedEpisode {
                        seq,
                        status: status.clone(),
                        files: files.clone(),
                        stage: EpisodeUpload::Queued,
                        dataset: None,
                        version: None,
                        dropped: false,
                    },
                );
            }
            Record::Mpu {
                sha256,
                key,
                upload_id,
                part_size,
            } => {
                self.multipart.insert(
                    sha256.clone(),
                    MultipartUpload::new(key, upload_id.clone(), *part_size),
                );
                self.mpu_failures.remove(sha256);
            }
            Record::Part { sha256, idx, e_tag } => {
                if let Some(m) = self.multipart.get_mut(sha256) {
                    m.parts.insert(*idx, e_tag.clone());
                    self.mpu_failures.remove(sha256);
                }
            }
            Record::MpuFailed {
                sha256,
                upload_id,
                failures,
            } => {
                if self.is_current_upload(sha256, upload_id) {
                    self.mpu_failures.insert(sha256.clone(), *failures);
                }
            }
            Record::MpuRestart { sha256, upload_id } => {
                if self.is_current_upload(sha256, upload_id) {
                    self.multipart.remove(sha256);
                    self.mpu_failures.remove(sha256);
                }
            }
            Record::Blob { sha256 } => {
                self.multipart.remove(sha256);
                self.mpu_failures.remove(sha256);
                self.blobs.insert(sha256.clone());
            }
            Record::Uploaded { episode } => self.stage(episode, EpisodeUpload::Uploaded),
            Record::Published {
                episode,
                dataset,
                version,
            } => {
                self.stage(episode, EpisodeUpload::Published);
                if let Some(e) = self.episodes.get_mut(episode) {
                    e.dataset = Some(dataset.clone());
                    e.version = Some(version.clone());
                }
            }
            Record::Dropped { episode } => {
                if let Some(e) = self.episodes.get_mut(episode) {
                    e.dropped = true;
                }
            }
            Record::Evicting { episode } => self.stage(episode, EpisodeUpload::Evicting),
            Record::Evicted { episode } => self.stage(episode, EpisodeUpload::Evicted),
        }
    }

    /// Whether `upload_id` is the blob's multipart upload in progress.
    fn is_current_upload(&self, sha256: &str, upload_id: &str) -> bool {
        self.multipart
            .get(sha256)
            .is_some_and(|m| m.upload_id == upload_id)
    }

    /// Failed attempts in a row at the blob's current multipart upload.
    #[must_use]
    pub fn failures_of(&self, sha256: &str) -> u32 {
        self.mpu_failures.get(sha256).copied().unwrap_or(0)
    }

    fn stage(&mut self, episode: &str, stage: EpisodeUpload) {
        if let Some(e) = self.episodes.get_mut(episode) {
            e.stage = e.stage.max(stage);
        }
    }

    /// Replay `records` from an empty queue.
    #[must_use]
    pub fn replay<'a>(records: impl IntoIterator<Item = &'a Record>) -> Self {
        let mut s = Self::default();
        for r in records {
            s.apply(r);
        }
        s
    }

    /// The state of `episode` as shown: `uploading` once a blob of it (or a part) is
    /// stored, else the stage.
    #[must_use]
    pub fn state_of(&self, episode: &str) -> Option<EpisodeUpload> {
        let e = self.episodes.get(episode)?;
        if e.stage > EpisodeUpload::Queued {
            return Some(e.stage);
        }
        let started = e.files.iter().any(|f| {
            self.blobs.contains(&f.sha256)
                || self
                    .multipart
                    .get(&f.sha256)
                    .is_some_and(|m| !m.parts.is_empty())
        });
        Some(if started {
            EpisodeUpload::Uploading
        } else {
            EpisodeUpload::Queued
        })
    }

    /// The state of `episode` as shown by name: `dropped` for a dropped one, else
    /// [`QueueState::state_of`]'s.
    #[must_use]
    pub fn state_name(&self, episode: &str) -> Option<&'static str> {
        if self.is_dropped(episode) {
            return Some(DROPPED);
        }
        self.state_of(episode).map(EpisodeUpload::name)
    }

    /// Whether an operator dropped `episode` from the queue.
    #[must_use]
    pub fn is_dropped(&self, episode: &str) -> bool {
        self.episodes.get(episode).is_some_and(|e| e.dropped)
    }

    /// Bytes of `episode` not yet on the store (stored parts count as sent); none for a
    /// dropped episode (it is not going to be sent).
    #[must_use]
    pub fn pending_bytes(&self, episode: &str) -> u64 {
        let Some(e) = self.episodes.get(episode) else {
            return 0;
        };
        if e.stage >= EpisodeUpload::Uploaded || e.dropped {
            return 0;
        }
        let mut seen = BTreeSet::new();
        e.files
            .iter()
            .filter(|f| !self.blobs.contains(&f.sha256) && seen.insert(f.sha256.as_str()))
            .map(|f| {
                let done = self
                    .multipart
                    .get(&f.sha256)
                    .map_or(0, |m| m.stored_bytes(f.size));
                f.size.saturating_sub(done)
            })
            .sum()
    }

    /// Episodes by state, for status.
    #[must_use]
    pub fn counts(&self) -> BTreeMap<&'static str, u64> {
        let mut out: BTreeMap<&'static str, u64> = [
            EpisodeUpload::Queued,
            EpisodeUpload::Uploading,
            EpisodeUpload::Uploaded,
            EpisodeUpload::Published,
            EpisodeUpload::Evicting,
            EpisodeUpload::Evicted,
        ]
        .iter()
        .map(|s| (s.name(), 0))
        .collect();
        out.insert(DROPPED, 0);
        for id in self.episodes.keys() {
            if let Some(s) = self.state_name(id) {
                *out.entry(s).or_insert(0) += 1;
            }
        }
        out
    }

    /// Bytes of every episode not yet on the store.
    #[must_use]
    pub fn total_pending_bytes(&self) -> u64 {
        self.episodes.keys().map(|e| self.pending_bytes(e)).sum()
    }

    /// The episodes in enqueue order.
    #[must_use]
    pub fn in_order(&self) -> Vec<(&String, &QueuedEpisode)> {
        let mut v: Vec<_> = self.episodes.iter().collect();
        v.sort_by_key(|(_, e)| e.seq);
        v
    }

    /// The records that rebuild this state (compaction): per episode in enqueue order its
    /// `enqueue`, then every verified blob, the multipart uploads in progress with their
    /// parts, then each episode's furthest stage.
    #[must_use]
    pub fn snapshot(&self) -> Vec<Record> {
        let mut out = Vec::new();
        let order = self.in_order();
        for (id, e) in &order {
            out.push(Record::Enqueue {
                episode: (*id).clone(),
                status: e.status.clone(),
                files: e.files.clone(),
            });
        }
        for sha256 in &self.blobs {
            out.push(Record::Blob {
                sha256: sha256.clone(),
            });
        }
        for (sha256, m) in &self.multipart {
            out.push(Record::Mpu {
                sha256: sha256.clone(),
                key: m.key.clone(),
                upload_id: m.upload_id.clone(),
                part_size: m.part_size,
            });
            for (&idx, e_tag) in &m.parts {
                out.push(Record::Part {
                    sha256: sha256.clone(),
                    idx,
                    e_tag: e_tag.clone(),
                });
            }
            if let Some(&failures) = self.mpu_failures.get(sha256) {
                out.push(Record::MpuFailed {
                    sha256: sha256.clone(),
                    upload_id: m.upload_id.clone(),
                    failures,
                });
            }
        }
        for (id, e) in &order {
            let episode = (*id).clone();
            if e.stage >= EpisodeUpload::Uploaded {
                out.push(Record::Uploaded {
                    episode: episode.clone(),
                });
            }
            if e.stage >= EpisodeUpload::Published {
                out.push(Record::Published {
                    episode: episode.clone(),
                    dataset: e.dataset.clone().unwrap_or_default(),
                    version: e.version.clone().unwrap_or_default(),
                });
            }
            if e.stage >= EpisodeUpload::Evicting {
                out.push(Record::Evicting {
                    episode: episode.clone(),
                });
            }
            if e.dropped {
                out.push(Record::Dropped {
                    episode: episode.clone(),
                });
            }
            if e.stage >= EpisodeUpload::Evicted {
                out.push(Record::Evicted { episode });
            }
        }
        out
    }
}
