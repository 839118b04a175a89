//! [`BlobCache`]: the local cache of stored blobs, keyed by content hash (docs/PUBLISH.md,
//! "Remote reads and the cache").
//!
//! ```text
//! <root>/blobs/sha256/<hh>/<64 hex>     one blob, byte for byte (the same key as the store's)
//! <root>/blobs/sha256/<hh>/<hex>.partial-<pid>-<n>   a download in progress
//! <root>/blobs/sha256/<hh>/<hex>.origins   where the blob was read from (`cache/origin.rs`)
//! ```
//!
//! `<root>` is `$WSHARD_CACHE_DIR`, else `$XDG_CACHE_HOME/wshard`, else `~/.cache/wshard`.
//! A blob is written to a `.partial` file, its SHA-256 computed while it is written, and
//! renamed to its name only when the hash is the one asked for: a blob under its name is
//! whole. Every use hashes it again (a disk can rot, a user can edit a file): a blob that
//! does not match is removed and fetched again. A blob present is never downloaded. The
//! modification time is the last use (set on every hit); `gc` removes the least recently
//! used blobs first until the cache fits a byte limit. A blob answers a read only for a
//! place (store, bucket, key) it was read from or that the store confirms
//! ([`BlobCache::confirm_origin`]).

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use wshard::digest::hex;

use crate::episodes::hash_file;
use crate::error::PublishError;
use crate::hash::is_sha256_hex;
use crate::layout::BLOBS_DIR;
use crate::store::Store;

mod origin;

pub use origin::{BlobOrigin, ORIGINS_SUFFIX};

/// The cache directory variable.
pub const ENV_CACHE_DIR: &str = "WSHARD_CACHE_DIR";
/// The XDG cache base variable.
pub const ENV_XDG_CACHE_HOME: &str = "XDG_CACHE_HOME";
/// The directory under the XDG cache base (or `~/.cache`).
pub const CACHE_SUBDIR: &str = "wshard";
/// The suffix of a download in progress.
pub const PARTIAL_SUFFIX: &str = ".partial";
/// `gc` removes `.partial` files older than this (a crashed download's leftovers).
pub const STALE_PARTIAL: Duration = Duration::from_secs(3600);

static PARTIAL_SEQ: AtomicU64 = AtomicU64::new(0);

/// The blob cache at one root directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobCache {
    root: PathBuf,
}

/// What `wshard cache stats` shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub blobs: u64,
    pub bytes: u64,
    /// `.partial` files (downloads in progress or left by a crash).
    pub partial_files: u64,
    pub partial_bytes: u64,
}

/// What `gc` did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    pub removed_blobs: u64,
    pub removed_bytes: u64,
    pub kept_blobs: u64,
    pub kept_bytes: u64,
    pub removed_partials: u64,
}

/// How a blob came to be in the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Obtained {
    /// It was there (and hashed right): nothing downloaded.
    Cached,
    /// Downloaded now: that many bytes.
    Downloaded(u64),
}

