//! [`Publisher`]: publish the finished episodes of a data directory as a dataset version.
//!
//! 1. Every file is a blob at `blobs/sha256/<hh>/<hash>`, sent by [`BlobSender`]
//!    ([`crate::blob`]): HEAD first; a blob already there (same size) is never sent
//!    again; a missing one is sent (multipart above the threshold, aborted on failure)
//!    and verified: the SHA-256 of a streamed GET.
//! 2. The version manifest (canonical JSON) goes to `versions/<hash>.json` create-only,
//!    and is read back and hashed.
//! 3. `latest.json` is moved by compare-and-swap: create-only when absent, else If-Match
//!    the ETag read. A failed condition is [`PublishError::LatestConflict`]; so is a
//!    read-back that finds another version (a store whose conditional writes are
//!    check-then-write, as s3s-fs's are, can let two writers through: the later one wins
//!    and the earlier learns it here).
//!
//! The same content twice: no blob sent, the same version hash, `latest.json` untouched.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use bytes::Bytes;

pub use crate::blob::BlobAction;
use crate::blob::{Blob, BlobSender, BlobSource, NoHooks};
use crate::catalog;
use crate::episodes::{select, LocalEpisode, Selection};
use crate::error::PublishError;
use crate::layout::{DatasetId, Keys};
use crate::store::{PutCondition, PutOutcome, Store};
use crate::version::{latest_bytes, parse_latest, DatasetVersion, EpisodeEntry, FileEntry};
use wshard::digest::sha256_hex;

/// The `file` of the catalog's [`BlobReport`] (its `episode` is empty).
pub const CATALOG_FILE: &str = "catalog.parquet";

/// One file of the version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobReport {
    pub episode: String,
    /// Relative to the episode directory.
    pub file: String,
    pub sha256: String,
    pub size: u64,
    pub key: String,
    pub action: BlobAction,
}

/// What became of `latest.json`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LatestChange {
    /// There was none: created.
    Created,
    /// Moved from this version.
    Moved { previous: String },
    /// It already pointed at this version.
    Unchanged,
}

/// Blobs and the dataset version stored, `latest.json` not yet moved ([`Publisher::prepare`]).
#[derive(Clone, Debug)]
pub struct PreparedVersion {
    pub dataset: DatasetId,
    /// The version stored (`versions/<version_hash>.json`).
    pub version: DatasetVersion,
    pub version_hash: String,
    pub version_key: String,
    /// `catalog/<version hash>.parquet` of the dataset: the catalog for in-place queries.
    pub catalog_key: String,
    /// The catalog as a blob (`file` [`CATALOG_FILE`], `episode` empty).
    pub catalog: BlobReport,
    /// The version was written by this run (false: it was there already).
    pub version_created: bool,
    pub files: Vec<BlobReport>,
    /// Directories of the data directory not published, and why.
    pub left_out: Vec<(String, String)>,
}

/// A version stored by [`Publisher::store_version`].
pub(crate) struct StoredVersion {
    pub(crate) version: DatasetVersion,
    pub(crate) version_hash: String,
    pub(crate) version_key: String,
    pub(crate) catalog_key: String,
    pub(crate) catalog: BlobReport,
    pub(crate) version_created: bool,
}

impl StoredVersion {
    /// The prepared version of `dataset` with the report of its files.
    pub(crate) fn into_prepared(
        self,
        dataset: &DatasetId,
        files: Vec<BlobReport>,
        left_out: Vec<(String, String)>,
    ) -> PreparedVersion {
        PreparedVersion {
            dataset: dataset.clone(),
            version: self.version,
            version_hash: self.version_hash,
            version_key: self.version_key,
            catalog_key: self.catalog_key,
            catalog: self.catalog,
            version_created: self.version_created,
            files,
            left_out,
        }
    }
}

/// The result of a publish.
#[derive(Clone, Debug)]
pub struct PublishReport {
    pub prepared: PreparedVersion,
    pub latest: LatestChange,
}

impl PublishReport {
    /// Payload bytes sent (blobs: the episodes' files and the catalog; not the version,
    /// the catalog's copy under its version key or the pointer).
    #[must_use]
    pub fn bytes_sent(&self) -> u64 {
        self.prepared
            .files
            .iter()
            .chain(std::iter::once(&self.prepared.catalog))
            .filter(|f| matches!(f.action, BlobAction::Uploaded { .. }))
            .map(|f| f.size)
            .sum()
    }

