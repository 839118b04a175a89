//! `wshard cat s3://... BLOCK` (docs/PUBLISH.md, "Remote reads and the cache"): the
//! shard's index and the one block read by range requests (or from the blob cache), written
//! as [`super::block`] writes a local file's.

use std::io::Write;
use std::path::Path;

use wshard_publish::remote::{RemoteShard, Resolved};
use wshard_publish::PublishError;

use super::block::{self, CatOptions};
use crate::exit_status::Status;
use crate::store::remote::{fail, open_url, RemoteArgs};

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
    let opened = open_url(url, args)?;
    let blob = match opened.resolved {
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
    let shard = RemoteShard::open(opened.publisher.store(), opened.cache.as_ref(), &blob)?;
    Ok(block::run_reader(
        shard.reader(),
        Path::new(url),
        block,
        opts,
        stdout_is_terminal,
        out,
        err,
    ))
}
