//! Mapping object_store's errors to the typed [`PublishError`]s, per provider: the HTTP
//! status (object_store's error kinds) first, then the provider's error code in the reply
//! body, which object_store keeps in its error text.
//!
//! | meaning | S3 | GCS (XML API) | Azure |
//! |---|---|---|---|
//! | credentials rejected | 401; `SignatureDoesNotMatch`, `InvalidAccessKeyId`, `InvalidToken`, `ExpiredToken` (s3s: `NotSignedUp`) | 401; a token that cannot be had (`invalid_grant`) | 403 `AuthenticationFailed`, or any 403 saying "Server failed to authenticate the request" (Azurite's `AuthorizationFailure`) |
//! | forbidden | 403 `AccessDenied` | 403 `AccessDenied` | 403 `AuthorizationFailure`, `AuthorizationPermissionMismatch` |
//! | bucket not found | `NoSuchBucket` | `NoSuchBucket` | `ContainerNotFound` |
//! | upload gone | `NoSuchUpload` | `NoSuchUpload` | `InvalidBlockList` (a block expired or dropped) |
//! | condition failed | 412 | 412 (generation match) | 412, 409 `BlobAlreadyExists` |

use object_store::client::{HttpError, HttpErrorKind};

use super::Store;
use crate::error::PublishError;
use crate::provider::Provider;

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

/// The error codes that differ between providers.
pub(super) struct ProviderCodes {
    /// The credentials are wrong (checked before "forbidden": Azure answers 403 for both).
    pub(super) credentials: &'static [&'static str],
    pub(super) no_bucket: &'static [&'static str],
    /// The multipart upload is unknown to the store.
    pub(super) upload_gone: &'static [&'static str],
}

impl ProviderCodes {
    pub(super) fn of(provider: Provider) -> Self {
        match provider {
            Provider::S3 => Self {
                credentials: &[],
                no_bucket: &["NoSuchBucket"],
                upload_gone: &["NoSuchUpload"],
            },
            Provider::Gcs => Self {
                credentials: &["invalid_grant", "Error getting token", "InvalidSecurity"],
                no_bucket: &["NoSuchBucket"],
                upload_gone: &["NoSuchUpload"],
            },
            Provider::Azure => Self {
                // Azure's text of AuthenticationFailed; Azurite sends it with the code
                // AuthorizationFailure (measured, 3.35.0), which Azure keeps for requests
                // refused by network rules.
                credentials: &[
                    "AuthenticationFailed",
                    "Server failed to authenticate the request",
                ],
                no_bucket: &["ContainerNotFound"],
                upload_gone: &["InvalidBlockList"],
            },
        }
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
    /// A "not found" answer that is about the bucket, not the key: the provider's
    /// missing-bucket code in the reply body (AWS S3 answers a GET in a missing bucket with
    /// 404 `NoSuchBucket`). `None` for an object that is absent (a HEAD has no body to
    /// tell: [`Store::explain_missing`] asks the bucket).
    pub(crate) fn bucket_missing_in(&self, e: &object_store::Error) -> Option<PublishError> {
        // The reply only, not the message around it (it quotes the key).
        let object_store::Error::NotFound { source, .. } = e else {
            return None;
        };
        let reply = source.to_string();
        let detail = e.to_string();
        ProviderCodes::of(self.config.provider)
            .no_bucket
            .iter()
            .any(|code| reply.contains(code))
            .then(|| PublishError::BucketNotFound {
                bucket: self.config.bucket.clone(),
                endpoint: self.config.effective_endpoint().to_owned(),
                detail,
            })
    }

    /// `absent`, the error of an object found missing, unless the bucket itself is
    /// missing: then that [`PublishError::BucketNotFound`]. Some stores (s3s-fs) answer a
    /// GET in a missing bucket with `NoSuchKey`, so a listing of the store's prefix tells
    /// (one request, on this error path only). Any other answer to the listing keeps
    /// `absent`: the object's absence is what the caller asked about.
    #[must_use]
    pub fn explain_missing(&self, absent: PublishError) -> PublishError {
        match self.check_bucket(&self.config.key_prefix()) {
            Err(e @ PublishError::BucketNotFound { .. }) => e,
            _ => absent,
        }
    }

    /// Map a client error on `op` of `key` to a typed error. object_store wraps some
    /// errors (listings, multipart) as `Generic`, so the provider's error code and the
    /// status in the text decide too.
    pub(crate) fn classify(
        &self,
        op: &'static str,
        key: &str,
        e: object_store::Error,
    ) -> PublishError {
        let detail = e.to_string();
        let endpoint = self.config.effective_endpoint().to_owned();
        let bucket = self.config.bucket.clone();
        let has = |needles: &[&str]| needles.iter().any(|n| detail.contains(n));
        let codes = ProviderCodes::of(self.config.provider);
        if chain_has_connect_error(&e) || has(UNREACHABLE_TEXT) {
            return PublishError::EndpointUnreachable { endpoint, detail };
        }
        if has(codes.no_bucket) {
            return PublishError::BucketNotFound {
                bucket,
                endpoint,
                detail,
            };
        }
        if matches!(e, object_store::Error::Unauthenticated { .. })
            || has(CREDENTIAL_CODES)
            || has(codes.credentials)
        {
            return PublishError::CredentialsRejected { endpoint, detail };
        }
        if matches!(e, object_store::Error::PermissionDenied { .. }) || has(FORBIDDEN_TEXT) {
            return PublishError::Forbidden {
                op,
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
}
