//! Where the store is ([`StoreConfig`]), who we are ([`Credentials`], from the environment
//! only) and how blobs are sent ([`TransferOptions`]).

use std::time::Duration;

use crate::error::PublishError;

/// Access key id variable.
pub const ENV_ACCESS_KEY_ID: &str = "AWS_ACCESS_KEY_ID";
/// Secret key variable.
pub const ENV_SECRET_ACCESS_KEY: &str = "AWS_SECRET_ACCESS_KEY";
/// Session token variable (temporary credentials).
pub const ENV_SESSION_TOKEN: &str = "AWS_SESSION_TOKEN";

/// The region when none is given (any value works for most S3-compatible servers).
pub const DEFAULT_REGION: &str = "us-east-1";

/// Where the store is. Holds no secret: safe to print.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreConfig {
    /// `http(s)://host:port` of an S3-compatible endpoint (path-style requests).
    pub endpoint: String,
    pub bucket: String,
    /// Key prefix every key is put under (`""` or e.g. `fleet/`; a missing trailing `/` is
    /// added).
    pub prefix: String,
    pub region: String,
    /// Allow an `http://` endpoint (no TLS).
    pub allow_http: bool,
}

impl StoreConfig {
    /// Check the settings that cannot work before any request.
    ///
    /// # Errors
    /// [`PublishError::InvalidConfig`] naming the field.
    pub fn validate(&self) -> Result<(), PublishError> {
        let bad = |field, reason: &str| {
            Err(PublishError::InvalidConfig {
                field,
                reason: reason.to_owned(),
            })
        };
        if self.endpoint.is_empty() {
            return bad("endpoint", "empty (give --endpoint or WSHARD_S3_ENDPOINT)");
        }
        let http = self.endpoint.starts_with("http://");
        if !http && !self.endpoint.starts_with("https://") {
            return bad("endpoint", "must start with http:// or https://");
        }
        if http && !self.allow_http {
            return bad(
                "endpoint",
                "an http:// endpoint needs --allow-http (the traffic is not encrypted)",
            );
        }
        if self.bucket.is_empty() {
            return bad("bucket", "empty (give --bucket or WSHARD_S3_BUCKET)");
        }
        if self.prefix.starts_with('/') || self.prefix.split('/').any(|s| s == "..") {
            return bad("prefix", "must be relative, without `..`");
        }
        Ok(())
    }

    /// The prefix as used in keys: empty or ending with one `/`.
    #[must_use]
    pub fn key_prefix(&self) -> String {
        let p = self.prefix.trim_matches('/');
        if p.is_empty() {
            String::new()
        } else {
            format!("{p}/")
        }
    }
}

/// Credentials, read from the environment only. `Debug` never shows the secret or the
/// token; nothing in this crate formats them.
#[derive(Clone)]
pub struct Credentials {
    pub(crate) access_key_id: String,
    pub(crate) secret_access_key: String,
    pub(crate) session_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl Credentials {
    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and optionally `AWS_SESSION_TOKEN`.
    ///
    /// # Errors
    /// [`PublishError::CredentialsMissing`] naming the variable that is unset or empty.
    pub fn from_env() -> Result<Self, PublishError> {
        let get = |name: &'static str| match std::env::var(name) {
            Ok(v) if !v.is_empty() => Ok(v),
            _ => Err(PublishError::CredentialsMissing { missing: name }),
        };
        Ok(Self {
            access_key_id: get(ENV_ACCESS_KEY_ID)?,
            secret_access_key: get(ENV_SECRET_ACCESS_KEY)?,
            session_token: get(ENV_SESSION_TOKEN).ok(),
        })
    }

    /// Explicit credentials (tests, embedding programs).
    #[must_use]
    pub fn new(access_key_id: &str, secret_access_key: &str) -> Self {
        Self {
            access_key_id: access_key_id.to_owned(),
            secret_access_key: secret_access_key.to_owned(),
            session_token: None,
        }
    }

    /// The access key id (not a secret: it names the key).
    #[must_use]
    pub fn access_key_id(&self) -> &str {
        &self.access_key_id
    }
}

/// Default size from which a blob goes up as a multipart upload.
pub const DEFAULT_MULTIPART_THRESHOLD: u64 = 64 << 20;
/// S3's smallest part (every part but the last); s3s-fs enforces it too.
pub const MIN_PART_SIZE: usize = 5 << 20;
/// Default part size.
pub const DEFAULT_PART_SIZE: usize = 16 << 20;

/// How blobs are sent and how long the client waits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransferOptions {
    /// Files of at least this many bytes are sent as multipart uploads.
    pub multipart_threshold: u64,
    /// Bytes per part of a multipart upload.
    pub part_size: usize,
    /// Retries of a failed request (connection errors, 5xx) before giving up.
    pub max_retries: usize,
    /// Connecting to the endpoint gives up after this.
    pub connect_timeout: Duration,
    /// All retries of one request give up after this.
    pub retry_timeout: Duration,
}

impl Default for TransferOptions {
    fn default() -> Self {
        Self {
            multipart_threshold: DEFAULT_MULTIPART_THRESHOLD,
            part_size: DEFAULT_PART_SIZE,
            max_retries: 3,
            connect_timeout: Duration::from_secs(5),
            retry_timeout: Duration::from_secs(30),
        }
    }
}
