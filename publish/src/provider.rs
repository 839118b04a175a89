//! [`Provider`]: which object-store API the store speaks (S3, Google Cloud Storage, Azure
//! Blob Storage), and the credentials each one takes from its usual environment
//! (`CloudCredentials`, crate-private).
//!
//! | provider | endpoint | bucket | credentials |
//! |---|---|---|---|
//! | `s3` | `http(s)://host:port` (path-style) | bucket | `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`, else the AWS shared credentials file |
//! | `gcs` | default `https://storage.googleapis.com` | bucket | `GOOGLE_SERVICE_ACCOUNT_KEY` (JSON), else `GOOGLE_APPLICATION_CREDENTIALS` (a file), else the application default credentials file of gcloud |
//! | `azure` | `https://ACCOUNT.blob.core.windows.net` or `http://host:port/ACCOUNT` | container | `AZURE_STORAGE_ACCOUNT_KEY` or `AZURE_STORAGE_SAS_TOKEN`; account from `AZURE_STORAGE_ACCOUNT_NAME`, else from the endpoint |

use std::path::PathBuf;

use crate::error::PublishError;

/// Which object-store API the store speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Provider {
    /// Amazon S3 and S3-compatible servers (MinIO, s3s-fs, Ceph): the default.
    #[default]
    S3,
    /// Google Cloud Storage.
    Gcs,
    /// Azure Blob Storage (the bucket is the container).
    Azure,
}

/// The names `--provider` and `WSHARD_STORE_PROVIDER` accept.
pub const PROVIDER_NAMES: &[&str] = &["s3", "gcs", "azure"];

/// The GCS endpoint when none is given.
pub const GCS_DEFAULT_ENDPOINT: &str = "https://storage.googleapis.com";

/// Azure: the storage account name.
pub const ENV_AZURE_ACCOUNT: &str = "AZURE_STORAGE_ACCOUNT_NAME";
/// Azure: the account's shared key (base64).
pub const ENV_AZURE_KEY: &str = "AZURE_STORAGE_ACCOUNT_KEY";
/// Azure: a SAS token (query string, with or without its leading `?`).
pub const ENV_AZURE_SAS: &str = "AZURE_STORAGE_SAS_TOKEN";
/// GCS: a service account key, the JSON text itself.
pub const ENV_GCS_KEY: &str = "GOOGLE_SERVICE_ACCOUNT_KEY";
/// GCS: the path of a service account key file (or of application default credentials).
pub const ENV_GCS_FILE: &str = "GOOGLE_APPLICATION_CREDENTIALS";

impl Provider {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::S3 => "s3",
            Self::Gcs => "gcs",
            Self::Azure => "azure",
        }
    }

    /// The provider of a URL scheme: `s3://`, `gs://` (GCS), `az://` / `azure://` (Azure).
    #[must_use]
    pub fn from_scheme(scheme: &str) -> Option<Self> {
        match scheme {
            "s3" => Some(Self::S3),
            "gs" => Some(Self::Gcs),
            "az" | "azure" => Some(Self::Azure),
            _ => None,
        }
    }
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Provider {
    type Err = PublishError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "s3" => Ok(Self::S3),
            "gcs" | "gs" | "gcp" => Ok(Self::Gcs),
            "azure" | "az" => Ok(Self::Azure),
            _ => Err(PublishError::InvalidConfig {
                field: "provider",
                reason: format!("{s:?} is not one of {}", PROVIDER_NAMES.join(", ")),
            }),
        }
    }
}

/// The credentials of GCS or Azure (S3's are the access key fields of
/// [`crate::Credentials`]). Never printed.
#[derive(Clone)]
pub(crate) enum CloudCredentials {
    Azure {
        /// `None`: taken from the endpoint.
        account: Option<String>,
        key: Option<String>,
        sas: Option<String>,
    },
    Gcs {
        /// The service account key JSON.
        key: Option<String>,
        /// A service account key file, or application default credentials.
        file: Option<PathBuf>,
    },
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The gcloud application default credentials file (`gcloud auth application-default
/// login`), where object_store looks when nothing else is given.
fn gcloud_adc_file() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    let p = PathBuf::from(home).join(".config/gcloud/application_default_credentials.json");
    p.is_file().then_some(p)
}

impl CloudCredentials {
    /// Azure from the environment; the source description.
    pub(crate) fn azure_from_env() -> Result<(Self, String), PublishError> {
        let key = env(ENV_AZURE_KEY);
        let sas = env(ENV_AZURE_SAS);
        if key.is_none() && sas.is_none() {
            return Err(PublishError::CredentialsMissing {
                missing: ENV_AZURE_KEY,
            });
        }
        let what = if key.is_some() {
            ENV_AZURE_KEY
        } else {
            ENV_AZURE_SAS
        };
        let account = env(ENV_AZURE_ACCOUNT);
        let source = match &account {
            Some(_) => format!("the environment ({ENV_AZURE_ACCOUNT}, {what})"),
            None => format!("the environment ({what}; the account from the endpoint)"),
        };
        Ok((Self::Azure { account, key, sas }, source))
    }

    /// GCS from the environment, else the gcloud application default credentials file.
    pub(crate) fn gcs_from_env() -> Result<(Self, String), PublishError> {
        if let Some(key) = env(ENV_GCS_KEY) {
            let source = format!("the environment ({ENV_GCS_KEY})");
            return Ok((
                Self::Gcs {
                    key: Some(key),
                    file: None,
                },
                source,
            ));
        }
        let file = env(ENV_GCS_FILE)
            .map(PathBuf::from)
            .or_else(gcloud_adc_file);
        match file {
            Some(f) => {
                let source = format!("the file {}", f.display());
                Ok((
                    Self::Gcs {
                        key: None,
                        file: Some(f),
                    },
                    source,
                ))
            }
            None => Err(PublishError::CredentialsMissing {
                missing: ENV_GCS_FILE,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Provider;

    #[test]
    fn provider_names_and_schemes() {
        for (name, p) in [
            ("s3", Provider::S3),
            ("GCS", Provider::Gcs),
            ("gs", Provider::Gcs),
            ("azure", Provider::Azure),
            ("az", Provider::Azure),
        ] {
            assert_eq!(name.parse::<Provider>().expect(name), p);
        }
        assert!("minio".parse::<Provider>().is_err());
        assert_eq!(Provider::default(), Provider::S3);
        assert_eq!(Provider::from_scheme("gs"), Some(Provider::Gcs));
        assert_eq!(Provider::from_scheme("az"), Some(Provider::Azure));
        assert_eq!(Provider::from_scheme("s3"), Some(Provider::S3));
        assert_eq!(Provider::from_scheme("http"), None);
        for p in [Provider::S3, Provider::Gcs, Provider::Azure] {
            assert_eq!(p.as_str().parse::<Provider>().expect("round trip"), p);
        }
    }
}
