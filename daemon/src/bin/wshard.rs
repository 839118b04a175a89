//! `wshard`: the operator CLI. Parses arguments and dispatches to `wshard_recorder::cli`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use wshard_recorder::cli::{inspect, verify};

/// Inspect and verify WShard files.
///
/// Exit codes: 0 all good, 1 a file is corrupt, 2 usage or I/O error.
#[derive(Debug, Parser)]
#[command(name = "wshard", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print a shard's header and one row per block (name, dtype, shape, codec, sizes, CRC).
    Inspect {
        /// The shard file.
        file: PathBuf,
        /// Also print the JSON of the meta/* blocks (the manifest JSON for a manifest).
        #[arg(short, long)]
        verbose: bool,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
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
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr().lock();
    let status = match cli.command {
        Command::Inspect {
            file,
            verbose,
            json,
        } => inspect::run(
            &file,
            inspect::InspectOptions { verbose, json },
            &mut out,
            &mut err,
        ),
        Command::Verify { paths, json } => {
            verify::run(&paths, verify::VerifyOptions { json }, &mut out, &mut err)
        }
    };
    ExitCode::from(status.code())
}