/// A writer that hashes what goes through it.
struct HashingWriter<W> {
    inner: W,
    hash: Sha256,
    size: u64,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.size += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Copy `from` to `to` through a `.partial` file and a rename, checking the SHA-256 of the
/// bytes written against `sha256`. Returns the size.
///
/// # Errors
/// I/O errors; [`PublishError::BlobMismatch`] when the bytes do not hash to `sha256`
/// (nothing is left at `to`).
pub fn copy_checked(from: &Path, to: &Path, sha256: &str) -> Result<u64, PublishError> {
    let partial = partial_path(to);
    let res = (|| {
        let mut src = File::open(from).map_err(|e| PublishError::io(from, e))?;
        let dst = File::create(&partial).map_err(|e| PublishError::io(&partial, e))?;
        let mut w = HashingWriter {
            inner: dst,
            hash: Sha256::new(),
            size: 0,
        };
        io::copy(&mut src, &mut w).map_err(|e| PublishError::io(&partial, e))?;
        w.inner
            .sync_all()
            .map_err(|e| PublishError::io(&partial, e))?;
        let got = hex(&w.hash.finalize());
        if got != sha256 {
            return Err(PublishError::BlobMismatch {
                key: from.display().to_string(),
                expected: format!("sha256 {sha256}"),
                found: format!("sha256 {got}"),
            });
        }
        fs::rename(&partial, to).map_err(|e| PublishError::io(to, e))?;
        Ok(w.size)
    })();
    if res.is_err() {
        let _ = fs::remove_file(&partial);
    }
    res
}

fn partial_path(to: &Path) -> PathBuf {
    let n = PARTIAL_SEQ.fetch_add(1, Ordering::Relaxed);
    let mut name = to.file_name().unwrap_or_default().to_os_string();
    name.push(format!("{PARTIAL_SUFFIX}-{}-{n}", std::process::id()));
    to.with_file_name(name)
}

impl BlobCache {
    /// The cache at `root`.
    #[must_use]
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// `$WSHARD_CACHE_DIR`, else `$XDG_CACHE_HOME/wshard`, else `$HOME/.cache/wshard`.
    ///
    /// # Errors
    /// [`PublishError::CacheDirUnknown`] when none of them is set.
    pub fn from_env() -> Result<Self, PublishError> {
        let var = |n: &str| {
            std::env::var_os(n)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        if let Some(d) = var(ENV_CACHE_DIR) {
            return Ok(Self::at(d));
        }
        if let Some(d) = var(ENV_XDG_CACHE_HOME) {
            return Ok(Self::at(d.join(CACHE_SUBDIR)));
        }
        var("HOME")
            .map(|h| Self::at(h.join(".cache").join(CACHE_SUBDIR)))
            .ok_or(PublishError::CacheDirUnknown)
    }

    /// The root directory.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn blobs_dir(&self) -> PathBuf {
        self.root.join(BLOBS_DIR)
    }

    /// Where the blob `sha256` lives (whether or not it is there).
    ///
    /// # Errors
    /// [`PublishError::InvalidUrl`] when `sha256` is not 64 lower-case hex digits.
    pub fn blob_path(&self, sha256: &str) -> Result<PathBuf, PublishError> {
        if !is_sha256_hex(sha256) {
            return Err(PublishError::InvalidUrl {
                url: sha256.to_owned(),
                reason: "not a SHA-256 (64 lower-case hex digits)".into(),
            });
        }
        Ok(self.blobs_dir().join(&sha256[..2]).join(sha256))
    }

