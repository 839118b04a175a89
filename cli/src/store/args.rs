//! The object-store flags shared by `wshard publish` and `wshard doctor`, each with an
//! environment variable as fallback (flag first, then the variable, then the default):
//!
//! | flag | variable | default |
//! |---|---|---|
//! | `--provider P` | `WSHARD_STORE_PROVIDER` | `s3` (or `gcs`, `azure`) |
//! | `--endpoint URL` | `WSHARD_S3_ENDPOINT` | required (GCS: storage.googleapis.com) |
//! | `--bucket B` | `WSHARD_S3_BUCKET` | required; `s3://B`, `gs://B`, `az://C` also name the provider |
//! | `--prefix P` | `WSHARD_S3_PREFIX` | none |
//! | `--region R` | `WSHARD_S3_REGION` | `us-east-1` |
//! | `--allow-http` | `WSHARD_S3_ALLOW_HTTP` (`1` or `true`) | off |
//!
//! Credentials are never flags: each provider's usual environment variables and files
//! (`Credentials::load_for`, docs/PUBLISH.md "Providers").

use wshard_publish::config::DEFAULT_REGION;
use wshard_publish::{
    Credentials, Provider, PublishError, Publisher, Store, StoreConfig, TransferOptions,
};

/// Provider variable.
pub const ENV_PROVIDER: &str = "WSHARD_STORE_PROVIDER";

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
    /// Object-store API: s3 (default), gcs or azure (else $WSHARD_STORE_PROVIDER).
    #[arg(long, value_name = "P")]
    pub provider: Option<String>,
    /// S3-compatible endpoint, http(s)://host:port (else $WSHARD_S3_ENDPOINT).
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Bucket, Azure container (else $WSHARD_S3_BUCKET); s3://B, gs://B or az://C also
    /// set the provider.
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
    ///
    /// # Errors
    /// [`PublishError::InvalidConfig`] for an unknown provider, or a bucket URL whose
    /// scheme names another provider than `--provider`.
    pub fn config(&self) -> Result<StoreConfig, PublishError> {
        let allow_env =
            env(ENV_ALLOW_HTTP).is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"));
        let named = self
            .provider
            .clone()
            .or_else(|| env(ENV_PROVIDER))
            .map(|p| p.parse::<Provider>())
            .transpose()?;
        let bucket = self
            .bucket
            .clone()
            .or_else(|| env(ENV_BUCKET))
            .unwrap_or_default();
        let (provider, bucket) = match bucket.split_once("://") {
            Some((scheme, rest)) => {
                let by_scheme =
                    Provider::from_scheme(scheme).ok_or_else(|| PublishError::InvalidConfig {
                        field: "bucket",
                        reason: format!("{scheme}:// is not s3://, gs:// or az://"),
                    })?;
                if named.is_some_and(|n| n != by_scheme) {
                    return Err(PublishError::InvalidConfig {
                        field: "bucket",
                        reason: format!(
                            "{scheme}:// is {by_scheme}, the provider given is {}",
                            named.unwrap_or_default()
                        ),
                    });
                }
                (by_scheme, rest.trim_end_matches('/').to_owned())
            }
            None => (named.unwrap_or_default(), bucket),
        };
        Ok(StoreConfig {
            provider,
            endpoint: self
                .endpoint
                .clone()
                .or_else(|| env(ENV_ENDPOINT))
                .unwrap_or_default(),
            bucket,
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
        })
    }

    /// A publisher on the store these settings name: the config checked, the credentials
    /// loaded ([`Credentials::load`]: the environment, else the shared credentials file).
    ///
    /// # Errors
    /// [`PublishError::InvalidConfig`], the credential errors, client errors.
    pub fn publisher(&self) -> Result<Publisher, PublishError> {
        let config = self.config()?;
        config.validate()?;
        let creds = Credentials::load_for(config.provider)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(provider: Option<&str>, bucket: &str) -> StoreArgs {
        StoreArgs {
            provider: provider.map(str::to_owned),
            endpoint: Some("http://127.0.0.1:1".into()),
            bucket: Some(bucket.to_owned()),
            ..StoreArgs::default()
        }
    }

    #[test]
    fn provider_from_flag_and_bucket_url() {
        let c = args(Some("azure"), "fleet").config().expect("config");
        assert_eq!((c.provider, c.bucket.as_str()), (Provider::Azure, "fleet"));
        let c = args(None, "gs://fleet/").config().expect("config");
        assert_eq!((c.provider, c.bucket.as_str()), (Provider::Gcs, "fleet"));
        let c = args(Some("azure"), "az://box").config().expect("config");
        assert_eq!((c.provider, c.bucket.as_str()), (Provider::Azure, "box"));
        let c = args(Some("s3"), "s3://b").config().expect("config");
        assert_eq!((c.provider, c.bucket.as_str()), (Provider::S3, "b"));
        for (p, b) in [
            (Some("gcs"), "az://box"),
            (Some("nope"), "b"),
            (None, "ftp://b"),
        ] {
            let e = args(p, b).config().expect_err(b);
            assert!(
                matches!(e, PublishError::InvalidConfig { .. }),
                "{p:?} {b}: {e}"
            );
        }
    }
}
