//! [`Store`]: a blocking handle on one bucket of an object store (S3, GCS or Azure: the
//! config's [`crate::Provider`]). It owns a one-thread tokio runtime and the `object_store`
//! client of the provider (`store/build.rs`), and maps the client's errors to the typed
//! [`PublishError`]s (`store/classify.rs`).

use std::sync::Arc;

use bytes::Bytes;
use object_store::multipart::MultipartStore;
use object_store::path::Path;
use object_store::{ObjectStore, PutMode, PutOptions, PutPayload, UpdateVersion};
use tokio::runtime::Runtime;

use crate::config::{Credentials, StoreConfig, TransferOptions, MIN_PART_SIZE};
use crate::error::PublishError;
use crate::provider::Provider;

mod build;
mod classify;
mod multipart;

pub use build::azure_account_of;
pub use multipart::{AZURE_UPLOAD_ID, OP_COMPLETE_MULTIPART, OP_UPLOAD_PART};

/// When a put may write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PutCondition {
    /// Always (overwrites).
    Always,
    /// Only when the key is absent (`If-None-Match: *`).
    CreateOnly,
    /// Only over the object with this revision (`If-Match` with the ETag on S3 and Azure,
    /// `x-goog-if-generation-match` with the generation on GCS): the token [`Store::get`]
    /// or a written [`PutOutcome`] gave.
    IfMatch(String),
}

/// How a conditional put ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PutOutcome {
    /// Written; the new revision token (ETag; GCS: generation) when the store gave one.
    Written { e_tag: Option<String> },
    /// The condition did not hold (the key exists for a create; another ETag for an update).
    ConditionFailed,
}

/// An object read whole, with its ETag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetched {
    pub bytes: Bytes,
    /// The revision token [`PutCondition::IfMatch`] takes: the ETag on S3 and Azure, the
    /// object generation on GCS (its conditional writes match generations, not ETags).
    pub e_tag: Option<String>,
}

