//! `wshard cat`: [`block`] writes one block of a shard as raw bytes, `.npy` or CSV (the
//! CSV rows are [`csv`]'s); [`remote`] writes one block of an `s3://` URL through `block`;
//! [`aligned`] writes an episode directory's channels aligned on one clock. This module
//! holds the arguments and chooses which; none uses it.

pub mod aligned;
pub mod block;
pub mod csv;
pub mod remote;

use std::io::Write;
use std::path::PathBuf;

use aligned::{AlignedArgs, AlignedFormat, AlignedOptions};
use block::{CatFormat, CatOptions};

use crate::exit_status::Status;
use crate::store::remote::{remote_url, RemoteArgs};

/// Write one block's decoded bytes (raw, npy, csv), or an episode's aligned channels
///
/// Write one block's decoded bytes: as stored (raw), as a NumPy .npy file, or as CSV. FILE
/// may be an s3:// URL: its index and the one block are read with range requests (or from
/// the blob cache). With --aligned, an episode directory's channels aligned on one clock (a
/// stream's timestamps or a fixed rate) as CSV or JSON Lines, each value with its validity
/// and source timestamp.
///
/// Exit codes: 0 all good, 1 the file or the block is corrupt, 2 usage (a missing block
/// too) or I/O error.
#[derive(Debug, clap::Args)]
pub struct CatArgs {
    /// The shard file or s3:// URL, or with --aligned the episode directory.
    pub file: PathBuf,
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// The block name, e.g. signal/obs (not with --aligned).
    #[arg(required_unless_present = "aligned", conflicts_with = "aligned")]
    pub block: Option<String>,
    /// Align the channels of the episode directory FILE on one clock.
    #[arg(long)]
    pub aligned: bool,
    /// --aligned: one row per step of this stream.
    #[arg(
        long,
        value_name = "STREAM",
        requires = "aligned",
        conflicts_with = "rate"
    )]
    pub clock: Option<String>,
    /// --aligned: rows at a fixed rate from the episode's first to last timestamp.
    #[arg(long, value_name = "HZ", requires = "aligned")]
    pub rate: Option<f64>,
    /// --aligned: a channel's policy, hold (default), nearest or linear; CH is
    /// STREAM/CHANNEL or a channel name only one stream has. Repeatable.
    #[arg(long = "policy", value_name = "CH=POLICY", requires = "aligned")]
    pub policies: Vec<String>,
    /// --aligned: a value whose source sample is further than this from the row's
    /// time is invalid.
    #[arg(long, value_name = "MS", requires = "aligned")]
    pub max_staleness_ms: Option<f64>,
    /// --aligned: drop rows holding an invalid value (else mark them invalid).
    #[arg(long, requires = "aligned")]
    pub drop_invalid: bool,
    /// --aligned: only this channel (STREAM/CHANNEL or a unique channel name).
    /// Repeatable; default every channel.
    #[arg(long = "channel", value_name = "CH", requires = "aligned")]
    pub channels: Vec<String>,
    /// Output format: raw (default), npy or csv for a block; csv (default) or jsonl
    /// with --aligned.
    #[arg(long, value_enum)]
    pub format: Option<CatFormat>,
    /// Write to this file instead of stdout.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
}

/// Run `wshard cat`: with `--aligned`, on an `s3://` URL, or on a shard file.
/// `stdout_is_terminal` keeps binary formats off a terminal unless `-o` is given.
pub fn run(
    args: CatArgs,
    stdout_is_terminal: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Status {
    if args.aligned {
        return run_aligned(args, out, err);
    }
    let block_name = args.block.as_deref().unwrap_or_default();
    let opts = CatOptions {
        format: args.format.unwrap_or_default(),
        output: args.output,
    };
    match remote_url(&args.file) {
        Some(url) => remote::cat(
            url,
            block_name,
            &args.remote,
            &opts,
            stdout_is_terminal,
            out,
            err,
        ),
        None => block::run(&args.file, block_name, &opts, stdout_is_terminal, out, err),
    }
}

/// `wshard cat --aligned`: csv or jsonl only.
fn run_aligned(args: CatArgs, out: &mut dyn Write, err: &mut dyn Write) -> Status {
    let format = match args.format {
        None | Some(CatFormat::Csv) => AlignedFormat::Csv,
        Some(CatFormat::Jsonl) => AlignedFormat::Jsonl,
        Some(_) => {
            let _ = writeln!(
                err,
                "wshard cat: --aligned writes csv or jsonl, not raw or npy"
            );
            return Status::Error;
        }
    };
    aligned::run(
        &args.file,
        &AlignedOptions {
            args: AlignedArgs {
                clock: args.clock,
                rate_hz: args.rate,
                policies: args.policies,
                max_staleness_ms: args.max_staleness_ms,
                drop_invalid: args.drop_invalid,
                channels: args.channels,
            },
            format,
            output: args.output,
        },
        out,
        err,
    )
}
