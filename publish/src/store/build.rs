//! Building the object_store client of the configured [`Provider`]: `AmazonS3`,
//! `GoogleCloudStorage` or `MicrosoftAzure`, each held as an `ObjectStore` plus a
//! `MultipartStore` so that every operation of [`super::Store`] has one code path.
//!
//! Builder errors are reduced to texts built here when they could quote a credential
//! (a GCS service account key that does not parse, an Azure key that is not base64).

use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::multipart::MultipartStore;
use object_store::{ClientOptions, ObjectStore, RetryConfig};

use crate::config::{Credentials, StoreConfig, TransferOptions};
use crate::error::PublishError;
use crate::provider::{CloudCredentials, Provider, GCS_DEFAULT_ENDPOINT};

/// The client as the two traits [`super::Store`] uses.
pub(super) struct Clients {
    pub(super) objects: Arc<dyn ObjectStore>,
    pub(super) multipart: Arc<dyn MultipartStore>,
}

fn both<T: ObjectStore + MultipartStore>(client: T) -> Clients {
    let client = Arc::new(client);
    Clients {
        objects: client.clone(),
        multipart: client,
    }
}

fn invalid(field: &'static str, reason: impl Into<String>) -> PublishError {
    PublishError::InvalidConfig {
        field,
        reason: reason.into(),
    }
}

/// The Azure account named by an endpoint: the first path segment of a path-style URL
/// (`http://127.0.0.1:10000/devstoreaccount1`, the emulators), else the first label of the
/// host (`https://ACCOUNT.blob.core.windows.net`).
#[must_use]
pub fn azure_account_of(endpoint: &str) -> Option<String> {
    let rest = endpoint.split_once("://").map_or(endpoint, |(_, r)| r);
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let first = path.split('/').next().unwrap_or("");
    if !first.is_empty() {
        return Some(first.to_owned());
    }
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let label = host.split('.').next().unwrap_or("");
    (host.contains('.') && !label.is_empty() && !label.bytes().all(|b| b.is_ascii_digit()))
        .then(|| label.to_owned())
}

/// Build the client of `config.provider` (no request is made).
pub(super) fn build(
    config: &StoreConfig,
    credentials: &Credentials,
    options: &TransferOptions,
) -> Result<Clients, PublishError> {
    if credentials.provider() != config.provider {
        return Err(invalid(
            "provider",
            format!(
                "the store is {} but the credentials are for {}",
                config.provider,
                credentials.provider()
            ),
        ));
    }
    let client = ClientOptions::new()
        .with_allow_http(config.allow_http)
        .with_connect_timeout(options.connect_timeout);
    let retry = RetryConfig {
        max_retries: options.max_retries,
        retry_timeout: options.retry_timeout,
        ..RetryConfig::default()
    };
    match (&config.provider, &credentials.cloud) {
        (Provider::S3, _) => build_s3(config, credentials, client, retry),
        (Provider::Azure, Some(CloudCredentials::Azure { account, key, sas })) => build_azure(
            config,
            account.as_deref(),
            key.as_deref(),
            sas.as_deref(),
            client,
            retry,
        ),
        (Provider::Gcs, Some(CloudCredentials::Gcs { key, file })) => {
            build_gcs(config, key.as_deref(), file.as_deref(), client, retry)
        }
        _ => Err(invalid("provider", "credentials of another provider")),
    }
}

fn build_s3(
    config: &StoreConfig,
    credentials: &Credentials,
    client: ClientOptions,
    retry: RetryConfig,
) -> Result<Clients, PublishError> {
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
    // The builder's own error text can quote settings, never keys.
    let s3 = builder
        .build()
        .map_err(|e| invalid("store", e.to_string()))?;
    Ok(both(s3))
}

