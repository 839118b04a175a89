//! [`BlobSender`]: one blob to the store, by the steps the room's documentation lists.

use std::convert::Infallible;
use std::fs::File;
use std::io::Read;
use std::path::Path;

use bytes::Bytes;

use super::error::SendError;
use super::hooks::{NoHooks, SendHooks};
use super::parts::{part_count, MultipartUpload};
use super::resumable;
use crate::episodes::hash_file;
use crate::error::PublishError;
use crate::store::{PutCondition, Store};
use wshard::digest::sha256_hex;

/// What happened to one blob.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlobAction {
    /// Sent (and verified); `multipart` when sent in parts.
    Uploaded { multipart: bool },
    /// The store had it: nothing sent.
    AlreadyStored,
}

/// How a copy the store already holds under the blob's key (HEAD: the same size) is taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StoredCopies {
    /// As the blob: the key names the content (`wshard publish`: a re-publish reads
    /// nothing back).
    #[default]
    TrustSize,
    /// Read back and hashed first (the daemon's uploader, which records the blob as
    /// verified); another content under the name is written again.
    Verify,
}

/// Where a blob's bytes are.
#[derive(Clone, Copy, Debug)]
pub enum BlobSource<'a> {
    /// A local file, read when sent (a multipart upload reads one part at a time).
    File(&'a Path),
    /// Bytes in memory (the catalog): always one put; they cannot change once hashed.
    Memory(&'a Bytes),
}

/// One blob: its key (`blobs/sha256/<hh>/<hash>`), content hash, size and bytes.
#[derive(Clone, Copy, Debug)]
pub struct Blob<'a> {
    pub key: &'a str,
    /// SHA-256 (hex) of the content.
    pub sha256: &'a str,
    pub size: u64,
    pub source: BlobSource<'a>,
}

/// Sends blobs to one store, with its [`crate::TransferOptions`] (multipart threshold,
/// part size).
#[derive(Clone, Copy, Debug)]
pub struct BlobSender<'a> {
    store: &'a Store,
    stored: StoredCopies,
}

impl<'a> BlobSender<'a> {
    /// A sender that takes a stored copy of the same size as the blob.
    #[must_use]
    pub fn new(store: &'a Store) -> Self {
        Self {
            store,
            stored: StoredCopies::TrustSize,
        }
    }

    /// The same sender, taking stored copies as `stored` says.
    #[must_use]
    pub fn with_stored_copies(self, stored: StoredCopies) -> Self {
        Self { stored, ..self }
    }

    /// Whether a blob goes up in parts: a file of at least the multipart threshold.
    fn in_parts(&self, blob: &Blob<'_>) -> bool {
        matches!(blob.source, BlobSource::File(_))
            && blob.size >= self.store.options().multipart_threshold
    }

    /// Send `blob` unless the store has it, then verify it. `resume` is a multipart upload
    /// of it saved by an earlier send (ignored when it was for another key).
    ///
    /// # Errors
    /// [`SendError::Store`] (typed store errors; [`PublishError::BlobMismatch`] when the
    /// store holds another content after the send, deleted), [`SendError::Local`] (the file
    /// cannot be read, or [`PublishError::LocalFileChanged`]), [`SendError::Hook`].
    pub fn send<H: SendHooks>(
        &self,
        blob: &Blob<'_>,
        resume: Option<&MultipartUpload>,
        hooks: &mut H,
    ) -> Result<BlobAction, SendError<H::Error>> {
        let mut resume = resume.filter(|m| m.key == blob.key);
        let multipart = self.in_parts(blob);
        let parts_total = if multipart {
            let part_size = self.store.options().part_size as u64;
            part_count(blob.size, resume.map_or(part_size, |m| m.part_size))
        } else {
            1
        };
        hooks.progress(resume.map_or(0, |m| m.parts.len()), parts_total);
        if self.store.head_size(blob.key).map_err(SendError::Store)? == Some(blob.size) {
            if self.stored == StoredCopies::TrustSize || self.holds(blob)? {
                return Ok(BlobAction::AlreadyStored);
            }
            // Another content under the name: written again, never resumed.
            resume = None;
        }
        match blob.source {
            BlobSource::File(path) if multipart => {
                resumable::upload(self.store, blob.key, path, blob.size, resume, hooks)?;
            }
            BlobSource::File(path) => {
                let bytes = read_file(path)?;
                let local = sha256_hex(&bytes);
                if local != blob.sha256 {
                    return Err(changed(path, blob.sha256, local));
                }
                self.put_whole(blob.key, Bytes::from(bytes), hooks)?;
            }
            BlobSource::Memory(bytes) => self.put_whole(blob.key, bytes.clone(), hooks)?,
        }
        self.check_sent(blob)?;
        Ok(BlobAction::Uploaded { multipart })
    }

