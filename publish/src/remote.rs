//! Remote-first reads (docs/PUBLISH.md, "Remote reads and the cache"): a stored shard is
//! opened with one range request for its first [`DEFAULT_PREFETCH_BYTES`] (header, and for
//! most shards the whole index and string table; one more request when the index is
//! longer), then each block is one range request when it is read. Nothing is downloaded
//! whole, except a shard no longer than the first request, which is then whole and goes to
//! the cache. A blob whose hash is known (a dataset URL, a `blobs/sha256/..` key) and that
//! the [`BlobCache`] holds for this place (read from this store, bucket and key before) is
//! read from the cache: no request; held but read elsewhere, one HEAD first confirms the
//! place holds it ([`BlobCache::confirm_origin`]).
//!
//! Dataset versions are content-addressed too (their name is their SHA-256): they are read
//! through the cache, so a pinned `@VERSION` costs no request once seen there.

use std::fs::File;
use std::io;
use std::path::PathBuf;

use wshard::read::{
    RangeFetch, RangedSource, ReadAt, ReadLimits, ShardReader, DEFAULT_PREFETCH_BYTES,
};

use crate::cache::{BlobCache, BlobOrigin};
use crate::error::PublishError;
use crate::layout::DatasetId;
use crate::publish::{parse_version, Publisher};
use crate::store::Store;
use crate::url::{blob_hash, RemoteUrl};
use crate::version::{DatasetVersion, EpisodeEntry, FileEntry};

/// Fetches ranges of one stored object through a [`Store`].
#[derive(Debug)]
pub struct StoreFetch<'a> {
    store: &'a Store,
    key: String,
}

impl RangeFetch for StoreFetch<'_> {
    fn fetch(&self, offset: u64, len: u64) -> io::Result<Vec<u8>> {
        let end = offset.saturating_add(len);
        let got = self
            .store
            .get_range(&self.key, offset, len)
            .map_err(|e| io::Error::other(format!("{} bytes {offset}..{end}: {e}", self.key)))?;
        if got.bytes.len() as u64 != len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{} bytes {offset}..{end}: the store returned {} bytes",
                    self.key,
                    got.bytes.len()
                ),
            ));
        }
        Ok(got.bytes.to_vec())
    }
}

/// Where a remote shard's bytes come from: the cache's file, or range requests.
#[derive(Debug)]
pub enum BlobSource<'a> {
    Cached(File),
    Ranged(RangedSource<StoreFetch<'a>>),
}

impl ReadAt for BlobSource<'_> {
    fn size(&self) -> io::Result<u64> {
        match self {
            Self::Cached(f) => f.size(),
            Self::Ranged(r) => r.size(),
        }
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match self {
            Self::Cached(f) => f.read_exact_at(buf, offset),
            Self::Ranged(r) => r.read_exact_at(buf, offset),
        }
    }
}

/// A stored object to read: its key and, when known, its content hash and size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobRef {
    pub key: String,
    pub sha256: Option<String>,
    pub size: Option<u64>,
}

impl BlobRef {
    /// The object at `key`; its hash when `key` is a blob key.
    #[must_use]
    pub fn key(key: &str) -> Self {
        Self {
            key: key.to_owned(),
            sha256: blob_hash(key).map(str::to_owned),
            size: None,
        }
    }
}

/// A stored shard opened for remote reads.
#[derive(Debug)]
pub struct RemoteShard<'a> {
    key: String,
    from_cache: bool,
    reader: ShardReader<BlobSource<'a>>,
}

