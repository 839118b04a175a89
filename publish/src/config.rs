//! Where the store is ([`StoreConfig`]), who we are ([`Credentials`], from the environment
//! or the AWS shared credentials file; GCS and Azure from theirs: [`crate::provider`]) and
//! how blobs are sent ([`TransferOptions`]).

use std::time::Duration;

use crate::credentials_file;
use crate::error::PublishError;
use crate::provider::{CloudCredentials, Provider, GCS_DEFAULT_ENDPOINT};

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
    /// Which API the store speaks (docs/PUBLISH.md "Providers").
    pub provider: Provider,
    /// `http(s)://host:port` of an S3-compatible endpoint (path-style requests); for GCS
    /// empty means `https://storage.googleapis.com`; for Azure
    /// `https://ACCOUNT.blob.core.windows.net` or `http://host:port/ACCOUNT` (an emulator).
    pub endpoint: String,
    /// The bucket (Azure: the container).
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
        let endpoint = self.effective_endpoint();
        if endpoint.is_empty() {
            return bad("endpoint", "empty (give --endpoint or WSHARD_S3_ENDPOINT)");
        }
        let http = endpoint.starts_with("http://");
        if !http && !endpoint.starts_with("https://") {
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

    /// The endpoint requests go to: the one given, else the provider's default (GCS only).
    #[must_use]
    pub fn effective_endpoint(&self) -> &str {
        if self.endpoint.is_empty() && self.provider == Provider::Gcs {
            GCS_DEFAULT_ENDPOINT
        } else {
            &self.endpoint
        }
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

/// Credentials, from the environment or the shared credentials file. `Debug` never shows the secret or the
/// token; nothing in this crate formats them.
#[derive(Clone)]
pub struct Credentials {
    pub(crate) access_key_id: String,
    pub(crate) secret_access_key: String,
    pub(crate) session_token: Option<String>,
    /// GCS or Azure credentials (then the three fields above are empty).
    pub(crate) cloud: Option<CloudCredentials>,
    /// Where they came from (no secret): shown by `wshard doctor`.
    pub(crate) source: String,
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
            .field("provider", &self.provider())
            .field("source", &self.source)
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
            cloud: None,
            source: "the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)".into(),
        })
    }

    /// The environment first ([`Credentials::from_env`]) when `AWS_ACCESS_KEY_ID` or
    /// `AWS_SECRET_ACCESS_KEY` is set; else the profile `AWS_PROFILE` (else `default`) of the
    /// shared credentials file `AWS_SHARED_CREDENTIALS_FILE` (else `~/.aws/credentials`).
    /// The two sources are never mixed.
    ///
    /// # Errors
    /// [`PublishError::CredentialsMissing`] when the variables are unset and there is no
    /// file; [`PublishError::CredentialsFile`] (naming the file, the profile and the key,
    /// never a value) when the file exists but does not give the profile's keys.
    pub fn load() -> Result<Self, PublishError> {
        let set = |name| std::env::var_os(name).is_some_and(|v| !v.is_empty());
        if set(ENV_ACCESS_KEY_ID) || set(ENV_SECRET_ACCESS_KEY) {
            return Self::from_env();
        }
        let missing = PublishError::CredentialsMissing {
            missing: ENV_ACCESS_KEY_ID,
        };
        let Some(path) = credentials_file::credentials_file_path() else {
            return Err(missing);
        };
        let profile = credentials_file::profile_name();
        let Some(keys) = credentials_file::read(&path, &profile)? else {
            return Err(missing);
        };
        let lacks = |key: &str| PublishError::CredentialsFile {
            file: path.clone(),
            profile: profile.clone(),
            reason: format!("{key} missing or empty"),
        };
        Ok(Self {
            access_key_id: keys
                .access_key_id
                .ok_or_else(|| lacks("aws_access_key_id"))?,
            secret_access_key: keys
                .secret_access_key
                .ok_or_else(|| lacks("aws_secret_access_key"))?,
            session_token: keys.session_token,
            cloud: None,
            source: format!("profile {profile} of {}", path.display()),
        })
    }

    /// Give the credentials to a child process as `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN` (removed when there is none): how
    /// `wshard query` hands them to DuckDB without printing them.
    pub fn export_to(&self, cmd: &mut std::process::Command) {
        cmd.env(ENV_ACCESS_KEY_ID, &self.access_key_id)
            .env(ENV_SECRET_ACCESS_KEY, &self.secret_access_key);
        match &self.session_token {
            Some(t) => cmd.env(ENV_SESSION_TOKEN, t),
            None => cmd.env_remove(ENV_SESSION_TOKEN),
        };
    }

    /// Explicit credentials (tests, embedding programs).
    #[must_use]
    pub fn new(access_key_id: &str, secret_access_key: &str) -> Self {
        Self {
            access_key_id: access_key_id.to_owned(),
            secret_access_key: secret_access_key.to_owned(),
            session_token: None,
            cloud: None,
            source: "given by the program".into(),
        }
    }

    /// The credentials of `provider` from its usual places: S3 [`Credentials::load`];
    /// GCS `GOOGLE_SERVICE_ACCOUNT_KEY` (the JSON), else `GOOGLE_APPLICATION_CREDENTIALS`
    /// (a file), else gcloud's `~/.config/gcloud/application_default_credentials.json`;
    /// Azure `AZURE_STORAGE_ACCOUNT_KEY`, else `AZURE_STORAGE_SAS_TOKEN`, the account from
    /// `AZURE_STORAGE_ACCOUNT_NAME`, else from the endpoint.
    ///
    /// # Errors
    /// [`PublishError::CredentialsMissing`] naming the variable to set;
    /// [`PublishError::CredentialsFile`] for a broken AWS shared credentials file.
    pub fn load_for(provider: Provider) -> Result<Self, PublishError> {
        let (cloud, source) = match provider {
            Provider::S3 => return Self::load(),
            Provider::Gcs => CloudCredentials::gcs_from_env()?,
            Provider::Azure => CloudCredentials::azure_from_env()?,
        };
        Ok(Self {
            access_key_id: String::new(),
            secret_access_key: String::new(),
            session_token: None,
            cloud: Some(cloud),
            source,
        })
    }

    /// Explicit Azure credentials: the account (`None`: from the endpoint) and its shared
    /// key (tests, embedding programs).
    #[must_use]
    pub fn azure(account: Option<&str>, key: &str) -> Self {
        Self {
            access_key_id: String::new(),
            secret_access_key: String::new(),
            session_token: None,
            cloud: Some(CloudCredentials::Azure {
                account: account.map(str::to_owned),
                key: Some(key.to_owned()),
                sas: None,
            }),
            source: "given by the program".into(),
        }
    }

    /// Explicit GCS credentials: a service account key file (tests, embedding programs).
    #[must_use]
    pub fn gcs_file(file: &std::path::Path) -> Self {
        Self {
            access_key_id: String::new(),
            secret_access_key: String::new(),
            session_token: None,
            cloud: Some(CloudCredentials::Gcs {
                key: None,
                file: Some(file.to_path_buf()),
            }),
            source: format!("the file {}", file.display()),
        }
    }

    /// The provider these credentials are for.
    #[must_use]
    pub fn provider(&self) -> Provider {
        match &self.cloud {
            None => Provider::S3,
            Some(CloudCredentials::Gcs { .. }) => Provider::Gcs,
            Some(CloudCredentials::Azure { .. }) => Provider::Azure,
        }
    }

    /// Where the credentials came from (the environment, or a profile of a file); no
    /// secret.
    #[must_use]
    pub fn source(&self) -> &str {
        &self.source
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