    /// Payload bytes the store already had.
    #[must_use]
    pub fn bytes_skipped(&self) -> u64 {
        self.prepared
            .files
            .iter()
            .chain(std::iter::once(&self.prepared.catalog))
            .filter(|f| f.action == BlobAction::AlreadyStored)
            .map(|f| f.size)
            .sum()
    }
}

/// What `latest.json` held when read: the start of a compare-and-swap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedLatest {
    /// The version it pointed at; `None` when absent.
    pub version: Option<String>,
    /// Its ETag.
    pub e_tag: Option<String>,
}

/// Publishes to one store.
#[derive(Debug)]
pub struct Publisher {
    store: Store,
    keys: Keys,
}

impl Publisher {
    #[must_use]
    pub fn new(store: Store) -> Self {
        let keys = Keys::new(store.config().key_prefix());
        Self { store, keys }
    }

    #[must_use]
    pub fn store(&self) -> &Store {
        &self.store
    }

    #[must_use]
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// [`Publisher::prepare`] then [`Publisher::commit`].
    ///
    /// # Errors
    /// See both.
    pub fn publish(
        &self,
        data_dir: &Path,
        dataset: &DatasetId,
        episodes: &[String],
    ) -> Result<PublishReport, PublishError> {
        let prepared = self.prepare(data_dir, dataset, episodes)?;
        self.commit(prepared)
    }

    /// Hash the episodes' files, send the blobs the store lacks, verify them, and store the
    /// dataset version (create-only, read back). `latest.json` is not touched.
    ///
    /// # Errors
    /// Episode errors ([`select`]), [`PublishError::NothingToPublish`], typed store errors,
    /// [`PublishError::BlobMismatch`], [`PublishError::VersionHashMismatch`].
    pub fn prepare(
        &self,
        data_dir: &Path,
        dataset: &DatasetId,
        episodes: &[String],
    ) -> Result<PreparedVersion, PublishError> {
        let Selection {
            episodes: local,
            left_out,
        } = select(data_dir, episodes)?;
        if local.is_empty() {
            return Err(PublishError::NothingToPublish {
                data_dir: data_dir.to_path_buf(),
            });
        }
        // The catalog first (local reads only): a bad annotations file stops the run before
        // anything is sent. A blob like the others, named in the hashed part of the version.
        let catalog =
            catalog::to_parquet(&catalog::rows(&dataset.to_string(), &local)?).map_err(|e| {
                PublishError::CatalogWrite {
                    dataset: dataset.to_string(),
                    detail: e.to_string(),
                }
            })?;
        // Credentials, bucket and network first, with the clearest errors.
        self.store.check_bucket(self.keys.prefix())?;
        let (files, entries) = self.send_blobs(&local)?;
        let version = DatasetVersion {
            dataset: dataset.to_string(),
            episodes: entries,
            catalog: None,
        };
        let done: BTreeSet<String> = files.iter().map(|f| f.sha256.clone()).collect();
        let stored = self.store_version(dataset, version, catalog, &done)?;
        Ok(stored.into_prepared(dataset, files, left_out))
    }

    /// Send the blobs of the episodes' files the store lacks (HEAD first; each verified);
    /// returns what happened to each file and the episodes' entries in the version, keyed by
    /// episode directory name.
    ///
    /// # Errors
    /// Typed store errors, [`PublishError::BlobMismatch`], I/O.
    pub fn send_blobs(
        &self,
        local: &[LocalEpisode],
    ) -> Result<(Vec<BlobReport>, BTreeMap<String, EpisodeEntry>), PublishError> {
        let mut files = Vec::new();
        let mut done: BTreeSet<String> = BTreeSet::new();
        let mut entries = BTreeMap::new();
        for ep in local {
            let mut entry = EpisodeEntry {
                status: ep.status.as_str().to_owned(),
                files: BTreeMap::new(),
            };
            for f in &ep.files {
                let key = self.keys.blob(&f.sha256);
                let action = if done.contains(&f.sha256) {
                    BlobAction::AlreadyStored
                } else {
                    let blob = Blob {
                        key: &key,
                        sha256: &f.sha256,
                        size: f.size,
                        source: BlobSource::File(&f.path),
                    };
                    BlobSender::new(&self.store).send(&blob, None, &mut NoHooks)?
                };
                done.insert(f.sha256.clone());
                entry.files.insert(
                    f.rel.clone(),
                    FileEntry {
                        sha256: f.sha256.clone(),
                        size: f.size,
                    },
                );
                files.push(BlobReport {
                    episode: ep.id.clone(),
                    file: f.rel.clone(),
                    sha256: f.sha256.clone(),
                    size: f.size,
                    key,
                    action,
                });
            }
            entries.insert(ep.id.clone(), entry);
        }
        Ok((files, entries))
    }