    /// The cached blob `sha256`, checked (size when given, and SHA-256), its use time set;
    /// `None` when absent. An entry that does not check is removed (and `None`).
    ///
    /// # Errors
    /// I/O errors other than absence.
    pub fn lookup(&self, sha256: &str, size: Option<u64>) -> Result<Option<PathBuf>, PublishError> {
        let path = self.blob_path(sha256)?;
        let len = match fs::metadata(&path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(PublishError::io(&path, e)),
        };
        // Another process may remove the entry meanwhile (its gc, or its own finding that
        // it is bad): absent then, not an error. A wrong size needs no hashing.
        let good = size.map_or(true, |s| s == len)
            && match hash_file(&path) {
                Ok((h, _)) => h == sha256,
                Err(PublishError::Io { source, .. })
                    if source.kind() == io::ErrorKind::NotFound =>
                {
                    return Ok(None)
                }
                Err(e) => return Err(e),
            };
        if !good {
            match fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    return Err(PublishError::io(&path, e))
                }
                _ => {
                    self.forget_origins(sha256);
                    return Ok(None);
                }
            }
        }
        // The use time for gc; a read-only cache still serves the blob.
        if let Ok(f) = File::options().write(true).open(&path) {
            let _ = f.set_modified(SystemTime::now());
        }
        Ok(Some(path))
    }

    fn ensure_dir(&self, sha256: &str) -> Result<PathBuf, PublishError> {
        let path = self.blob_path(sha256)?;
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|e| PublishError::io(dir, e))?;
        }
        Ok(path)
    }

    /// Put bytes already fetched (a whole blob) in the cache when they hash to `sha256`.
    ///
    /// # Errors
    /// [`PublishError::BlobMismatch`] (nothing cached) when they do not; I/O errors.
    pub fn insert_bytes(&self, sha256: &str, bytes: &[u8]) -> Result<PathBuf, PublishError> {
        let path = self.ensure_dir(sha256)?;
        let got = wshard::digest::sha256_hex(bytes);
        if got != sha256 {
            return Err(PublishError::BlobMismatch {
                key: path.display().to_string(),
                expected: format!("sha256 {sha256}"),
                found: format!("sha256 {got}"),
            });
        }
        let partial = partial_path(&path);
        let res = fs::write(&partial, bytes)
            .and_then(|()| fs::rename(&partial, &path))
            .map_err(|e| PublishError::io(&path, e));
        if res.is_err() {
            let _ = fs::remove_file(&partial);
        }
        res.map(|()| path)
    }

    /// The blob `sha256` (stored at `key`, `size` bytes when known): from the cache when it
    /// holds it for this place ([`BlobCache::confirm_origin`]), else downloaded (streamed
    /// to a `.partial`, hashed, renamed) and the place recorded.
    ///
    /// # Errors
    /// [`PublishError::BlobMismatch`] when the store's object does not hash to `sha256` or
    /// has another size (nothing cached); typed store and I/O errors.
    pub fn fetch(
        &self,
        store: &Store,
        key: &str,
        sha256: &str,
        size: Option<u64>,
    ) -> Result<(PathBuf, Obtained), PublishError> {
        if let Some(p) = self.lookup(sha256, size)? {
            if self.confirm_origin(store, key, sha256, &p)? {
                return Ok((p, Obtained::Cached));
            }
        }
        let path = self.ensure_dir(sha256)?;
        let partial = partial_path(&path);
        let res = (|| {
            let mut f = File::create(&partial).map_err(|e| PublishError::io(&partial, e))?;
            let (got, n) = store.download_to(key, &mut f, &partial)?;
            f.sync_all().map_err(|e| PublishError::io(&partial, e))?;
            if got != sha256 || size.is_some_and(|s| s != n) {
                return Err(PublishError::BlobMismatch {
                    key: key.to_owned(),
                    expected: format!("sha256 {sha256}, {} bytes", size.unwrap_or(n)),
                    found: format!("sha256 {got}, {n} bytes"),
                });
            }
            fs::rename(&partial, &path).map_err(|e| PublishError::io(&path, e))?;
            // Not recorded: the store is asked (one HEAD) at the next use.
            let _ = self.record_origin(sha256, &BlobOrigin::of(store, key));
            Ok(n)
        })();
        if res.is_err() {
            let _ = fs::remove_file(&partial);
        }
        res.map(|n| (path, Obtained::Downloaded(n)))
    }

    /// Every file under `blobs/sha256/*/`: (path, size, modified, is partial).
    fn entries(&self) -> Result<Vec<(PathBuf, u64, SystemTime, bool)>, PublishError> {
        let mut out = Vec::new();
        let dir = self.blobs_dir();
        let heads = match fs::read_dir(&dir) {
            Ok(r) => r,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(PublishError::io(&dir, e)),
        };
        for head in heads {
            let head = head.map_err(|e| PublishError::io(&dir, e))?.path();
            if !head.is_dir() {
                continue;
            }
            for f in fs::read_dir(&head).map_err(|e| PublishError::io(&head, e))? {
                let p = f.map_err(|e| PublishError::io(&head, e))?.path();
                let Ok(meta) = fs::metadata(&p) else {
                    continue; // removed meanwhile
                };
                if !meta.is_file() {
                    continue;
                }
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                let partial = name.contains(PARTIAL_SUFFIX);
                if !partial && !is_sha256_hex(name) {
                    continue; // not ours
                }
                let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                out.push((p, meta.len(), modified, partial));
            }
        }
        Ok(out)
    }

    /// Counts and bytes.
    ///
    /// # Errors
    /// I/O errors reading the directories.
    pub fn stats(&self) -> Result<CacheStats, PublishError> {
        let mut s = CacheStats::default();
        for (_, len, _, partial) in self.entries()? {
            if partial {
                s.partial_files += 1;
                s.partial_bytes += len;
            } else {
                s.blobs += 1;
                s.bytes += len;
            }
        }
        Ok(s)
    }

    /// Remove the least recently used blobs until at most `limit` bytes of blobs remain, and
    /// `.partial` files older than [`STALE_PARTIAL`].
    ///
    /// # Errors
    /// I/O errors.
    pub fn gc(&self, limit: u64) -> Result<GcReport, PublishError> {
        let mut r = GcReport::default();
        let now = SystemTime::now();
        let mut blobs = Vec::new();
        for (p, len, modified, partial) in self.entries()? {
            if partial {
                let old = now
                    .duration_since(modified)
                    .is_ok_and(|age| age > STALE_PARTIAL);
                if old && fs::remove_file(&p).is_ok() {
                    r.removed_partials += 1;
                }
            } else {
                blobs.push((modified, p, len));
            }
        }
        // Oldest use first.
        blobs.sort();
        let mut total: u64 = blobs.iter().map(|b| b.2).sum();
        for (_, p, len) in blobs {
            if total > limit {
                match fs::remove_file(&p) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(PublishError::io(&p, e)),
                }
                if let Some(sha256) = p.file_name().and_then(|n| n.to_str()) {
                    self.forget_origins(sha256);
                }
                total -= len;
                r.removed_blobs += 1;
                r.removed_bytes += len;
            } else {
                r.kept_blobs += 1;
                r.kept_bytes += len;
            }
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_are_checked_on_insert_and_on_use_and_gc_keeps_the_newest() -> Result<(), PublishError>
    {
        let dir = tempfile::tempdir().map_err(|e| PublishError::io("tempdir", e))?;
        let cache = BlobCache::at(dir.path());
        let a = b"first blob".to_vec();
        let b = b"second, longer blob".to_vec();
        let (ha, hb) = (
            wshard::digest::sha256_hex(&a),
            wshard::digest::sha256_hex(&b),
        );
        assert!(matches!(
            cache.insert_bytes(&ha, &b),
            Err(PublishError::BlobMismatch { .. })
        ));
        let pa = cache.insert_bytes(&ha, &a)?;
        let old = SystemTime::now() - Duration::from_secs(100);
        File::options()
            .write(true)
            .open(&pa)
            .and_then(|f| f.set_modified(old))
            .map_err(|e| PublishError::io(&pa, e))?;
        cache.insert_bytes(&hb, &b)?;
        assert_eq!(cache.stats()?.blobs, 2);
        assert_eq!(cache.lookup(&ha, Some(a.len() as u64))?, Some(pa.clone()));
        // Corrupt b: the next use finds it out and drops it.
        let pb = cache.blob_path(&hb)?;
        fs::write(&pb, b"second, LONGER blob").map_err(|e| PublishError::io(&pb, e))?;
        assert_eq!(cache.lookup(&hb, None)?, None);
        assert!(!pb.exists());
        cache.insert_bytes(&hb, &b)?;
        // a was used after b was (re)inserted? No: a's use came first, so a goes first.
        let r = cache.gc(b.len() as u64)?;
        assert_eq!((r.removed_blobs, r.kept_blobs), (1, 1));
        assert!(!pa.exists() && pb.exists());
        Ok(())
    }
}
