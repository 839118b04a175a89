//! Where a cached blob was read from ([`BlobOrigin`]: the store's provider and endpoint,
//! the bucket and the key), kept beside the blob in `<hh>/<hash>.origins`, one line per
//! place. The cache is keyed by content, but a read names a place: a blob the cache holds
//! answers a read only for a place it came from, or that the store confirms holds it (a
//! HEAD of the key with the blob's size), which is then recorded. So a mistyped bucket or
//! key is found out even when the bytes are cached, and a blob read before is read again
//! from the cache with no request, also offline.
//!
//! The file only saves requests: one that cannot be read is no known place (the store is
//! asked), one that cannot be written is not recorded (asked again next time).

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::BlobCache;
use crate::error::PublishError;
use crate::store::Store;

/// The suffix of a blob's origins file, `<hh>/<hash>.origins`.
pub const ORIGINS_SUFFIX: &str = ".origins";

/// One place a blob was read from: `PROVIDER ENDPOINT BUCKET KEY` (one line of the origins
/// file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobOrigin(String);

impl BlobOrigin {
    /// The object `key` of `store`'s bucket.
    #[must_use]
    pub fn of(store: &Store, key: &str) -> Self {
        let c = store.config();
        Self(format!(
            "{} {} {} {key}",
            c.provider,
            c.effective_endpoint(),
            c.bucket
        ))
    }

    /// The line as written; `None` for a place no line can hold (a line break in the key):
    /// such a place is never recorded, so the store is always asked.
    fn line(&self) -> Option<&str> {
        (!self.0.contains(['\n', '\r'])).then_some(self.0.as_str())
    }
}

impl BlobCache {
    /// The origins file of blob `sha256` (whether or not it is there).
    ///
    /// # Errors
    /// As [`BlobCache::blob_path`].
    pub fn origins_path(&self, sha256: &str) -> Result<PathBuf, PublishError> {
        let mut p = self.blob_path(sha256)?.into_os_string();
        p.push(ORIGINS_SUFFIX);
        Ok(PathBuf::from(p))
    }

    /// Whether blob `sha256` was read from `origin` (recorded in its origins file).
    #[must_use]
    pub fn came_from(&self, sha256: &str, origin: &BlobOrigin) -> bool {
        let (Some(line), Ok(path)) = (origin.line(), self.origins_path(sha256)) else {
            return false;
        };
        fs::read_to_string(path).is_ok_and(|text| text.lines().any(|l| l == line))
    }

    /// Record that blob `sha256` was read from `origin` (appended, once).
    ///
    /// # Errors
    /// I/O errors writing the origins file.
    pub fn record_origin(&self, sha256: &str, origin: &BlobOrigin) -> Result<(), PublishError> {
        let Some(line) = origin.line() else {
            return Ok(());
        };
        if self.came_from(sha256, origin) {
            return Ok(());
        }
        let path = self.origins_path(sha256)?;
        File::options()
            .create(true)
            .append(true)
            .open(&path)
            // One write of the whole line: appends of other processes do not cut into it.
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()))
            .map_err(|e| PublishError::io(&path, e))
    }

    /// Whether the cached blob `sha256` at `path` may answer a read of `key` on `store`:
    /// it came from there, or a HEAD of `key` finds an object of its size there (then the
    /// place is recorded). `false` when the store holds no such object at `key` (the read
    /// goes to the store, which says what is there).
    ///
    /// # Errors
    /// The store's typed errors when it must be asked and does not answer (offline:
    /// [`PublishError::EndpointUnreachable`]; a missing bucket).
    pub fn confirm_origin(
        &self,
        store: &Store,
        key: &str,
        sha256: &str,
        path: &Path,
    ) -> Result<bool, PublishError> {
        let origin = BlobOrigin::of(store, key);
        if self.came_from(sha256, &origin) {
            return Ok(true);
        }
        // A cached file that cannot be looked at is no answer: the read goes to the store.
        let Ok(len) = fs::metadata(path).map(|m| m.len()) else {
            return Ok(false);
        };
        if store.head_size(key)? != Some(len) {
            return Ok(false);
        }
        // Not recorded: asked again next time.
        let _ = self.record_origin(sha256, &origin);
        Ok(true)
    }

    /// Remove the origins file of blob `sha256` (with the blob; absent is fine).
    pub(super) fn forget_origins(&self, sha256: &str) {
        if let Ok(p) = self.origins_path(sha256) {
            let _ = fs::remove_file(p);
        }
    }
}