    /// Store a version: the catalog blob (HEAD first unless in `done`, verified), the
    /// version naming it (create-only, read back and hashed), the catalog under the
    /// version's key (create-only). `latest.json` is not touched.
    pub(crate) fn store_version(
        &self,
        dataset: &DatasetId,
        mut version: DatasetVersion,
        catalog: Vec<u8>,
        done: &BTreeSet<String>,
    ) -> Result<StoredVersion, PublishError> {
        let catalog_hash = sha256_hex(&catalog);
        let catalog_size = catalog.len() as u64;
        let catalog = Bytes::from(catalog);
        let catalog_blob = self.keys.blob(&catalog_hash);
        let action = if done.contains(&catalog_hash) {
            BlobAction::AlreadyStored
        } else {
            let blob = Blob {
                key: &catalog_blob,
                sha256: &catalog_hash,
                size: catalog_size,
                source: BlobSource::Memory(&catalog),
            };
            BlobSender::new(&self.store).send(&blob, None, &mut NoHooks)?
        };
        let catalog_report = BlobReport {
            episode: String::new(),
            file: CATALOG_FILE.to_owned(),
            sha256: catalog_hash.clone(),
            size: catalog_size,
            key: catalog_blob,
            action,
        };
        version.catalog = Some(FileEntry {
            sha256: catalog_hash,
            size: catalog_size,
        });
        let bytes = version
            .canonical_bytes()
            .map_err(|e| PublishError::BadVersion {
                key: dataset.to_string(),
                reason: e.to_string(),
            })?;
        let version_hash = sha256_hex(&bytes);
        let version_key = self.keys.version(dataset, &version_hash);
        let version_created = match self.store.get(&version_key)? {
            Some(_) => false,
            None => matches!(
                self.store
                    .put(&version_key, Bytes::from(bytes), PutCondition::CreateOnly)?,
                PutOutcome::Written { .. }
            ),
        };
        // Read back what the store holds under the name: it must hash to the name.
        self.read_version_at(&version_key, &version_hash)?;
        // The catalog again under the version's name, for engines that glob
        // `datasets/*/*/catalog/*.parquet`: create-only, skipped when there.
        let catalog_key = self.keys.catalog(dataset, &version_hash);
        if self.store.head_size(&catalog_key)? != Some(catalog_size) {
            self.store
                .put(&catalog_key, catalog, PutCondition::CreateOnly)?;
        }
        Ok(StoredVersion {
            version,
            version_hash,
            version_key,
            catalog_key,
            catalog: catalog_report,
            version_created,
        })
    }

    /// Move `latest.json` to the prepared version by compare-and-swap:
    /// [`Publisher::observe_latest`] then [`Publisher::commit_over`].
    ///
    /// # Errors
    /// [`PublishError::LatestConflict`] when another publisher moved it first (retrying
    /// is the caller's choice: [`Publisher::commit`] again reads the new latest and puts
    /// this version on top of it), [`PublishError::BadLatest`], typed store errors.
    pub fn commit(&self, prepared: PreparedVersion) -> Result<PublishReport, PublishError> {
        let observed = self.observe_latest(&prepared.dataset)?;
        self.commit_over(prepared, observed)
    }

    /// Read `latest.json` (its version and ETag): the state a compare-and-swap starts from.
    ///
    /// # Errors
    /// [`PublishError::BadLatest`], typed store errors.
    pub fn observe_latest(&self, dataset: &DatasetId) -> Result<ObservedLatest, PublishError> {
        let key = self.keys.latest(dataset);
        let current = self.read_latest_at(dataset, &key)?;
        Ok(ObservedLatest {
            version: current.as_ref().map(|(h, _)| h.clone()),
            e_tag: current.and_then(|(_, e)| e),
        })
    }

