//! `wshard doctor`: check the storage setup, one [`Check`] per line, each with an
//! actionable hint when it fails. Nothing here prints a credential.
//!
//! Checks, in order (a check whose prerequisite failed is skipped):
//! 1. `config`: endpoint and bucket given and usable;
//! 2. `credentials`: the provider's credentials found (S3: AWS_ACCESS_KEY_ID and
//!    AWS_SECRET_ACCESS_KEY or the shared file; GCS, Azure: [`crate::provider`]), never
//!    printed;
//! 3. `endpoint`: a TCP connection to the endpoint's host and port;
//! 4. `bucket`: a listing of the prefix is answered (credentials accepted, bucket exists);
//! 5. `write`: a probe object put, read back equal, deleted;
//! 6. `create-only`: a second If-None-Match put of the probe is refused;
//! 7. `compare-and-swap`: an If-Match put with the current ETag (GCS: generation)
//!    succeeds, one with the stale one is refused.

use std::net::{TcpStream, ToSocketAddrs};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;

use crate::config::{Credentials, StoreConfig, TransferOptions};
use crate::error::PublishError;
use crate::layout::Keys;
use crate::provider::Provider;
use crate::store::{PutCondition, PutOutcome, Store};

/// Default port of an `http://` endpoint.
const HTTP_PORT: u16 = 80;
/// Default port of an `https://` endpoint.
const HTTPS_PORT: u16 = 443;

/// How one check ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckStatus {
    Ok,
    Failed,
    /// Not run: an earlier check it needs failed.
    Skipped,
}

impl CheckStatus {
    /// `ok`, `FAILED`, `skipped`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Failed => "FAILED",
            Self::Skipped => "skipped",
        }
    }
}

/// One line of the doctor's report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub status: CheckStatus,
    /// What was checked or found.
    pub detail: String,
    /// What to do, when it failed.
    pub hint: Option<String>,
}

fn ok(name: &'static str, detail: impl Into<String>) -> Check {
    Check {
        name,
        status: CheckStatus::Ok,
        detail: detail.into(),
        hint: None,
    }
}

fn failed(name: &'static str, detail: impl Into<String>, hint: impl Into<String>) -> Check {
    Check {
        name,
        status: CheckStatus::Failed,
        detail: detail.into(),
        hint: Some(hint.into()),
    }
}

fn skipped(name: &'static str, why: &str) -> Check {
    Check {
        name,
        status: CheckStatus::Skipped,
        detail: format!("needs {why}"),
        hint: None,
    }
}

/// Where the credentials of `provider` come from, for hints.
fn credentials_hint(provider: Provider) -> &'static str {
    match provider {
        Provider::S3 => {
            "export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for \
             temporary credentials) for this command, or put them in the profile \
             (AWS_PROFILE, else default) of the shared credentials file \
             (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials)"
        }
        Provider::Gcs => {
            "set GOOGLE_APPLICATION_CREDENTIALS to a service account key file (or \
             GOOGLE_SERVICE_ACCOUNT_KEY to its JSON), or run `gcloud auth \
             application-default login`"
        }
        Provider::Azure => {
            "export AZURE_STORAGE_ACCOUNT_KEY (or AZURE_STORAGE_SAS_TOKEN) and, unless the \
             endpoint names the account, AZURE_STORAGE_ACCOUNT_NAME"
        }
    }
}

/// The hint for a typed error.
fn hint_for(e: &PublishError, provider: Provider) -> String {
    match e {
        PublishError::CredentialsRejected { .. } => match provider {
            Provider::S3 => "the access key id or secret key is wrong for this endpoint: check \
                             AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY"
                .into(),
            Provider::Gcs => "the service account key was refused: check \
                              GOOGLE_APPLICATION_CREDENTIALS and the account's roles"
                .into(),
            Provider::Azure => "the account key or SAS token was refused: check \
                                AZURE_STORAGE_ACCOUNT_KEY / AZURE_STORAGE_SAS_TOKEN and the \
                                account name"
                .into(),
        },
        PublishError::BucketNotFound { .. } => {
            "create the bucket, or fix --bucket / --endpoint / --region".into()
        }
        PublishError::Forbidden { .. } => {
            "the bucket or IAM policy forbids it: ask for list, get, put and delete on the prefix"
                .into()
        }
        PublishError::EndpointUnreachable { .. } => {
            "check the endpoint URL, the network, and --allow-http for http://".into()
        }
        _ => "see the error above".into(),
    }
}