/// A blocking handle on one bucket.
pub struct Store {
    pub(crate) rt: Runtime,
    pub(crate) objects: Arc<dyn ObjectStore>,
    pub(crate) multipart: Arc<dyn MultipartStore>,
    config: StoreConfig,
    options: TransferOptions,
    /// Read requests and bytes (GET, range GET, HEAD): `crate::read_stats`.
    pub(crate) reads: crate::read_stats::ReadCounter,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the client: its builder holds the credentials.
        f.debug_struct("Store")
            .field("config", &self.config)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Build the client (no request is made).
    ///
    /// # Errors
    /// [`PublishError::InvalidConfig`] for settings that cannot work; I/O when the runtime
    /// cannot start.
    pub fn new(
        config: StoreConfig,
        credentials: &Credentials,
        options: TransferOptions,
    ) -> Result<Self, PublishError> {
        config.validate()?;
        if options.part_size < MIN_PART_SIZE {
            return Err(PublishError::InvalidConfig {
                field: "part_size",
                reason: format!(
                    "{} bytes is below S3's smallest part, {MIN_PART_SIZE}",
                    options.part_size
                ),
            });
        }
        let clients = build::build(&config, credentials, &options)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| PublishError::io("tokio runtime", e))?;
        Ok(Self {
            rt,
            objects: clients.objects,
            multipart: clients.multipart,
            config,
            options,
            reads: crate::read_stats::ReadCounter::default(),
        })
    }

    #[must_use]
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    #[must_use]
    pub fn options(&self) -> &TransferOptions {
        &self.options
    }

    /// Check that the bucket answers a listing of the prefix (credentials, bucket, network).
    ///
    /// # Errors
    /// The typed error of what failed.
    pub fn check_bucket(&self, prefix: &str) -> Result<(), PublishError> {
        let trimmed = prefix.trim_end_matches('/');
        let p = Path::from(trimmed);
        let at = if trimmed.is_empty() { None } else { Some(&p) };
        self.rt
            .block_on(self.objects.list_with_delimiter(at))
            .map(|_| ())
            .map_err(|e| self.classify("list", prefix, e))
    }

    /// The names of the "directories" right under `dir` (a key prefix ending with `/`):
    /// `a/` for every key `dir` + `a/...`, sorted.
    ///
    /// # Errors
    /// Typed store errors.
    pub fn list_dirs(&self, dir: &str) -> Result<Vec<String>, PublishError> {
        let p = Path::from(dir.trim_end_matches('/'));
        let listing = self
            .rt
            .block_on(self.objects.list_with_delimiter(Some(&p)))
            .map_err(|e| self.classify("list", dir, e))?;
        let mut names: Vec<String> = listing
            .common_prefixes
            .iter()
            .filter_map(|c| c.filename().map(str::to_owned))
            .collect();
        names.sort();
        Ok(names)
    }

    /// The size of `key`, `None` when absent.
    ///
    /// # Errors
    /// Typed store errors; [`PublishError::BucketNotFound`] when the store says so.
    pub fn head_size(&self, key: &str) -> Result<Option<u64>, PublishError> {
        self.reads.request();
        match self.rt.block_on(self.objects.head(&Path::from(key))) {
            Ok(meta) => Ok(Some(meta.size)),
            Err(e @ object_store::Error::NotFound { .. }) => match self.bucket_missing_in(&e) {
                Some(missing) => Err(missing),
                None => Ok(None),
            },
            Err(e) => Err(self.classify("head", key, e)),
        }
    }

    /// The whole object and its ETag, `None` when absent.
    ///
    /// # Errors
    /// Typed store errors; [`PublishError::BucketNotFound`] when the reply says the bucket
    /// is missing (not every store does: [`Store::explain_missing`]).
    pub fn get(&self, key: &str) -> Result<Option<Fetched>, PublishError> {
        let path = Path::from(key);
        self.reads.request();
        let gcs = self.config.provider == Provider::Gcs;
        let res = self.rt.block_on(async {
            let got = self.objects.get(&path).await?;
            let e_tag = if gcs {
                got.meta.version.clone()
            } else {
                got.meta.e_tag.clone()
            };
            let bytes = got.bytes().await?;
            self.reads.bytes(bytes.len() as u64);
            Ok::<_, object_store::Error>(Fetched { bytes, e_tag })
        });
        match res {
            Ok(f) => Ok(Some(f)),
            Err(e @ object_store::Error::NotFound { .. }) => match self.bucket_missing_in(&e) {
                Some(missing) => Err(missing),
                None => Ok(None),
            },
            Err(e) => Err(self.classify("get", key, e)),
        }
    }

    /// SHA-256 (hex) and size of what the store holds at `key`, streamed (never held whole).
    ///
    /// # Errors
    /// Typed store errors; a missing key is [`PublishError::Store`].
    pub fn hash_remote(&self, key: &str) -> Result<(String, u64), PublishError> {
        // Written nowhere: a sink cannot fail, so no I/O error names this path.
        self.download_to(key, &mut std::io::sink(), std::path::Path::new(key))
    }

    /// Put `bytes` at `key` under `condition`.
    ///
    /// # Errors
    /// Typed store errors; a failed condition is [`PutOutcome::ConditionFailed`].
    pub fn put(
        &self,
        key: &str,
        bytes: Bytes,
        condition: PutCondition,
    ) -> Result<PutOutcome, PublishError> {
        let mode = match condition {
            PutCondition::Always => PutMode::Overwrite,
            PutCondition::CreateOnly => PutMode::Create,
            PutCondition::IfMatch(token) if self.config.provider == Provider::Gcs => {
                PutMode::Update(UpdateVersion {
                    e_tag: None,
                    version: Some(token),
                })
            }
            PutCondition::IfMatch(e_tag) => PutMode::Update(UpdateVersion {
                e_tag: Some(e_tag),
                version: None,
            }),
        };
        let opts = PutOptions {
            mode,
            ..PutOptions::default()
        };
        let res = self.rt.block_on(self.objects.put_opts(
            &Path::from(key),
            PutPayload::from(bytes),
            opts,
        ));
        match res {
            Ok(r) if self.config.provider == Provider::Gcs => {
                Ok(PutOutcome::Written { e_tag: r.version })
            }
            Ok(r) => Ok(PutOutcome::Written { e_tag: r.e_tag }),
            Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. },
            ) => Ok(PutOutcome::ConditionFailed),
            Err(e) => Err(self.classify("put", key, e)),
        }
    }

    /// Delete `key` (absent is fine).
    ///
    /// # Errors
    /// Typed store errors.
    pub fn delete(&self, key: &str) -> Result<(), PublishError> {
        match self.rt.block_on(self.objects.delete(&Path::from(key))) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.classify("delete", key, e)),
        }
    }
}
