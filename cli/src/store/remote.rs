//! Reading `s3://` URLs, for `wshard inspect URL` and `wshard cat URL BLOCK`
//! (docs/PUBLISH.md, "Remote reads and the cache"): the shard's header and index by range
//! requests, then only the blocks asked for; a blob the cache holds is read from it. The
//! bucket (and a dataset URL's prefix) come from the URL; the endpoint, region and
//! `--allow-http` from the flags or the variables of [`crate::store::args`]; the credentials
//! from the environment, else the shared credentials file ([`wshard_publish::Credentials::load`]).

use std::io::Write;
use std::path::Path;

use wshard_publish::cache::BlobCache;
use wshard_publish::remote::{resolve, Resolved};
use wshard_publish::url::RemoteUrl;
use wshard_publish::{PublishError, Publisher};

use crate::exit_status::Status;
use crate::store::args::StoreArgs;

/// Where the store of an `s3://` URL is (the bucket and prefix are in the URL).
#[derive(Clone, Debug, Default, clap::Args)]
pub struct RemoteArgs {
    /// For s3:// URLs: the S3-compatible endpoint, http(s)://host:port (else
    /// $WSHARD_S3_ENDPOINT).
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// For s3:// URLs: the region (else $WSHARD_S3_REGION; default us-east-1).
    #[arg(long, value_name = "R")]
    pub region: Option<String>,
    /// For s3:// URLs: allow an http:// endpoint (else $WSHARD_S3_ALLOW_HTTP=1).
    #[arg(long)]
    pub allow_http: bool,
}

/// The `s3://` URL a path argument holds, if it is one.
#[must_use]
pub fn remote_url(file: &Path) -> Option<&str> {
    file.to_str().filter(|s| wshard_publish::url::is_remote(s))
}

/// The publisher on the URL's bucket and prefix.
///
/// # Errors
/// Store settings, credentials.
pub fn publisher_for(url: &RemoteUrl, args: &RemoteArgs) -> Result<Publisher, PublishError> {
    let store_args = StoreArgs {
        endpoint: args.endpoint.clone(),
        bucket: Some(url.bucket().to_owned()),
        prefix: Some(url.prefix().to_owned()),
        region: args.region.clone(),
        allow_http: args.allow_http,
        ..StoreArgs::default()
    };
    store_args.publisher()
}

/// What an `s3://` URL names, with the publisher on its store and the blob cache to read
/// it through.
pub struct OpenedUrl {
    pub publisher: Publisher,
    pub cache: Option<BlobCache>,
    pub resolved: Resolved,
}

/// Parse `url`, connect to its store and resolve what it names (a blob, or an episode of a
/// dataset version).
///
/// # Errors
/// A bad URL, store settings, credentials, or what the store answers.
pub fn open_url(url: &str, args: &RemoteArgs) -> Result<OpenedUrl, PublishError> {
    let parsed = RemoteUrl::parse(url)?;
    let publisher = publisher_for(&parsed, args)?;
    let cache = env_cache();
    let resolved = resolve(&publisher, cache.as_ref(), &parsed)?;
    Ok(OpenedUrl {
        publisher,
        cache,
        resolved,
    })
}

/// The cache of the environment; none when no directory can be found (reads still work).
#[must_use]
pub fn env_cache() -> Option<BlobCache> {
    BlobCache::from_env().ok()
}

/// The exit status of a failure: corrupt content is 1, everything else 2.
#[must_use]
pub fn status_of(e: &PublishError) -> Status {
    match e {
        PublishError::RemoteRead { source, .. } if !source.is_io() => Status::Corrupt,
        PublishError::BlobMismatch { .. } | PublishError::VersionHashMismatch { .. } => {
            Status::Corrupt
        }
        _ => Status::Error,
    }
}

/// Say `wshard VERB: URL: ERROR` on `err`; the exit status of [`status_of`].
pub fn fail(verb: &str, url: &str, e: &PublishError, err: &mut dyn Write) -> Status {
    let _ = writeln!(err, "wshard {verb}: {url}: {e}");
    status_of(e)
}