/// `host:port` of an `http(s)://host[:port][/...]` endpoint.
fn host_port(endpoint: &str) -> Option<String> {
    let (rest, port) = if let Some(r) = endpoint.strip_prefix("http://") {
        (r, HTTP_PORT)
    } else {
        (endpoint.strip_prefix("https://")?, HTTPS_PORT)
    };
    let authority = rest.split('/').next().unwrap_or(rest);
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    if authority.is_empty() {
        return None;
    }
    let has_port = authority.rsplit_once(':').is_some_and(|(_, p)| {
        !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && !p.contains(']')
    });
    Some(if has_port {
        authority.to_owned()
    } else {
        format!("{authority}:{port}")
    })
}

/// Run every check. `credentials` is what [`Credentials::load_for`] gave.
#[must_use]
pub fn run(
    config: &StoreConfig,
    credentials: Result<Credentials, PublishError>,
    options: &TransferOptions,
) -> Vec<Check> {
    let mut out = Vec::new();
    let config_ok = match config.validate() {
        Ok(()) => {
            out.push(ok(
                "config",
                format!(
                    "provider {} endpoint {} bucket {} prefix {:?} region {}",
                    config.provider,
                    config.effective_endpoint(),
                    config.bucket,
                    config.key_prefix(),
                    config.region
                ),
            ));
            true
        }
        Err(e) => {
            out.push(failed(
                "config",
                e.to_string(),
                "fix the flag or variable named",
            ));
            false
        }
    };
    let creds = match credentials {
        Ok(c) => {
            out.push(ok(
                "credentials",
                format!("found in {} (values not shown)", c.source()),
            ));
            Some(c)
        }
        Err(e) => {
            out.push(failed(
                "credentials",
                e.to_string(),
                credentials_hint(config.provider),
            ));
            None
        }
    };
    let reachable = if config_ok {
        match host_port(config.effective_endpoint()) {
            None => {
                out.push(failed(
                    "endpoint",
                    "no host in the endpoint URL",
                    "give http(s)://host:port",
                ));
                false
            }
            Some(hp) => match connect(&hp, options) {
                Ok(()) => {
                    out.push(ok("endpoint", format!("{hp} accepts connections")));
                    true
                }
                Err(e) => {
                    out.push(failed(
                        "endpoint",
                        format!("{hp}: {e}"),
                        "check the endpoint URL (host and port), that the server runs, and the \
                         network or firewall between here and it",
                    ));
                    false
                }
            },
        }
    } else {
        out.push(skipped("endpoint", "config"));
        false
    };
    let store = match (reachable, creds) {
        (true, Some(c)) => match Store::new(config.clone(), &c, options.clone()) {
            Ok(s) => Some(s),
            Err(e) => {
                out.push(failed(
                    "bucket",
                    e.to_string(),
                    hint_for(&e, config.provider),
                ));
                None
            }
        },
        _ => None,
    };
    let Some(store) = store else {
        for name in ["bucket", "write", "create-only", "compare-and-swap"] {
            if !out.iter().any(|c| c.name == name) {
                out.push(skipped(name, "endpoint and credentials"));
            }
        }
        return out;
    };
    store_checks(&store, &mut out);
    out
}

fn connect(host_port: &str, options: &TransferOptions) -> std::io::Result<()> {
    let mut last = std::io::Error::new(std::io::ErrorKind::NotFound, "no address");
    for addr in host_port.to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, options.connect_timeout) {
            Ok(_) => return Ok(()),
            Err(e) => last = e,
        }
    }
    Err(last)
}