/// A SAS token as the query pairs object_store signs with.
fn sas_pairs(sas: &str) -> Vec<(String, String)> {
    sas.trim_start_matches('?')
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

fn build_azure(
    config: &StoreConfig,
    account: Option<&str>,
    key: Option<&str>,
    sas: Option<&str>,
    client: ClientOptions,
    retry: RetryConfig,
) -> Result<Clients, PublishError> {
    let account = account
        .map(str::to_owned)
        .or_else(|| azure_account_of(&config.endpoint))
        .ok_or_else(|| {
            invalid(
                "endpoint",
                "no Azure account in it (give https://ACCOUNT.blob.core.windows.net, or \
                 http://host:port/ACCOUNT for an emulator, or set AZURE_STORAGE_ACCOUNT_NAME)",
            )
        })?;
    let mut builder = MicrosoftAzureBuilder::new()
        .with_account(&account)
        .with_container_name(&config.bucket)
        .with_endpoint(config.endpoint.trim_end_matches('/').to_owned())
        .with_allow_http(config.allow_http)
        .with_client_options(client)
        .with_retry(retry);
    if let Some(k) = key {
        builder = builder.with_access_key(k);
    } else if let Some(s) = sas {
        builder = builder.with_sas_authorization(sas_pairs(s));
    }
    let azure = builder.build().map_err(|e| {
        // The only builder errors that could involve the key: say so without its text.
        let text = e.to_string();
        if text.to_ascii_lowercase().contains("key") {
            invalid(
                "credentials",
                "AZURE_STORAGE_ACCOUNT_KEY is not a valid base64 account key",
            )
        } else {
            invalid("store", text)
        }
    })?;
    Ok(both(azure))
}

/// The service account key JSON with `gcs_base_url` set to a non-default endpoint (the
/// only way object_store takes one), or `None` to use the key or file as they are.
fn gcs_key_with_endpoint(
    config: &StoreConfig,
    key: Option<&str>,
    file: Option<&std::path::Path>,
) -> Result<Option<String>, PublishError> {
    let endpoint = config.effective_endpoint().trim_end_matches('/');
    if endpoint == GCS_DEFAULT_ENDPOINT {
        return Ok(None);
    }
    let text = match (key, file) {
        (Some(k), _) => k.to_owned(),
        (None, Some(f)) => std::fs::read_to_string(f).map_err(|e| PublishError::io(f, e))?,
        (None, None) => {
            return Err(invalid(
                "endpoint",
                "a GCS endpoint other than storage.googleapis.com needs a service account key",
            ))
        }
    };
    let mut json: serde_json::Value = serde_json::from_str(&text).map_err(|_| {
        invalid(
            "credentials",
            "the GCS service account key is not JSON (contents not shown)",
        )
    })?;
    let obj = json.as_object_mut().ok_or_else(|| {
        invalid(
            "credentials",
            "the GCS service account key is not a JSON object",
        )
    })?;
    obj.insert("gcs_base_url".into(), endpoint.into());
    Ok(Some(json.to_string()))
}

fn build_gcs(
    config: &StoreConfig,
    key: Option<&str>,
    file: Option<&std::path::Path>,
    client: ClientOptions,
    retry: RetryConfig,
) -> Result<Clients, PublishError> {
    let mut builder = GoogleCloudStorageBuilder::new()
        .with_bucket_name(&config.bucket)
        .with_client_options(client)
        .with_retry(retry);
    match gcs_key_with_endpoint(config, key, file)? {
        Some(k) => builder = builder.with_service_account_key(k),
        None => match (key, file) {
            (Some(k), _) => builder = builder.with_service_account_key(k),
            (None, Some(f)) => {
                // A service account key or an authorized user's application default
                // credentials: object_store tells them apart.
                let f = f.to_string_lossy().into_owned();
                builder = builder.with_application_credentials(f);
            }
            (None, None) => {}
        },
    }
    let gcs = builder.build().map_err(|_| {
        // Its text may quote the key's JSON: never shown.
        invalid(
            "credentials",
            "the GCS service account key or application credentials file does not parse \
             (contents not shown)",
        )
    })?;
    Ok(both(gcs))
}

#[cfg(test)]
mod tests {
    use super::{azure_account_of, sas_pairs};
    use crate::config::{Credentials, StoreConfig, TransferOptions};
    use crate::error::PublishError;
    use crate::provider::Provider;
    use crate::store::Store;

    fn gcs_config(endpoint: &str) -> StoreConfig {
        StoreConfig {
            provider: Provider::Gcs,
            endpoint: endpoint.to_owned(),
            bucket: "fleet".into(),
            prefix: String::new(),
            region: String::new(),
            allow_http: true,
        }
    }

    fn quick() -> TransferOptions {
        TransferOptions {
            max_retries: 0,
            connect_timeout: std::time::Duration::from_secs(2),
            retry_timeout: std::time::Duration::from_secs(2),
            ..TransferOptions::default()
        }
    }

    /// A port nothing listens on (bound, then closed).
    fn closed_port() -> u16 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    }

    #[test]
    fn gcs_store_sends_to_the_configured_endpoint() {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = dir.path().join("sa.json");
        // A key that needs no token (object_store's emulator switch).
        std::fs::write(
            &key,
            r#"{"disable_oauth": true, "client_email": "", "private_key": "", "private_key_id": ""}"#,
        )
        .expect("write key");
        let endpoint = format!("http://127.0.0.1:{}", closed_port());
        let store = Store::new(gcs_config(&endpoint), &Credentials::gcs_file(&key), quick())
            .expect("gcs store");
        let e = store.head_size("k").expect_err("nothing listens");
        match &e {
            PublishError::EndpointUnreachable {
                endpoint: at,
                detail,
            } => {
                assert_eq!(at, &endpoint);
                assert!(detail.contains(&endpoint), "{detail}");
            }
            other => panic!("expected EndpointUnreachable, got {other:?}"),
        }
    }

    #[test]
    fn gcs_key_that_does_not_parse_is_not_quoted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = dir.path().join("sa.json");
        let secret = "PRIVATE-KEY-TEXT-7f3a";
        std::fs::write(&key, format!("{{\"private_key\": \"{secret}\"")).expect("write");
        for endpoint in ["", "http://127.0.0.1:9"] {
            let e = Store::new(gcs_config(endpoint), &Credentials::gcs_file(&key), quick())
                .expect_err("broken key");
            assert!(matches!(e, PublishError::InvalidConfig { .. }), "{e}");
            assert!(!format!("{e} {e:?}").contains(secret), "{e:?}");
        }
    }

    #[test]
    fn credentials_of_another_provider_are_refused() {
        let e = Store::new(
            gcs_config(""),
            &Credentials::azure(Some("acct"), "a2V5"),
            quick(),
        )
        .expect_err("azure credentials for gcs");
        assert!(
            matches!(
                e,
                PublishError::InvalidConfig {
                    field: "provider",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn sas_token_query_pairs() {
        assert_eq!(
            sas_pairs("?sv=2022-11-02&sig=abc%3D&se=x"),
            [("sv", "2022-11-02"), ("sig", "abc%3D"), ("se", "x")]
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
        );
    }

    #[test]
    fn azure_account_from_endpoint() {
        assert_eq!(
            azure_account_of("https://acct1.blob.core.windows.net").as_deref(),
            Some("acct1")
        );
        assert_eq!(
            azure_account_of("http://127.0.0.1:10000/devstoreaccount1").as_deref(),
            Some("devstoreaccount1")
        );
        assert_eq!(azure_account_of("http://127.0.0.1:10000"), None);
        assert_eq!(azure_account_of("http://localhost:10000"), None);
    }
}
