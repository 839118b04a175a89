//! `wshard inspect URL` and `wshard cat URL BLOCK` on `s3://` URLs (docs/PUBLISH.md, "Remote
//! reads and the cache"): the shard's header and index by range requests, then only the
//! meta blocks (inspect) or the block asked for (cat); a blob the cache holds is read from
//! it. The bucket (and a dataset URL's prefix) come from the URL; the endpoint, region and
//! `--allow-http` from the flags or the variables of [`crate::store_args`]; the credentials
//! from the environment, else the shared credentials file ([`wshard_publish::Credentials::load`]).

use std::io::Write;
use std::path::Path;

use serde_json::json;
use wshard_publish::cache::BlobCache;
use wshard_publish::remote::{resolve, RemoteShard, Resolved};
use wshard_publish::url::RemoteUrl;
use wshard_publish::{PublishError, Publisher};

use crate::cat::{self, CatOptions};
use crate::inspect::{self, InspectOptions, Inspection};
use crate::store_args::StoreArgs;
use crate::table::{Align, Table};
use crate::Status;

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

fn fail(verb: &str, url: &str, e: &PublishError, err: &mut dyn Write) -> Status {
    let _ = writeln!(err, "wshard {verb}: {url}: {e}");
    status_of(e)
}

fn write_episode(
    url: &str,
    version: &str,
    key: &str,
    entry: &wshard_publish::version::EpisodeEntry,
    json: bool,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if json {
        let files: serde_json::Map<String, serde_json::Value> = entry
            .files
            .iter()
            .map(|(f, e)| (f.clone(), json!({"sha256": e.sha256, "size": e.size})))
            .collect();
        let doc = json!({"url": url, "version": version, "episode": key,
            "status": entry.status, "files": files});
        return writeln!(out, "{doc}");
    }
    writeln!(out, "episode  {key}")?;
    writeln!(out, "version  {version}")?;
    writeln!(out, "status   {}", entry.status)?;
    let mut t = Table::new(&[
        ("file", Align::Left),
        ("size", Align::Right),
        ("sha256", Align::Left),
    ]);
    for (f, e) in &entry.files {
        t.push(vec![f.clone(), e.size.to_string(), e.sha256.clone()]);
    }
    t.write(out)
}

/// `wshard inspect s3://...`.
pub fn inspect(
    url: &str,
    args: &RemoteArgs,
    opts: InspectOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Status {
    try_inspect(url, args, opts, out, err).unwrap_or_else(|e| fail("inspect", url, &e, err))
}

fn try_inspect(
    url: &str,
    args: &RemoteArgs,
    opts: InspectOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Status, PublishError> {
    let parsed = RemoteUrl::parse(url)?;
    let p = publisher_for(&parsed, args)?;
    let cache = env_cache();
    match resolve(&p, cache.as_ref(), &parsed)? {
        Resolved::Episode {
            version,
            key,
            entry,
            ..
        } => {
            let wrote = write_episode(url, &version, &key, &entry, opts.json, out);
            Ok(match wrote.and_then(|()| out.flush()) {
                Ok(()) => Status::Ok,
                Err(e) => {
                    let _ = writeln!(err, "wshard inspect: writing output: {e}");
                    Status::Error
                }
            })
        }
        Resolved::Blob(blob) => {
            let shard = RemoteShard::open(p.store(), cache.as_ref(), &blob)?;
            // From the cache every block is checked (a local file); remotely only
            // the meta blocks are read.
            let ins = Inspection::from_reader(
                shard.reader(),
                Path::new(url),
                opts.verbose,
                shard.from_cache(),
            );
            Ok(inspect::print(&ins, opts, out, err))
        }
    }
}

/// `wshard cat s3://... BLOCK`.
pub fn cat(
    url: &str,
    block: &str,
    args: &RemoteArgs,
    opts: &CatOptions,
    stdout_is_terminal: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Status {
    try_cat(url, block, args, opts, stdout_is_terminal, out, err)
        .unwrap_or_else(|e| fail("cat", url, &e, err))
}

fn try_cat(
    url: &str,
    block: &str,
    args: &RemoteArgs,
    opts: &CatOptions,
    stdout_is_terminal: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Status, PublishError> {
    let parsed = RemoteUrl::parse(url)?;
    let p = publisher_for(&parsed, args)?;
    let cache = env_cache();
    let blob = match resolve(&p, cache.as_ref(), &parsed)? {
        Resolved::Blob(b) => b,
        Resolved::Episode { key, entry, .. } => {
            return Err(PublishError::InvalidUrl {
                url: url.to_owned(),
                reason: format!(
                    "names episode {key}, not one of its files ({})",
                    entry.files.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            })
        }
    };
    let shard = RemoteShard::open(p.store(), cache.as_ref(), &blob)?;
    Ok(cat::run_reader(
        shard.reader(),
        Path::new(url),
        block,
        opts,
        stdout_is_terminal,
        out,
        err,
    ))
}