impl<'a> RemoteShard<'a> {
    /// Open `blob`: from the cache when it holds it, else with range requests.
    ///
    /// # Errors
    /// [`PublishError::RemoteRead`] (naming the key) for a shard that does not parse;
    /// [`PublishError::BlobMismatch`] when the object is not the blob named (another size
    /// than known, or, fetched whole by the first request, another SHA-256); typed store
    /// errors. A cache that cannot be read or written is a miss, never an error.
    pub fn open(
        store: &'a Store,
        cache: Option<&BlobCache>,
        blob: &BlobRef,
    ) -> Result<Self, PublishError> {
        let limits = ReadLimits::default();
        let at = |source| PublishError::RemoteRead {
            key: blob.key.clone(),
            source,
        };
        let in_cache = match blob.sha256.as_deref() {
            Some(sha) => cached(cache, store, &blob.key, sha, blob.size)?,
            None => None,
        };
        // Gone between the check and the open (another process's gc): read remotely.
        if let Some(f) = in_cache.and_then(|path| File::open(path).ok()) {
            let reader = ShardReader::new(BlobSource::Cached(f), limits).map_err(at)?;
            return Ok(Self {
                key: blob.key.clone(),
                from_cache: true,
                reader,
            });
        }
        let first = store.get_range(&blob.key, 0, DEFAULT_PREFETCH_BYTES)?;
        let size = first.object_size;
        let head = first.bytes.to_vec();
        let mismatch = |found: String| PublishError::BlobMismatch {
            key: blob.key.clone(),
            expected: match (&blob.sha256, blob.size) {
                (Some(sha), Some(n)) => format!("sha256 {sha}, {n} bytes"),
                (Some(sha), None) => format!("sha256 {sha}"),
                (None, Some(n)) => format!("{n} bytes"),
                (None, None) => "its content".into(),
            },
            found,
        };
        // An object of another size than the version lists is not the blob it names.
        if blob.size.is_some_and(|n| n != size) {
            return Err(mismatch(format!("{size} bytes")));
        }
        if head.len() as u64 == size {
            // The whole object came: it must be what its name says (a larger object is
            // checked block by block, by CRC, as it is read); then it is kept.
            if let Some(sha) = &blob.sha256 {
                let got = wshard::digest::sha256_hex(&head);
                if got != *sha {
                    return Err(mismatch(format!("sha256 {got}, {size} bytes")));
                }
                keep(cache, store, &blob.key, sha, &head);
            }
        }
        let fetch = StoreFetch {
            store,
            key: blob.key.clone(),
        };
        let mut src = RangedSource::new(fetch, size, head);
        src.complete_metadata(&limits).map_err(|e| {
            at(wshard::FormatError::Io {
                op: "read",
                path: None,
                source: e,
            })
        })?;
        let reader = ShardReader::new(BlobSource::Ranged(src), limits).map_err(at)?;
        Ok(Self {
            key: blob.key.clone(),
            from_cache: false,
            reader,
        })
    }

    /// The key read.
    #[must_use]
    pub fn key(&self) -> &str {
        &self.key
    }

    /// True when the shard is read from the cache (no request).
    #[must_use]
    pub fn from_cache(&self) -> bool {
        self.from_cache
    }

    /// The reader (index, header, blocks).
    #[must_use]
    pub fn reader(&self) -> &ShardReader<BlobSource<'a>> {
        &self.reader
    }

    /// The uncompressed, CRC-checked bytes of block `name`: one range request (none from
    /// the cache).
    ///
    /// # Errors
    /// [`PublishError::RemoteRead`] naming the key, the block in its source
    /// ([`wshard::FormatError::BlockCrc`], `BlockNotFound`, ...).
    pub fn read_block(&self, name: &str) -> Result<Vec<u8>, PublishError> {
        self.reader
            .read_block(name)
            .map_err(|source| PublishError::RemoteRead {
                key: self.key.clone(),
                source,
            })
    }
}

/// A dataset version through the cache (it is content-addressed: its name is its hash),
/// checked against its hash either way.
///
/// # Errors
/// [`PublishError::VersionHashMismatch`], [`PublishError::BadVersion`], store errors.
pub fn read_version_cached(
    p: &Publisher,
    cache: Option<&BlobCache>,
    dataset: &DatasetId,
    version: &str,
) -> Result<DatasetVersion, PublishError> {
    let key = p.keys().version(dataset, version);
    let from_cache =
        cached(cache, p.store(), &key, version, None)?.and_then(|path| std::fs::read(path).ok());
    let bytes = match from_cache {
        Some(b) => b,
        None => {
            let bytes = p.version_bytes_at(&key, version)?;
            keep(cache, p.store(), &key, version, &bytes);
            bytes.to_vec()
        }
    };
    parse_version(&key, &bytes)
}

/// The cache's checked copy of blob `sha256` for a read of `key` on `store`, if it has one
/// it may answer with ([`BlobCache::confirm_origin`]: read from there before, or confirmed
/// there by a HEAD). The cache of a read only saves requests: one that cannot be read (a
/// directory that cannot be created, a disk error) is a miss, and the read goes to the
/// store.
///
/// # Errors
/// The store's, when it must confirm the blob and does not answer.
fn cached(
    cache: Option<&BlobCache>,
    store: &Store,
    key: &str,
    sha256: &str,
    size: Option<u64>,
) -> Result<Option<PathBuf>, PublishError> {
    let Some((c, path)) = cache.and_then(|c| c.lookup(sha256, size).ok().flatten().map(|p| (c, p)))
    else {
        return Ok(None);
    };
    Ok(c.confirm_origin(store, key, sha256, &path)?.then_some(path))
}

