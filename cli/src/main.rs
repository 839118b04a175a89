//! `wshard`: the operator CLI. Parses arguments and dispatches to the `wshard_cli` library.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use wshard_cli::exit_status::Status;
use wshard_cli::output::closed_pipe::EndOnClosedPipe;
use wshard_cli::store::remote;
use wshard_cli::verbs::cat::remote::cat as remote_cat;
use wshard_cli::verbs::cat::{aligned, block as cat};
use wshard_cli::verbs::inspect::remote::inspect as remote_inspect;
use wshard_cli::verbs::inspect::{episode_dir as inspect_dir, journal as peek, shard as inspect};
use wshard_cli::verbs::{
    annotate, bridge, cache as cache_cmd, close, dataset, doctor, episodes, export, import,
    metrics, publish, query, recover, status, verify,
};

/// Inspect, verify and recover WShard files and wshardd data directories.
///
/// Exit codes: 0 all good, 1 a file is corrupt, 2 usage or I/O error; `recover` also
/// exits 3 when data was (or would be) lost, and 1 when recovery itself failed; `status`,
/// `episodes`, `close` and `metrics` exit 1 when the daemon refuses (unknown episode,
/// permission denied) and 2 when it cannot be reached; `bridge` likewise for the ROS
/// bridge; `import bag` exits with the bag importer's code (2 when it cannot be run).
/// Output to a pipe whose reader has gone (`wshard cat ... | head`) ends any verb quietly,
/// killed by SIGPIPE as Unix tools are (status 141 in a shell).
#[derive(Debug, Parser)]
#[command(name = "wshard", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Status(status::StatusArgs),
    Episodes(episodes::EpisodesArgs),
    Close(close::CloseArgs),
    Metrics(metrics::MetricsArgs),
    /// Add an operator annotation to an episode (through the daemon; admin only).
    Annotate(annotate::AnnotateArgs),
    /// Control a running ROS bridge (wshard-ros-bridge) through its control socket:
    /// start, stop, abort, annotate an episode, or show its status and counters.
    ///
    /// Exit codes: 0 done, 1 the bridge refused or failed (NOT_RECORDING,
    /// ALREADY_RECORDING, FAILED, DAEMON), 2 usage, no bridge, timeout or a bad reply.
    Bridge {
        #[command(subcommand)]
        verb: bridge::BridgeVerb,
        #[command(flatten)]
        options: bridge::BridgeOptions,
    },
    /// Export episodes for training and viewing: `webdataset` (training shards), `lerobot`
    /// (a LeRobotDataset v3), `mcap` (one MCAP per episode, for Foxglove, PlotJuggler,
    /// rerun). Exit 0 done, 1 an episode could not be read, 2 usage or I/O error.
    Export {
        #[command(subcommand)]
        verb: export::ExportVerb,
    },
    /// Import episodes into a data directory: `npz` (DreamerV3 episode files), `minari`
    /// (a Minari HDF5 dataset), `d4rl` (a D4RL HDF5 file), natively (exit 0 done, 1 bad
    /// source file, 2 usage, existing episode or I/O error); `bag` or anything else: ROS
    /// bags (ROS 1 .bag, rosbag2 sqlite3 or MCAP) through `python3 -m
    /// wshard_ros.bag_import ARGS...` (python from $WSHARD_PYTHON, else python3), exiting
    /// with its code (2 when python or the wshard_ros package is missing).
    /// `wshard import --help` lists the formats; `wshard import FORMAT --help` their options.
    #[command(disable_help_flag = true)]
    Import {
        /// `npz|minari|d4rl ...`, `bag ...`, or passed to the bag importer untouched, e.g.
        /// BAG... --mapping M.toml --data-dir DIR.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<std::ffi::OsString>,
    },
    /// Publish finished episodes (complete, interrupted, recovered) of a data directory to an
    /// S3-compatible store as a dataset version: content-addressed blobs, an immutable
    /// version manifest, latest.json moved by compare-and-swap. Credentials (S3) from
    /// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, else the profile AWS_PROFILE of the
    /// shared credentials file (~/.aws/credentials). Exit 0 published, 1 failed, 2 usage,
    /// 3 another publisher moved latest.json first.
    Publish(publish::PublishArgs),
    /// Run SQL with DuckDB on the catalog (one row per episode stream) of the latest
    /// version of one dataset (--dataset) or of every dataset (--all, the default), in
    /// place on the store. Needs python3 with duckdb and duckdb-extension-httpfs 1.5.5.
    /// Exit 0 ok, 1 failed (store, no catalog, SQL error), 2 usage or setup.
    Query(query::QueryArgs),
    /// The local blob cache of remote reads and pulls: `stats`, `gc --limit BYTES`.
    Cache {
        #[command(subcommand)]
        verb: cache_cmd::CacheVerb,
    },
    /// Datasets on the store: `list` (with their latest version), `show WS/NAME[@VERSION]`
    /// (episodes, files, sizes, status), `pull WS/NAME[@VERSION] DIR` (through the cache,
    /// every file hash-checked). Exit 0 ok, 1 failed, 2 usage or setup.
    Dataset {
        #[command(subcommand)]
        verb: dataset::DatasetVerb,
    },
    /// Check the object-store setup: endpoint, credentials, bucket, write, conditional
    /// puts. One line per check; exit 1 when any failed.
    Doctor(doctor::DoctorArgs),
    /// Print a shard's header and one row per block (name, dtype, shape, codec, sizes, CRC),
    /// a journal's (`*.wal`) records and corrupt regions, or an episode directory's streams
    /// (clock, rate, channels, steps, first/last t_ns, status) and events. An s3:// URL
    /// (`s3://BUCKET/KEY` or `s3://BUCKET/[PREFIX/]datasets/WS/NAME[@VERSION]/EPISODE[/FILE]`)
    /// is read with range requests: the header, index and meta blocks only.
    Inspect {
        /// The shard or journal file, an episode directory, or an s3:// URL.
        file: PathBuf,
        #[command(flatten)]
        remote: remote::RemoteArgs,
        /// Also print the JSON of the meta/* blocks (the manifest JSON for a manifest; the
        /// segment header JSON for a journal).
        #[arg(short, long)]
        verbose: bool,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// Show the file as a journal (the default for `*.wal` and for files that are not
        /// shards but hold journal records). On a shard, the normal view.
        #[arg(long)]
        peek: bool,
    },
    /// Decode every block and check every CRC; check episode structure, manifests and the
    /// SHA-256 of their chunks. Directories are searched recursively for *.wshard files.
    Verify {
        /// Files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print one JSON object per file per line.
        #[arg(long)]
        json: bool,
        /// Also check every block's length against meta/channels and T, `done` values,
        /// timestamps, and a manifest's chunks against its entries and each other.
        #[arg(long)]
        deep: bool,
    },
    /// Recover an episode directory (DATA_DIR/EPISODE, single- or multi-stream) or every
    /// episode of a data directory offline, with the daemon's recovery code. A dry run
    /// unless --apply. In a data directory, directories that are not episodes are left
    /// alone and listed; a stream folder or the quarantine directory is refused.
    ///
    /// Exit codes: 0 nothing lost (or nothing to do), 3 data lost (corrupt regions
    /// discarded, or files that may hold data quarantined), 1 recovery failed, 2 usage or
    /// I/O error, a refused directory, or the data directory is in use by a live wshardd.
    Recover {
        /// An episode directory or a data directory.
        dir: PathBuf,
        /// Change the files (takes the data directory lock). Without it nothing is changed.
        #[arg(long)]
        apply: bool,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write one block's decoded bytes: as stored (raw), as a NumPy .npy file, or as CSV.
    /// FILE may be an s3:// URL: its index and the one block are read with range requests
    /// (or from the blob cache). With --aligned, an episode directory's channels aligned on one clock (a stream's
    /// timestamps or a fixed rate) as CSV or JSON Lines, each value with its validity and
    /// source timestamp.
    Cat {
        /// The shard file or s3:// URL, or with --aligned the episode directory.
        file: PathBuf,
        #[command(flatten)]
        remote: remote::RemoteArgs,
        /// The block name, e.g. signal/obs (not with --aligned).
        #[arg(required_unless_present = "aligned", conflicts_with = "aligned")]
        block: Option<String>,
        /// Align the channels of the episode directory FILE on one clock.
        #[arg(long)]
        aligned: bool,
        /// --aligned: one row per step of this stream.
        #[arg(
            long,
            value_name = "STREAM",
            requires = "aligned",
            conflicts_with = "rate"
        )]
        clock: Option<String>,
        /// --aligned: rows at a fixed rate from the episode's first to last timestamp.
        #[arg(long, value_name = "HZ", requires = "aligned")]
        rate: Option<f64>,
        /// --aligned: a channel's policy, hold (default), nearest or linear; CH is
        /// STREAM/CHANNEL or a channel name only one stream has. Repeatable.
        #[arg(long = "policy", value_name = "CH=POLICY", requires = "aligned")]
        policies: Vec<String>,
        /// --aligned: a value whose source sample is further than this from the row's
        /// time is invalid.
        #[arg(long, value_name = "MS", requires = "aligned")]
        max_staleness_ms: Option<f64>,
        /// --aligned: drop rows holding an invalid value (else mark them invalid).
        #[arg(long, requires = "aligned")]
        drop_invalid: bool,
        /// --aligned: only this channel (STREAM/CHANNEL or a unique channel name).
        /// Repeatable; default every channel.
        #[arg(long = "channel", value_name = "CH", requires = "aligned")]
        channels: Vec<String>,
        /// Output format: raw (default), npy or csv for a block; csv (default) or jsonl
        /// with --aligned.
        #[arg(long, value_enum)]
        format: Option<cat::CatFormat>,
        /// Write to this file instead of stdout.
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
    },
}