fn store_checks(store: &Store, out: &mut Vec<Check>) {
    let provider = store.config().provider;
    let keys = Keys::new(store.config().key_prefix());
    if let Err(e) = store.check_bucket(keys.prefix()) {
        out.push(failed("bucket", e.to_string(), hint_for(&e, provider)));
        for name in ["write", "create-only", "compare-and-swap"] {
            out.push(skipped(name, "bucket"));
        }
        return;
    }
    out.push(ok(
        "bucket",
        format!(
            "{} answers a listing, credentials accepted",
            store.config().bucket
        ),
    ));
    let unique = format!(
        "{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
    );
    let probe = keys.doctor_probe(&unique);
    let body = Bytes::from(format!("wshard doctor probe {unique}"));
    let write = store
        .put(&probe, body.clone(), PutCondition::Always)
        .and_then(|_| store.get(&probe))
        .and_then(|got| match got {
            Some(f) if f.bytes == body => store.delete(&probe).map(|()| true),
            _ => Ok(false),
        });
    match write {
        Ok(true) => out.push(ok("write", format!("put, get and delete of {probe}"))),
        Ok(false) => out.push(failed(
            "write",
            format!("{probe} read back different bytes"),
            "the store does not keep what it is given: check the server",
        )),
        Err(e) => {
            out.push(failed("write", e.to_string(), hint_for(&e, provider)));
            out.push(skipped("create-only", "write"));
            out.push(skipped("compare-and-swap", "write"));
            return;
        }
    }
    let cas_probe = format!("{probe}-cas");
    let first = store.put(
        &cas_probe,
        Bytes::from_static(b"1"),
        PutCondition::CreateOnly,
    );
    let second = store.put(
        &cas_probe,
        Bytes::from_static(b"2"),
        PutCondition::CreateOnly,
    );
    let e_tag = match (&first, &second) {
        (Ok(PutOutcome::Written { e_tag }), Ok(PutOutcome::ConditionFailed)) => {
            out.push(ok(
                "create-only",
                "If-None-Match: * refused over an existing object",
            ));
            e_tag.clone()
        }
        (Ok(_), Ok(PutOutcome::Written { .. })) => {
            out.push(failed(
                "create-only",
                "a second create-only put overwrote the object",
                "this store ignores If-None-Match: version manifests could be overwritten; use \
                 a store with conditional writes (AWS S3, MinIO, R2, s3s-fs)",
            ));
            None
        }
        (Err(e), _) | (_, Err(e)) => {
            out.push(failed("create-only", e.to_string(), hint_for(e, provider)));
            None
        }
        (Ok(PutOutcome::ConditionFailed), _) => {
            out.push(failed(
                "create-only",
                "the first create-only put of a new key was refused",
                "the store mishandles If-None-Match",
            ));
            None
        }
    };
    match e_tag {
        None => out.push(failed(
            "compare-and-swap",
            "no ETag to swap on",
            "the store must return ETags and honour If-Match for latest.json",
        )),
        Some(stale) => {
            let swap = store.put(
                &cas_probe,
                Bytes::from_static(b"3"),
                PutCondition::IfMatch(stale.clone()),
            );
            let again = store.put(
                &cas_probe,
                Bytes::from_static(b"4"),
                PutCondition::IfMatch(stale),
            );
            match (swap, again) {
                (Ok(PutOutcome::Written { .. }), Ok(PutOutcome::ConditionFailed)) => out.push(ok(
                    "compare-and-swap",
                    "If-Match with the current ETag taken, with a stale ETag refused",
                )),
                (Err(e), _) | (_, Err(e)) => {
                    out.push(failed(
                        "compare-and-swap",
                        e.to_string(),
                        hint_for(&e, provider),
                    ));
                }
                _ => out.push(failed(
                    "compare-and-swap",
                    "If-Match was not honoured",
                    "this store ignores If-Match: two publishers could both move latest.json; \
                     use a store with conditional writes",
                )),
            }
        }
    }
    let _ = store.delete(&cas_probe);
}