/// Keep bytes already checked against `sha256`, read from `key` on `store`, in the cache
/// when it can be written (as [`cached`]: a cache that cannot be written does not fail the
/// read).
fn keep(cache: Option<&BlobCache>, store: &Store, key: &str, sha256: &str, bytes: &[u8]) {
    if let Some(c) = cache {
        if c.insert_bytes(sha256, bytes).is_ok() {
            let _ = c.record_origin(sha256, &BlobOrigin::of(store, key));
        }
    }
}

/// The version asked for, else the latest: its hash and content.
///
/// # Errors
/// [`PublishError::DatasetNotFound`] without `latest.json` ([`PublishError::BucketNotFound`]
/// when the bucket is what is missing); as [`read_version_cached`].
pub fn version_or_latest(
    p: &Publisher,
    cache: Option<&BlobCache>,
    dataset: &DatasetId,
    version: Option<&str>,
) -> Result<(String, DatasetVersion), PublishError> {
    let hash = match version {
        Some(v) => v.to_owned(),
        None => p.read_latest(dataset)?.ok_or_else(|| {
            p.store().explain_missing(PublishError::DatasetNotFound {
                dataset: dataset.to_string(),
                key: p.keys().latest(dataset),
            })
        })?,
    };
    let m = read_version_cached(p, cache, dataset, &hash)?;
    Ok((hash, m))
}

/// What a URL names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// One stored object.
    Blob(BlobRef),
    /// A whole episode of a dataset version.
    Episode {
        dataset: DatasetId,
        version: String,
        key: String,
        entry: EpisodeEntry,
    },
}

/// How many keys an error lists at most.
const KNOWN_SHOWN: usize = 8;

fn known(items: impl Iterator<Item = String>) -> String {
    let all: Vec<String> = items.collect();
    let mut shown: Vec<String> = all.iter().take(KNOWN_SHOWN).cloned().collect();
    if all.len() > KNOWN_SHOWN {
        shown.push(format!("... ({} in all)", all.len()));
    }
    if shown.is_empty() {
        "nothing".into()
    } else {
        shown.join(", ")
    }
}

/// Resolve `url` (read with `p`, whose store is the URL's bucket and prefix): an object's
/// key, or a dataset episode or file against the version's episode keys.
///
/// # Errors
/// [`PublishError::NotInVersion`] naming what is missing and what is there; as
/// [`version_or_latest`].
pub fn resolve(
    p: &Publisher,
    cache: Option<&BlobCache>,
    url: &RemoteUrl,
) -> Result<Resolved, PublishError> {
    let (dataset, version, rest) = match url {
        RemoteUrl::Object { key, .. } => return Ok(Resolved::Blob(BlobRef::key(key))),
        RemoteUrl::Dataset {
            dataset,
            version,
            rest,
            ..
        } => (dataset, version, rest),
    };
    let (hash, m) = version_or_latest(p, cache, dataset, version.as_deref())?;
    let missing = |what: String, list: String| PublishError::NotInVersion {
        dataset: dataset.to_string(),
        version: hash.clone(),
        what,
        known: list,
    };
    if let Some(entry) = m.episodes.get(rest.as_str()) {
        return Ok(Resolved::Episode {
            dataset: dataset.clone(),
            version: hash.clone(),
            key: rest.clone(),
            entry: entry.clone(),
        });
    }
    // EPISODE/FILE: the episode key is a key of the version followed by `/`.
    let mut found: Option<(&String, &FileEntry)> = None;
    let mut episode_seen: Option<&String> = None;
    for (k, ep) in &m.episodes {
        let Some(file) = rest
            .strip_prefix(k.as_str())
            .and_then(|r| r.strip_prefix('/'))
        else {
            continue;
        };
        episode_seen = Some(k);
        if let Some(f) = ep.files.get(file) {
            found = Some((k, f));
        }
    }
    if let Some((_, f)) = found {
        return Ok(Resolved::Blob(BlobRef {
            key: p.keys().blob(&f.sha256),
            sha256: Some(f.sha256.clone()),
            size: Some(f.size),
        }));
    }
    Err(match episode_seen {
        Some(k) => missing(
            format!("file {rest:?} of episode {k}"),
            known(m.episodes[k].files.keys().cloned()),
        ),
        None => missing(
            format!("episode {rest:?}"),
            known(m.episodes.keys().cloned()),
        ),
    })
}
