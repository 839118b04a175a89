//! [`Store`]: a blocking handle on one bucket of an S3-compatible store. It owns a
//! one-thread tokio runtime and an `object_store` S3 client, and maps the client's errors
//! to the typed [`PublishError`]s.

use std::fs::File;
use std::io::Read;
use std::path::Path as FsPath;

use bytes::Bytes;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::client::{HttpError, HttpErrorKind};
use object_store::path::Path;
use object_store::{
    ClientOptions, ObjectStore, PutMode, PutOptions, PutPayload, RetryConfig, UpdateVersion,
};
use tokio::runtime::Runtime;

use crate::config::{Credentials, StoreConfig, TransferOptions, MIN_PART_SIZE};
use crate::error::PublishError;

mod multipart;

/// S3 error codes (and statuses) that mean the credentials are wrong; `NotSignedUp` is what
/// s3s answers for an unknown access key id.
const CREDENTIAL_CODES: &[&str] = &[
    "SignatureDoesNotMatch",
    "InvalidAccessKeyId",
    "NotSignedUp",
    "InvalidToken",
    "ExpiredToken",
    "401 Unauthorized",
];
/// Access denied with valid credentials.
const FORBIDDEN_TEXT: &[&str] = &["AccessDenied", "403 Forbidden"];
/// No connection: reqwest's words for a request that never got an answer.
const UNREACHABLE_TEXT: &[&str] = &[
    "error sending request",
    "Connection refused",
    "dns error",
    "error trying to connect",
];

/// A reply that may go away by itself: a server error, throttling, a request timeout
/// (object_store's text of a final non-2xx status), or a 200 whose body is an S3 error.
const UNAVAILABLE_TEXT: &[&str] = &[
    "non-2xx status code: 5",
    "non-2xx status code: 429",
    "non-2xx status code: 408",
    "Server returned error response",
    "SlowDown",
];

/// When a put may write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PutCondition {
    /// Always (overwrites).
    Always,
    /// Only when the key is absent (`If-None-Match: *`).
    CreateOnly,
    /// Only over the object with this ETag (`If-Match`).
    IfMatch(String),
}

/// How a conditional put ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PutOutcome {
    /// Written; the new ETag when the store gave one.
    Written { e_tag: Option<String> },
    /// The condition did not hold (the key exists for a create; another ETag for an update).
    ConditionFailed,
}

/// An object read whole, with its ETag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetched {
    pub bytes: Bytes,
    pub e_tag: Option<String>,
}

/// A blocking handle on one bucket.
pub struct Store {
    pub(crate) rt: Runtime,
    pub(crate) s3: AmazonS3,
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

fn chain_has_connect_error(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(http) = err.downcast_ref::<HttpError>() {
            if matches!(http.kind(), HttpErrorKind::Connect | HttpErrorKind::Timeout) {
                return true;
            }
        }
        cur = err.source();
    }
    false
}

