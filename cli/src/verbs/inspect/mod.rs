//! `wshard inspect`: [`shard`] shows a shard file, [`episode_dir`] an episode directory,
//! [`journal`] a journal (`--peek`, `*.wal`), [`remote`] an `s3://` URL; this module
//! holds the arguments and chooses which. `remote` prints a shard with `shard`'s printing;
//! the others share nothing, and none uses this module.

pub mod episode_dir;
pub mod journal;
pub mod remote;
pub mod shard;

use std::io::Write;
use std::path::PathBuf;

use episode_dir::InspectDirOptions;
use journal::PeekOptions;
use shard::InspectOptions;

use crate::exit_status::Status;
use crate::store::remote::{remote_url, RemoteArgs};

/// Print a shard's header and blocks, a journal, or an episode directory
///
/// Print a shard's header and one row per block (name, dtype, shape, codec, sizes, CRC), a
/// journal's (`*.wal`) records and corrupt regions, or an episode directory's streams
/// (clock, rate, channels, steps, first/last t_ns, status) and events. An s3:// URL
/// (`s3://BUCKET/KEY` or `s3://BUCKET/[PREFIX/]datasets/WS/NAME[@VERSION]/EPISODE[/FILE]`)
/// is read with range requests: the header, index and meta blocks only.
///
/// Exit codes: 0 all good, 1 a file is corrupt, 2 usage or I/O error.
#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// The shard or journal file, an episode directory, or an s3:// URL.
    pub file: PathBuf,
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// Also print the JSON of the meta/* blocks (the manifest JSON for a manifest; the
    /// segment header JSON for a journal).
    #[arg(short, long)]
    pub verbose: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Show the file as a journal (the default for `*.wal` and for files that are not
    /// shards but hold journal records). On a shard, the normal view.
    #[arg(long)]
    pub peek: bool,
}

/// Run `wshard inspect` on an `s3://` URL, an episode directory, a journal or a shard file.
pub fn run(args: InspectArgs, out: &mut dyn Write, err: &mut dyn Write) -> Status {
    let InspectArgs {
        file,
        remote: remote_args,
        verbose,
        json,
        peek: as_journal,
    } = args;
    if let Some(url) = remote_url(&file) {
        remote::inspect(
            url,
            &remote_args,
            InspectOptions { verbose, json },
            out,
            err,
        )
    } else if file.is_dir() {
        episode_dir::run(&file, InspectDirOptions { json }, out, err)
    } else if journal::is_journal(&file, as_journal) {
        journal::run(&file, PeekOptions { verbose, json }, out, err)
    } else {
        shard::run(&file, InspectOptions { verbose, json }, out, err)
    }
}
