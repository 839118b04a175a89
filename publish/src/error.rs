//! [`PublishError`]: every way publishing or checking the store can fail, each naming what
//! was wrong (episode, file, key, dataset) and, where the operator can act, how.
//!
//! No variant ever holds a credential: the store's own error text is kept as `detail`, and
//! object_store never puts the secret key (only the access key id, and only inside a
//! signature-mismatch reply) in it.

use std::path::PathBuf;

use wshard::episode_dir::index::EpisodeStatus;

/// What publishing, reading a dataset or a doctor check can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PublishError {
    /// No access key id or no secret key in the environment.
    #[error(
        "credentials not found: {missing} is not set; {}",
        missing_hint(missing)
    )]
    CredentialsMissing { missing: &'static str },
    /// The shared credentials file exists but does not give this profile's keys. Names the
    /// file, the profile and what is wrong; never a value.
    #[error(
        "AWS credentials file {} (profile {profile}): {reason}; fix the file, pick another \
         profile with AWS_PROFILE, or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
        file.display()
    )]
    CredentialsFile {
        file: PathBuf,
        profile: String,
        reason: String,
    },
    /// The store refused the credentials (unknown access key id or wrong secret key).
    #[error(
        "the store at {endpoint} rejected the credentials (unknown access key id or wrong \
         secret key): check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY ({detail})"
    )]
    CredentialsRejected { endpoint: String, detail: String },
    /// The credentials are valid but may not do this (a bucket policy, an IAM policy):
    /// `op` on `key` (a listing's key is its prefix, empty for the whole bucket).
    #[error(
        "access denied: {op} {} in bucket {bucket}: the bucket or IAM policy forbids it; ask \
         the bucket's admin for read and write on this prefix ({detail})",
        place(key)
    )]
    Forbidden {
        op: &'static str,
        bucket: String,
        key: String,
        detail: String,
    },
    /// The bucket does not exist (or is not visible at this endpoint and region).
    #[error(
        "bucket {bucket} does not exist at {endpoint}: create it, or check --bucket, \
         --endpoint and --region ({detail})"
    )]
    BucketNotFound {
        bucket: String,
        endpoint: String,
        detail: String,
    },
    /// No connection to the endpoint (refused, DNS, timeout, TLS).
    #[error(
        "endpoint {endpoint} unreachable: check the URL, the network, and --allow-http for \
         an http:// endpoint ({detail})"
    )]
    EndpointUnreachable { endpoint: String, detail: String },
    /// The dataset has no `latest.json` (never published, or a misspelled name).
    #[error(
        "dataset {dataset} not found under {key}: it was never published, or the \
         workspace/name or --prefix is misspelled"
    )]
    DatasetNotFound { dataset: String, key: String },
    /// A dataset version read back from the store does not hash to its name (the message
    /// says "manifest", as operators and scripts know it).
    #[error(
        "manifest hash mismatch at {key}: expected sha256 {expected}, the store holds \
         {actual}; the object was altered or truncated (re-publish to rewrite it only after \
         deleting it)"
    )]
    VersionHashMismatch {
        key: String,
        expected: String,
        actual: String,
    },
    /// Another publisher moved `latest.json` between our read and our write: the dataset
    /// version is stored, `latest.json` does not point at it.
    #[error(
        "dataset {dataset}: latest.json changed while publishing (another publisher won the \
         compare-and-swap); version {ours} is stored but not latest; latest is {current}; \
         publish again to put it on top of the new latest"
    )]
    LatestConflict {
        dataset: String,
        ours: String,
        current: String,
    },
    /// `latest.json` exists but is not a pointer this library wrote.
    #[error("dataset {dataset}: {key} is not a valid latest pointer: {reason}")]
    BadLatest {
        dataset: String,
        key: String,
        reason: String,
    },
    /// A dataset version that is not what this library writes.
    #[error("{key}: not a valid version manifest: {reason}")]
    BadVersion { key: String, reason: String },
    /// An episode asked for is still being written (or was aborted).
    #[error(
        "episode {episode} is {status}, not finished: only complete, interrupted or \
         recovered episodes are published (wait for it to be closed, or `wshard close` it)"
    )]
    EpisodeNotFinished {
        episode: String,
        status: EpisodeStatus,
    },
    /// An episode without a status (no manifest status, no index).
    #[error("episode {episode}: its manifest has no status; run `wshard recover` first")]
    EpisodeStatusUnknown { episode: String },
    /// Nothing finished to publish.
    #[error("no finished episode to publish in {}", data_dir.display())]
    NothingToPublish { data_dir: PathBuf },
    /// No such episode directory in the data directory.
    #[error("episode {episode} not found in {data_dir}")]
    EpisodeNotFound { episode: String, data_dir: PathBuf },
    /// The episode directory could not be read.
    #[error("episode {episode}: {source}")]
    EpisodeRead {
        episode: String,
        #[source]
        source: wshard::episode_dir::EpisodeDirError,
    },
    /// A stream manifest could not be read.
    #[error("episode {episode}: {source}")]
    ManifestRead {
        episode: String,
        #[source]
        source: wshard::FormatError,
    },
    /// A local chunk does not hash to what its manifest says: never published.
    #[error(
        "episode {episode}: {file} has sha256 {actual}, its manifest says {expected}: the \
         local copy is corrupt (run `wshard verify`), nothing of this episode was published"
    )]
    LocalChunkMismatch {
        episode: String,
        file: PathBuf,
        expected: String,
        actual: String,
    },
    /// What the store holds under a blob key does not match the file (size or SHA-256).
    #[error("blob {key}: the store holds {found}, expected {expected}")]
    BlobMismatch {
        key: String,
        expected: String,
        found: String,
    },
    /// A local file no longer hashes to what it had when its episode was selected (changed
    /// since, e.g. annotated): nothing of it is kept on the store; select it again.
    #[error(
        "{}: the file changed since it was hashed (sha256 {found}, was {expected}); nothing \
         of it was kept on the store: publish again",
        path.display()
    )]
    LocalFileChanged {
        path: PathBuf,
        expected: String,
        found: String,
    },
    /// A dataset name that is not `workspace/name` of `[a-z0-9_-]`.
    #[error("dataset name {name:?}: {reason} (expected workspace/name, each 1-64 of a-z 0-9 _ -)")]
    InvalidDataset { name: String, reason: &'static str },
    /// A store setting that cannot work.
    #[error("store config: {field}: {reason}")]
    InvalidConfig { field: &'static str, reason: String },
    /// A local file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An episode's annotations file does not parse (the catalog takes its labels from it).
    #[error(
        "episode {episode}: annotations {}: {detail}; fix or remove the file, then publish \
         again",
        path.display()
    )]
    AnnotationsRead {
        episode: String,
        path: PathBuf,
        detail: String,
    },
    /// `wshard query` found no catalog to query.
    #[error(
        "no catalog found for {what} under {key}: publish the dataset first (`wshard publish \
         --dataset WS/NAME`; versions published before the catalog existed have none)"
    )]
    CatalogNotFound { what: String, key: String },
    /// The catalog table could not be written as Parquet.
    #[error("catalog of dataset {dataset}: Parquet writer: {detail}")]
    CatalogWrite { dataset: String, detail: String },
    /// Appending an episode whose file is not on the store: blobs are sent (and verified)
    /// before an episode is appended; nothing of the append was written.
    #[error(
        "episode {episode}: {file} is not on the store at {key} ({found}): send the \
         episode's blobs first (`wshard publish --append` does), nothing was appended"
    )]
    BlobNotStored {
        episode: String,
        file: String,
        key: String,
        found: String,
    },
    /// The catalog of a stored version could not be read back (appending merges it).
    #[error("catalog {key}: cannot read it back: {detail}")]
    CatalogRead { key: String, detail: String },
    /// The store no longer knows this multipart upload (S3 `NoSuchUpload`: expired by a
    /// lifecycle rule, aborted, lost by the server); its parts are gone: start a new upload.
    #[error(
        "multipart upload {upload_id} of {key} is gone from the store (expired, aborted or \
         lost): start a new upload of the blob ({detail})"
    )]
    UploadGone {
        key: String,
        upload_id: String,
        detail: String,
    },
    /// The store answered with a server error (5xx, throttling) or the request broke off
    /// mid-way after the client's retries: retry later.
    #[error("store unavailable: {op} {key}: {detail}; retry later")]
    StoreUnavailable {
        op: &'static str,
        key: String,
        detail: String,
    },
    /// Any other store failure, with the operation and the key.
    #[error("store: {op} {key}: {detail}")]
    Store {
        op: &'static str,
        key: String,
        detail: String,
    },
    /// An `s3://` URL that is not one of the forms `wshard` reads.
    #[error(
        "{url}: {reason} (expected s3://BUCKET/KEY or \
         s3://BUCKET/[PREFIX/]datasets/WS/NAME[@VERSION]/EPISODE[/FILE])"
    )]
    InvalidUrl { url: String, reason: String },
    /// A stored shard read through range requests is not a valid shard, or one of its
    /// blocks is corrupt (CRC, codec): the key, and the block in `source`.
    #[error("{key}: {source}")]
    RemoteRead {
        key: String,
        #[source]
        source: wshard::FormatError,
    },
    /// A dataset URL names an episode or a file the version does not hold.
    #[error("dataset {dataset} version {version}: {what} not found; it holds: {known}")]
    NotInVersion {
        dataset: String,
        version: String,
        what: String,
        known: String,
    },
    /// No directory for the local blob cache.
    #[error("no cache directory: set WSHARD_CACHE_DIR (or XDG_CACHE_HOME or HOME)")]
    CacheDirUnknown,
    /// A file name in a dataset version that cannot be written under a directory.
    #[error("episode {episode}: file name {file:?} is not a relative path inside the episode")]
    UnsafePath { episode: String, file: String },
}