/// The `s3://` URL a path argument holds, if it is one.
fn remote_url(file: &std::path::Path) -> Option<&str> {
    file.to_str().filter(|s| wshard_publish::url::is_remote(s))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let stdout = std::io::stdout();
    let stdout_is_terminal = stdout.is_terminal();
    // A reader that closed the pipe ends the command quietly, whatever the verb.
    let mut out = EndOnClosedPipe(stdout.lock());
    let mut err = std::io::stderr().lock();
    let code = match cli.command {
        Command::Status(args) => status::run(args, &mut out, &mut err),
        Command::Episodes(args) => episodes::run(args, &mut out, &mut err),
        Command::Close(args) => close::run(args, &mut out, &mut err),
        Command::Metrics(args) => metrics::run(args, &mut out, &mut err),
        Command::Annotate(args) => annotate::run(args, &mut out, &mut err),
        Command::Publish(args) => publish::run(&args, &mut out, &mut err),
        Command::Query(args) => query::run(&args, &mut out, &mut err),
        Command::Doctor(args) => doctor::run(&args, &mut out),
        Command::Cache { verb } => cache_cmd::run(&verb, &mut out, &mut err).code(),
        Command::Dataset { verb } => dataset::run(&verb, &mut out, &mut err),
        Command::Export { verb } => export::run(&verb, &mut out, &mut err),
        Command::Bridge { verb, options } => bridge::run(&verb, &options, &mut out, &mut err),
        // The bag importer writes to the terminal itself (its progress bar).
        Command::Import { args } => import::run(&args, &mut out, &mut err),
        Command::Inspect {
            file,
            remote: remote_args,
            verbose,
            json,
            peek: as_journal,
        } => if let Some(url) = remote_url(&file) {
            remote_inspect(
                url,
                &remote_args,
                inspect::InspectOptions { verbose, json },
                &mut out,
                &mut err,
            )
        } else if file.is_dir() {
            inspect_dir::run(
                &file,
                inspect_dir::InspectDirOptions { json },
                &mut out,
                &mut err,
            )
        } else if peek::is_journal(&file, as_journal) {
            peek::run(
                &file,
                peek::PeekOptions { verbose, json },
                &mut out,
                &mut err,
            )
        } else {
            inspect::run(
                &file,
                inspect::InspectOptions { verbose, json },
                &mut out,
                &mut err,
            )
        }
        .code(),
        Command::Verify { paths, json, deep } => verify::run(
            &paths,
            verify::VerifyOptions { json, deep },
            &mut out,
            &mut err,
        )
        .code(),
        Command::Recover { dir, apply, json } => recover::run(
            &dir,
            recover::RecoverOptions { apply, json },
            &mut out,
            &mut err,
        )
        .code(),
        Command::Cat {
            file,
            block: _,
            remote: _,
            aligned: true,
            clock,
            rate,
            policies,
            max_staleness_ms,
            drop_invalid,
            channels,
            format,
            output,
        } => {
            let format = match format {
                None | Some(cat::CatFormat::Csv) => Ok(aligned::AlignedFormat::Csv),
                Some(cat::CatFormat::Jsonl) => Ok(aligned::AlignedFormat::Jsonl),
                Some(_) => Err(()),
            };
            match format {
                Ok(format) => aligned::run(
                    &file,
                    &aligned::AlignedOptions {
                        args: aligned::AlignedArgs {
                            clock,
                            rate_hz: rate,
                            policies,
                            max_staleness_ms,
                            drop_invalid,
                            channels,
                        },
                        format,
                        output,
                    },
                    &mut out,
                    &mut err,
                )
                .code(),
                Err(()) => {
                    let _ = writeln!(
                        err,
                        "wshard cat: --aligned writes csv or jsonl, not raw or npy"
                    );
                    Status::Error.code()
                }
            }
        }
        Command::Cat {
            file,
            remote: remote_args,
            block,
            format,
            output,
            ..
        } if remote_url(&file).is_some() => remote_cat(
            remote_url(&file).unwrap_or_default(),
            block.as_deref().unwrap_or_default(),
            &remote_args,
            &cat::CatOptions {
                format: format.unwrap_or_default(),
                output,
            },
            stdout_is_terminal,
            &mut out,
            &mut err,
        )
        .code(),
        Command::Cat {
            file,
            block,
            format,
            output,
            ..
        } => cat::run(
            &file,
            block.as_deref().unwrap_or_default(),
            &cat::CatOptions {
                format: format.unwrap_or_default(),
                output,
            },
            stdout_is_terminal,
            &mut out,
            &mut err,
        )
        .code(),
    };
    ExitCode::from(code)
}
