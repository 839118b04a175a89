//! Sending one blob (a file of an episode, content-addressed by its SHA-256):
//!
//! 1. HEAD its key: the store already holds that size -> verify it (streamed SHA-256) and
//!    record `blob`; nothing is sent. (This also finishes a multipart upload completed just
//!    before a crash.)
//! 2. Below the multipart threshold: read it, check its SHA-256, one put.
//! 3. Else a multipart upload, resumed from the queue: the `mpu` record holds the upload
//!    id; every part with a `part` record (its ETag) is never sent again. The upload id is
//!    journaled before the first part; each part's ETag after the store answered. A store
//!    that lost the upload (`UploadGone`) -> a new upload, recorded, from part 0.
//! 4. Verify: size (HEAD) and the SHA-256 of a streamed GET; then record `blob`. A
//!    mismatch deletes the remote object and is retried (a local file changed since it was
//!    enqueued re-enqueues its episode).
//!
//! Every send is paced by the bandwidth limit, one part (or put) at a time.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use bytes::Bytes;
use sha2::{Digest, Sha256};
use wshard_publish::episodes::{hash_file, select};
use wshard_publish::store::PutCondition;
use wshard_publish::PublishError;

use super::record::{QueuedFile, Record};
use super::state::{part_count, part_len, Multipart};
use super::uploader::{local_path, CycleError, EpisodeError, Uploader};
use super::view::CurrentBlob;

/// New multipart uploads of one blob in one pass before giving up (the store keeps losing
/// them).
const MAX_FRESH_UPLOADS: usize = 3;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn local_err(path: &std::path::Path, e: std::io::Error) -> EpisodeError {
    EpisodeError::Local(PublishError::Io {
        path: path.to_path_buf(),
        source: e,
    })
}

impl Uploader {
    fn store(&self) -> Result<&wshard_publish::Store, CycleError> {
        self.publisher
            .as_ref()
            .map(wshard_publish::Publisher::store)
            .ok_or(CycleError::Stopped)
    }

    /// Send `f` of `episode` (see the module documentation) and record it `blob`.
    pub(super) fn send_blob(&mut self, episode: &str, f: &QueuedFile) -> Result<(), EpisodeError> {
        let key = self
            .publisher
            .as_ref()
            .map(|p| p.keys().blob(&f.sha256))
            .ok_or(CycleError::Stopped)?;
        let path = local_path(&self.settings.data_dir, episode, &f.rel);
        let mut parts_total = 1;
        if f.size >= self.settings.transfer.multipart_threshold {
            let ps = self
                .state
                .multipart
                .get(&f.sha256)
                .map_or(self.settings.transfer.part_size as u64, |m| m.part_size);
            parts_total = part_count(f.size, ps);
        }
        let parts_done = self
            .state
            .multipart
            .get(&f.sha256)
            .map_or(0, |m| m.parts.len());
        self.shared.update(|v| {
            v.current = Some(CurrentBlob {
                episode: episode.to_owned(),
                file: f.rel.clone(),
                size: f.size,
                parts_done,
                parts_total,
            });
        });
        let mut fresh = false;
        if self.store()?.head_size(&key).map_err(CycleError::from)? == Some(f.size) {
            if self.verify(&key, f)? {
                if !self.state.multipart.contains_key(&f.sha256) {
                    self.shared.update(|v| v.counters.blobs_skipped += 1);
                }
                self.record(Record::Blob {
                    sha256: f.sha256.clone(),
                })?;
                return Ok(());
            }
            // Another content under the name: written again, never resumed.
            fresh = true;
        }
        if f.size < self.settings.transfer.multipart_threshold {
            self.put_small(episode, &key, &path, f)?;
        } else {
            self.put_multipart(&key, &path, f, fresh)?;
        }
        if !self.verify(&key, f)? {
            self.store()?.delete(&key).map_err(CycleError::from)?;
            let (local_hash, _) = hash_file(&path).map_err(EpisodeError::Local)?;
            if local_hash != f.sha256 {
                return self.reenqueue(episode);
            }
            return Err(EpisodeError::Cycle(CycleError::Store(
                PublishError::BlobMismatch {
                    key,
                    expected: format!("sha256 {}, {} bytes", f.sha256, f.size),
                    found: "another content (deleted; sent again at the next attempt)".into(),
                },
            )));
        }
        self.shared.update(|v| v.counters.blobs_uploaded += 1);
        self.record(Record::Blob {
            sha256: f.sha256.clone(),
        })?;
        Ok(())
    }