    /// Send the file at `path` (`size` bytes) to `key` as it is: one put below the
    /// multipart threshold, else a multipart upload (aborted on failure). No HEAD first,
    /// no verification: for files stored under their own names (the exports). Returns
    /// true when multipart was used.
    ///
    /// # Errors
    /// I/O with the path, typed store errors.
    pub fn put_file(&self, key: &str, path: &Path, size: u64) -> Result<bool, PublishError> {
        let hooks = &mut NoHooks;
        if size < self.store.options().multipart_threshold {
            let bytes = read_file::<Infallible>(path)?;
            self.put_whole(key, Bytes::from(bytes), hooks)?;
            return Ok(false);
        }
        resumable::upload(self.store, key, path, size, None, hooks)?;
        Ok(true)
    }

    /// One put of the whole blob, paced.
    fn put_whole<H: SendHooks>(
        &self,
        key: &str,
        bytes: Bytes,
        hooks: &mut H,
    ) -> Result<(), SendError<H::Error>> {
        let size = bytes.len() as u64;
        hooks.before_send(size).map_err(SendError::Hook)?;
        self.store
            .put(key, bytes, PutCondition::Always)
            .map_err(SendError::Store)?;
        hooks.put_stored(size);
        Ok(())
    }

    /// The store's copy of `blob` has its size and SHA-256 (a streamed GET: never held
    /// whole; no HEAD first: s3s-fs answers a HEAD of a multipart object by reading it
    /// whole to compute an MD5 ETag).
    fn holds<E>(&self, blob: &Blob<'_>) -> Result<bool, SendError<E>> {
        let (hash, size) = self.store.hash_remote(blob.key).map_err(SendError::Store)?;
        Ok(hash == blob.sha256 && size == blob.size)
    }

    /// Verify what was sent. Another content under the key is deleted; then either the
    /// local file changed since it was hashed ([`PublishError::LocalFileChanged`]) or the
    /// store returned other bytes ([`PublishError::BlobMismatch`]).
    fn check_sent<E>(&self, blob: &Blob<'_>) -> Result<(), SendError<E>> {
        let (hash, size) = self.store.hash_remote(blob.key).map_err(SendError::Store)?;
        if hash == blob.sha256 && size == blob.size {
            return Ok(());
        }
        self.store.delete(blob.key).map_err(SendError::Store)?;
        if let BlobSource::File(path) = blob.source {
            let (local, _) = hash_file(path).map_err(SendError::Local)?;
            if local != blob.sha256 {
                return Err(changed(path, blob.sha256, local));
            }
        }
        Err(SendError::Store(PublishError::BlobMismatch {
            key: blob.key.to_owned(),
            expected: format!("sha256 {}, {} bytes", blob.sha256, blob.size),
            found: format!("sha256 {hash}, {size} bytes (deleted: sent again at the next attempt)"),
        }))
    }
}

/// The whole file at `path`.
fn read_file<E>(path: &Path) -> Result<Vec<u8>, SendError<E>> {
    let mut buf = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut buf))
        .map_err(|e| SendError::Local(PublishError::io(path, e)))?;
    Ok(buf)
}

fn changed<E>(path: &Path, expected: &str, found: String) -> SendError<E> {
    SendError::Local(PublishError::LocalFileChanged {
        path: path.to_path_buf(),
        expected: expected.to_owned(),
        found,
    })
}
