//! `wshard inspect s3://...` (docs/PUBLISH.md, "Remote reads and the cache"): an episode
//! URL's files, or a shard's header, index and meta blocks read by range requests (every
//! block when the blob cache holds it), shown as [`super::shard`] shows a local file.

use std::io::Write;
use std::path::Path;

use serde_json::json;
use wshard_publish::remote::{RemoteShard, Resolved};
use wshard_publish::PublishError;

use super::shard::{self, InspectOptions, Inspection};
use crate::exit_status::Status;
use crate::output::table::{Align, Table};
use crate::store::remote::{fail, open_url, RemoteArgs};

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
    let opened = open_url(url, args)?;
    match opened.resolved {
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
            let shard = RemoteShard::open(opened.publisher.store(), opened.cache.as_ref(), &blob)?;
            // From the cache every block is checked (a local file); remotely only
            // the meta blocks are read.
            let ins = Inspection::from_reader(
                shard.reader(),
                Path::new(url),
                opts.verbose,
                shard.from_cache(),
            );
            Ok(shard::print(&ins, opts, out, err))
        }
    }
}
