//! The object-store flags shared by `wshard publish` and `wshard doctor`, each with an
//! environment variable as fallback (flag first, then the variable, then the default):
//!
//! | flag | variable | default |
//! |---|---|---|
//! | `--endpoint URL` | `WSHARD_S3_ENDPOINT` | required |
//! | `--bucket B` | `WSHARD_S3_BUCKET` | required |
//! | `--prefix P` | `WSHARD_S3_PREFIX` | none |
//! | `--region R` | `WSHARD_S3_REGION` | `us-east-1` |
//! | `--allow-http` | `WSHARD_S3_ALLOW_HTTP` (`1` or `true`) | off |
//!
//! Credentials are never flags: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//! `AWS_SESSION_TOKEN` from the environment.

use wshard_publish::config::DEFAULT_REGION;
use wshard_publish::{Credentials, PublishError, Publisher, Store, StoreConfig, TransferOptions};

/// Endpoint variable.
pub const ENV_ENDPOINT: &str = "WSHARD_S3_ENDPOINT";
/// Bucket variable.
pub const ENV_BUCKET: &str = "WSHARD_S3_BUCKET";
/// Prefix variable.
pub const ENV_PREFIX: &str = "WSHARD_S3_PREFIX";
/// Region variable.
pub const ENV_REGION: &str = "WSHARD_S3_REGION";
/// Allow-http variable.
pub const ENV_ALLOW_HTTP: &str = "WSHARD_S3_ALLOW_HTTP";

/// Where the store is.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct StoreArgs {
    /// S3-compatible endpoint, http(s)://host:port (else $WSHARD_S3_ENDPOINT).
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Bucket (else $WSHARD_S3_BUCKET).
    #[arg(long, value_name = "B")]
    pub bucket: Option<String>,
    /// Key prefix inside the bucket (else $WSHARD_S3_PREFIX; default none).
    #[arg(long, value_name = "P")]
    pub prefix: Option<String>,
    /// Region (else $WSHARD_S3_REGION; default us-east-1).
    #[arg(long, value_name = "R")]
    pub region: Option<String>,
    /// Allow an http:// endpoint (else $WSHARD_S3_ALLOW_HTTP=1).
    #[arg(long)]
    pub allow_http: bool,
    /// Files of at least this many bytes go up as multipart uploads (default 64 MiB).
    #[arg(long, value_name = "BYTES")]
    pub multipart_threshold: Option<u64>,
    /// Part size of multipart uploads (default 16 MiB; S3 wants at least 5 MiB).
    #[arg(long, value_name = "BYTES")]
    pub part_size: Option<usize>,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl StoreArgs {
    /// The store config: flags, then variables, then defaults.
    #[must_use]
    pub fn config(&self) -> StoreConfig {
        let allow_env =
            env(ENV_ALLOW_HTTP).is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"));
        StoreConfig {
            endpoint: self
                .endpoint
                .clone()
                .or_else(|| env(ENV_ENDPOINT))
                .unwrap_or_default(),
            bucket: self
                .bucket
                .clone()
                .or_else(|| env(ENV_BUCKET))
                .unwrap_or_default(),
            prefix: self
                .prefix
                .clone()
                .or_else(|| env(ENV_PREFIX))
                .unwrap_or_default(),
            region: self
                .region
                .clone()
                .or_else(|| env(ENV_REGION))
                .unwrap_or_else(|| DEFAULT_REGION.to_owned()),
            allow_http: self.allow_http || allow_env,
        }
    }

    /// A publisher on the store these settings name: the config checked, the credentials
    /// loaded ([`Credentials::load`]: the environment, else the shared credentials file).
    ///
    /// # Errors
    /// [`PublishError::InvalidConfig`], the credential errors, client errors.
    pub fn publisher(&self) -> Result<Publisher, PublishError> {
        let config = self.config();
        config.validate()?;
        let creds = Credentials::load()?;
        Ok(Publisher::new(Store::new(config, &creds, self.transfer())?))
    }

    /// Transfer options: the defaults with the flags given.
    #[must_use]
    pub fn transfer(&self) -> TransferOptions {
        let mut t = TransferOptions::default();
        if let Some(v) = self.multipart_threshold {
            t.multipart_threshold = v;
        }
        if let Some(v) = self.part_size {
            t.part_size = v;
        }
        t
    }
}