    /// The store's copy has `f`'s size and SHA-256.
    fn verify(&self, key: &str, f: &QueuedFile) -> Result<bool, CycleError> {
        let store = self.store()?;
        if store.head_size(key)? != Some(f.size) {
            return Ok(false);
        }
        let (hash, size) = store.hash_remote(key)?;
        Ok(hash == f.sha256 && size == f.size)
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

    fn put_small(
        &mut self,
        episode: &str,
        key: &str,
        path: &std::path::Path,
        f: &QueuedFile,
    ) -> Result<(), EpisodeError> {
        let mut buf = Vec::new();
        File::open(path)
            .and_then(|mut file| file.read_to_end(&mut buf))
            .map_err(|e| local_err(path, e))?;
        if hex(&Sha256::digest(&buf)) != f.sha256 {
            return self.reenqueue(episode);
        }
        if !self.pacer.before_send(f.size, &self.stop) {
            return Err(CycleError::Stopped.into());
        }
        self.store()?
            .put(key, Bytes::from(buf), PutCondition::Always)
            .map_err(CycleError::from)?;
        self.shared.update(|v| {
            v.counters.sent_bytes += f.size;
            if let Some(c) = v.current.as_mut() {
                c.parts_done = 1;
            }
        });
        Ok(())
    }

    /// Create a multipart upload and record it (before any part is sent).
    fn new_upload(&mut self, key: &str, f: &QueuedFile) -> Result<Multipart, EpisodeError> {
        let part_size = self.settings.transfer.part_size as u64;
        let upload_id = self
            .store()?
            .create_multipart(key)
            .map_err(CycleError::from)?;
        self.record(Record::Mpu {
            sha256: f.sha256.clone(),
            key: key.to_owned(),
            upload_id: upload_id.clone(),
            part_size,
        })?;
        let parts_total = part_count(f.size, part_size);
        self.shared.update(|v| {
            if let Some(c) = v.current.as_mut() {
                c.parts_done = 0;
                c.parts_total = parts_total;
            }
        });
        Ok(Multipart {
            key: key.to_owned(),
            upload_id,
            part_size,
            parts: std::collections::BTreeMap::new(),
        })
    }

    fn put_multipart(
        &mut self,
        key: &str,
        path: &std::path::Path,
        f: &QueuedFile,
        fresh: bool,
    ) -> Result<(), EpisodeError> {
        let mut mpu = match self.state.multipart.get(&f.sha256) {
            Some(m) if !fresh && m.key == key => m.clone(),
            _ => self.new_upload(key, f)?,
        };
        let mut file = File::open(path).map_err(|e| local_err(path, e))?;
        let mut fresh_uploads = 0;
        'upload: loop {
            let n = part_count(f.size, mpu.part_size);
            for idx in 0..n {
                if mpu.parts.contains_key(&idx) {
                    continue;
                }
                let len = part_len(f.size, mpu.part_size, idx);
                let mut buf = vec![0_u8; usize::try_from(len).unwrap_or(0)];
                file.seek(SeekFrom::Start(idx as u64 * mpu.part_size))
                    .and_then(|_| file.read_exact(&mut buf))
                    .map_err(|e| local_err(path, e))?;
                if !self.pacer.before_send(len, &self.stop) {
                    return Err(CycleError::Stopped.into());
                }
                match self
                    .store()?
                    .put_part(key, &mpu.upload_id, idx, Bytes::from(buf))
                {
                    Ok(e_tag) => {
                        self.record(Record::Part {
                            sha256: f.sha256.clone(),
                            idx,
                            e_tag: e_tag.clone(),
                        })?;
                        mpu.parts.insert(idx, e_tag);
                        let done = mpu.parts.len();
                        self.shared.update(|v| {
                            v.counters.sent_bytes += len;
                            v.counters.parts_sent += 1;
                            if let Some(c) = v.current.as_mut() {
                                c.parts_done = done;
                            }
                        });
                    }
                    Err(PublishError::UploadGone { .. }) if fresh_uploads < MAX_FRESH_UPLOADS => {
                        tracing::warn!(
                            key,
                            "upload: the store lost the multipart upload; starting a new one"
                        );
                        fresh_uploads += 1;
                        mpu = self.new_upload(key, f)?;
                        continue 'upload;
                    }
                    Err(e) => return Err(CycleError::Store(e).into()),
                }
                if self.stopped() {
                    return Err(CycleError::Stopped.into());
                }
            }
            let e_tags: Vec<String> = (0..n).filter_map(|i| mpu.parts.get(&i).cloned()).collect();
            match self
                .store()?
                .complete_multipart(key, &mpu.upload_id, &e_tags)
            {
                Ok(()) => return Ok(()),
                Err(PublishError::UploadGone { .. }) => {
                    // Completed before a crash? The verification that follows tells.
                    if self.store()?.head_size(key).map_err(CycleError::from)? == Some(f.size) {
                        return Ok(());
                    }
                    if fresh_uploads >= MAX_FRESH_UPLOADS {
                        return Err(CycleError::Store(PublishError::Store {
                            op: "complete multipart",
                            key: key.to_owned(),
                            detail: "the store keeps losing the upload".into(),
                        })
                        .into());
                    }
                    fresh_uploads += 1;
                    mpu = self.new_upload(key, f)?;
                }
                Err(e) => return Err(CycleError::Store(e).into()),
            }
        }
    }
}