/// A key as a message names it: quoted, or the bucket's top level for the empty key (a
/// listing without a prefix).
fn place(key: &str) -> String {
    if key.is_empty() {
        "at the top level of the bucket (no prefix)".into()
    } else {
        format!("of `{key}`")
    }
}

/// What to set when the variable `missing` is unset (per provider).
fn missing_hint(missing: &str) -> &'static str {
    if missing.starts_with("AZURE_") {
        "set AZURE_STORAGE_ACCOUNT_KEY (or AZURE_STORAGE_SAS_TOKEN), and \
         AZURE_STORAGE_ACCOUNT_NAME unless the endpoint names the account, in the environment \
         of this command"
    } else if missing.starts_with("GOOGLE_") {
        "set GOOGLE_APPLICATION_CREDENTIALS to a service account key file (or \
         GOOGLE_SERVICE_ACCOUNT_KEY to its JSON), or run `gcloud auth application-default \
         login` (~/.config/gcloud/application_default_credentials.json)"
    } else {
        "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for \
         temporary credentials) in the environment of this command, or put the profile \
         (AWS_PROFILE, else default) in the shared credentials file \
         (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials)"
    }
}

impl PublishError {
    /// Whether retrying soon may succeed by itself: the endpoint unreachable, the store
    /// unavailable (5xx, throttling, a request broken off), another publisher moving
    /// `latest.json` first. Everything else needs a change before a retry can work
    /// (credentials, permissions, bucket, settings, local files, corrupt data) or a
    /// different next step ([`PublishError::UploadGone`]: a new upload).
    #[must_use]
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::EndpointUnreachable { .. }
                | Self::StoreUnavailable { .. }
                | Self::LatestConflict { .. }
        )
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}