    /// Move `latest.json` from `observed` to the prepared version: create-only when it was
    /// absent, else If-Match its ETag; then read it back.
    ///
    /// # Errors
    /// As [`Publisher::commit`].
    pub fn commit_over(
        &self,
        prepared: PreparedVersion,
        observed: ObservedLatest,
    ) -> Result<PublishReport, PublishError> {
        let ds = prepared.dataset.to_string();
        let key = self.keys.latest(&prepared.dataset);
        let ours = prepared.version_hash.clone();
        let bytes = latest_bytes(&ds, &ours).map_err(|e| PublishError::BadLatest {
            dataset: ds.clone(),
            key: key.clone(),
            reason: e.to_string(),
        })?;
        let (condition, change) = match observed.version {
            None => (PutCondition::CreateOnly, LatestChange::Created),
            Some(hash) if hash == ours => {
                return Ok(PublishReport {
                    prepared,
                    latest: LatestChange::Unchanged,
                })
            }
            Some(previous) => {
                let e_tag = observed.e_tag.ok_or_else(|| PublishError::Store {
                    op: "get",
                    key: key.clone(),
                    detail: "the store gave no ETag: compare-and-swap is impossible".into(),
                })?;
                (
                    PutCondition::IfMatch(e_tag),
                    LatestChange::Moved { previous },
                )
            }
        };
        let outcome = self.store.put(&key, Bytes::from(bytes), condition)?;
        let now = self
            .read_latest_at(&prepared.dataset, &key)?
            .map(|(h, _)| h);
        if outcome == PutOutcome::ConditionFailed || now.as_deref() != Some(ours.as_str()) {
            return Err(PublishError::LatestConflict {
                dataset: ds,
                ours,
                current: now.unwrap_or_else(|| "absent".into()),
            });
        }
        Ok(PublishReport {
            prepared,
            latest: change,
        })
    }

    fn read_latest_at(
        &self,
        dataset: &DatasetId,
        key: &str,
    ) -> Result<Option<(String, Option<String>)>, PublishError> {
        let Some(f) = self.store.get(key)? else {
            return Ok(None);
        };
        let hash = parse_latest(&f.bytes).map_err(|e| PublishError::BadLatest {
            dataset: dataset.to_string(),
            key: key.to_owned(),
            reason: e.to_string(),
        })?;
        Ok(Some((hash, f.e_tag)))
    }

    /// The version `latest.json` points at, `None` when the dataset has none.
    ///
    /// # Errors
    /// [`PublishError::BadLatest`], typed store errors.
    pub fn read_latest(&self, dataset: &DatasetId) -> Result<Option<String>, PublishError> {
        let key = self.keys.latest(dataset);
        Ok(self.read_latest_at(dataset, &key)?.map(|(h, _)| h))
    }

    /// The bytes of the dataset version at `key`, checked to hash to `hash` (its name).
    pub(crate) fn version_bytes_at(&self, key: &str, hash: &str) -> Result<Bytes, PublishError> {
        let f = self.store.get(key)?.ok_or_else(|| {
            self.store.explain_missing(PublishError::Store {
                op: "get",
                key: key.to_owned(),
                detail: "the version manifest is not there".into(),
            })
        })?;
        let actual = sha256_hex(&f.bytes);
        if actual != hash {
            return Err(PublishError::VersionHashMismatch {
                key: key.to_owned(),
                expected: hash.to_owned(),
                actual,
            });
        }
        Ok(f.bytes)
    }

    fn read_version_at(&self, key: &str, hash: &str) -> Result<DatasetVersion, PublishError> {
        parse_version(key, &self.version_bytes_at(key, hash)?)
    }

    /// A dataset version, checked against its hash.
    ///
    /// # Errors
    /// [`PublishError::VersionHashMismatch`], [`PublishError::BadVersion`], store errors.
    pub fn read_version(
        &self,
        dataset: &DatasetId,
        version_hash: &str,
    ) -> Result<DatasetVersion, PublishError> {
        self.read_version_at(&self.keys.version(dataset, version_hash), version_hash)
    }

    /// The latest version of a dataset: its hash and content.
    ///
    /// # Errors
    /// [`PublishError::DatasetNotFound`] when there is no `latest.json`
    /// ([`PublishError::BucketNotFound`] when the bucket is what is missing); as
    /// [`Publisher::read_version`].
    pub fn latest_version(
        &self,
        dataset: &DatasetId,
    ) -> Result<(String, DatasetVersion), PublishError> {
        let hash = self.read_latest(dataset)?.ok_or_else(|| {
            self.store.explain_missing(PublishError::DatasetNotFound {
                dataset: dataset.to_string(),
                key: self.keys.latest(dataset),
            })
        })?;
        let m = self.read_version(dataset, &hash)?;
        Ok((hash, m))
    }
}

/// A dataset version's bytes (already checked against its hash) parsed; `key` names it.
pub(crate) fn parse_version(key: &str, bytes: &[u8]) -> Result<DatasetVersion, PublishError> {
    DatasetVersion::from_bytes(bytes).map_err(|e| PublishError::BadVersion {
        key: key.to_owned(),
        reason: e.to_string(),
    })
}