fn chain_has_broken_request(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(http) = err.downcast_ref::<HttpError>() {
            if matches!(
                http.kind(),
                HttpErrorKind::Request | HttpErrorKind::Timeout | HttpErrorKind::Interrupted
            ) {
                return true;
            }
        }
        cur = err.source();
    }
    false
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
        let client = ClientOptions::new()
            .with_allow_http(config.allow_http)
            .with_connect_timeout(options.connect_timeout);
        let retry = RetryConfig {
            max_retries: options.max_retries,
            retry_timeout: options.retry_timeout,
            ..RetryConfig::default()
        };
        let mut builder = AmazonS3Builder::new()
            .with_endpoint(&config.endpoint)
            .with_bucket_name(&config.bucket)
            .with_region(&config.region)
            .with_allow_http(config.allow_http)
            .with_virtual_hosted_style_request(false)
            .with_access_key_id(&credentials.access_key_id)
            .with_secret_access_key(&credentials.secret_access_key)
            .with_client_options(client)
            .with_retry(retry);
        if let Some(token) = &credentials.session_token {
            builder = builder.with_token(token);
        }
        // The builder's own error text can quote settings, never keys; keep only its kind.
        let s3 = builder.build().map_err(|e| PublishError::InvalidConfig {
            field: "store",
            reason: e.to_string(),
        })?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| PublishError::io("tokio runtime", e))?;
        Ok(Self {
            rt,
            s3,
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

    /// Map a client error on `op` of `key` to a typed error. object_store wraps some
    /// errors (listings, multipart) as `Generic`, so the S3 error code and status in the
    /// text decide too.
    pub(crate) fn classify(
        &self,
        op: &'static str,
        key: &str,
        e: object_store::Error,
    ) -> PublishError {
        let detail = e.to_string();
        let endpoint = self.config.endpoint.clone();
        let bucket = self.config.bucket.clone();
        let has = |needles: &[&str]| needles.iter().any(|n| detail.contains(n));
        if chain_has_connect_error(&e) || has(UNREACHABLE_TEXT) {
            return PublishError::EndpointUnreachable { endpoint, detail };
        }
        if has(&["NoSuchBucket"]) {
            return PublishError::BucketNotFound {
                bucket,
                endpoint,
                detail,
            };
        }
        if matches!(e, object_store::Error::Unauthenticated { .. }) || has(CREDENTIAL_CODES) {
            return PublishError::CredentialsRejected { endpoint, detail };
        }
        if matches!(e, object_store::Error::PermissionDenied { .. }) || has(FORBIDDEN_TEXT) {
            return PublishError::Forbidden {
                bucket,
                key: key.to_owned(),
                detail,
            };
        }
        if chain_has_broken_request(&e) || has(UNAVAILABLE_TEXT) {
            return PublishError::StoreUnavailable {
                op,
                key: key.to_owned(),
                detail,
            };
        }
        PublishError::Store {
            op,
            key: key.to_owned(),
            detail,
        }
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
            .block_on(self.s3.list_with_delimiter(at))
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
            .block_on(self.s3.list_with_delimiter(Some(&p)))
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
    /// Typed store errors.
    pub fn head_size(&self, key: &str) -> Result<Option<u64>, PublishError> {
        self.reads.request();
        match self.rt.block_on(self.s3.head(&Path::from(key))) {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.classify("head", key, e)),
        }
    }

    /// The whole object and its ETag, `None` when absent.
    ///
    /// # Errors
    /// Typed store errors.
    pub fn get(&self, key: &str) -> Result<Option<Fetched>, PublishError> {
        let path = Path::from(key);
        self.reads.request();
        let res = self.rt.block_on(async {
            let got = self.s3.get(&path).await?;
            let e_tag = got.meta.e_tag.clone();
            let bytes = got.bytes().await?;
            self.reads.bytes(bytes.len() as u64);
            Ok::<_, object_store::Error>(Fetched { bytes, e_tag })
        });
        match res {
            Ok(f) => Ok(Some(f)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
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
            PutCondition::IfMatch(e_tag) => PutMode::Update(UpdateVersion {
                e_tag: Some(e_tag),
                version: None,
            }),
        };
        let opts = PutOptions {
            mode,
            ..PutOptions::default()
        };
        let res = self.rt.block_on(self.s3.put_opts(
            &Path::from(key),
            PutPayload::from(bytes),
            opts,
        ));
        match res {
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
        match self.rt.block_on(self.s3.delete(&Path::from(key))) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.classify("delete", key, e)),
        }
    }

    /// Send the file at `path` (`size` bytes) to `key`: one put below the multipart
    /// threshold, else a multipart upload of `part_size` parts (aborted on failure).
    /// Returns true when multipart was used.
    ///
    /// # Errors
    /// I/O with the path, typed store errors.
    pub fn upload_file(&self, key: &str, path: &FsPath, size: u64) -> Result<bool, PublishError> {
        let store_path = Path::from(key);
        let mut file = File::open(path).map_err(|e| PublishError::io(path, e))?;
        if size < self.options.multipart_threshold {
            let mut buf = Vec::new();
            file.read_to_end(&mut buf)
                .map_err(|e| PublishError::io(path, e))?;
            self.rt
                .block_on(self.s3.put(&store_path, PutPayload::from(buf)))
                .map_err(|e| self.classify("put", key, e))?;
            return Ok(false);
        }
        let part_size = self.options.part_size;
        self.rt.block_on(async {
            let mut upload = self
                .s3
                .put_multipart(&store_path)
                .await
                .map_err(|e| self.classify("create multipart", key, e))?;
            let sent: Result<(), PublishError> = async {
                loop {
                    let mut part = Vec::with_capacity(part_size);
                    (&mut file)
                        .take(part_size as u64)
                        .read_to_end(&mut part)
                        .map_err(|e| PublishError::io(path, e))?;
                    if part.is_empty() {
                        break;
                    }
                    upload
                        .put_part(PutPayload::from(part))
                        .await
                        .map_err(|e| self.classify("upload part", key, e))?;
                }
                upload
                    .complete()
                    .await
                    .map(|_| ())
                    .map_err(|e| self.classify("complete multipart", key, e))
            }
            .await;
            if sent.is_err() {
                // Best effort: the store also expires abandoned uploads by its lifecycle rule.
                let _ = upload.abort().await;
            }
            sent
        })?;
        Ok(true)
    }
}
