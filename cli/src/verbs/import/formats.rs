//! `wshard import npz|minari|d4rl ...`: the native converters of the `wshard-import`
//! crate (DreamerV3 episode NPZ files, Minari datasets, D4RL HDF5 files) into episode
//! directories of a data directory. The data directory is locked as wshardd locks it, so
//! an import never writes beside a live daemon.
//!
//! Exit codes: 0 done, 1 a source file is bad (missing key, length mismatch, wrong rank,
//! unsupported dtype, not HDF5 / not a zip, bad or duplicate episode id), 2 usage, an
//! episode that exists already (without `--overwrite`), a locked data directory or an I/O
//! error writing.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};
use wshard::codec::Codec;
use wshard_import::{EpisodeSink, ImportError, ImportOptions, SinkOptions, WrittenEpisode};
use wshard_storage::fsio::RealFs;

use crate::exit_status::Status;

/// The words that select a native converter (anything else goes to the bag importer).
pub const VERBS: [&str; 3] = ["npz", "minari", "d4rl"];

#[derive(Debug, Parser)]
#[command(name = "wshard import", disable_version_flag = true)]
struct ImportCli {
    #[command(subcommand)]
    verb: Verb,
}

#[derive(Debug, Subcommand)]
enum Verb {
    /// DreamerV3 episode files: `*.npz` (np.savez or np.savez_compressed), one episode
    /// each; directories are searched for `*.npz` (not recursively).
    Npz {
        /// Episode files or directories of them.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// A Minari dataset (HDF5 data format): its directory, its `data/` folder or its
    /// `main_data.hdf5`; one episode per `episode_N` group.
    Minari {
        /// The dataset.
        input: PathBuf,
        #[command(flatten)]
        common: Common,
    },
    /// A D4RL HDF5 file (observations, actions, rewards, terminals, timeouts, optional
    /// next_observations and infos/*), split into episodes at terminals | timeouts.
    D4rl {
        /// The HDF5 file.
        input: PathBuf,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Debug, Args)]
struct Common {
    /// The data directory to write the episode directories into (created when missing).
    #[arg(long, value_name = "DIR")]
    data_dir: PathBuf,
    /// Tick rate of the episodes in Hz (default: 1, no source format records one).
    #[arg(long, value_name = "HZ")]
    hz: Option<f64>,
    /// Episode ids `{PREFIX}-{index:06}` (default: the file stems for npz, the dataset id
    /// for minari, the file stem for d4rl).
    #[arg(long, value_name = "PREFIX")]
    prefix: Option<String>,
    /// The episodes' env_id (default: minari's env_spec id, else empty).
    #[arg(long, value_name = "ID")]
    env_id: Option<String>,
    /// Replace episode directories that exist already (else refused, exit 2).
    #[arg(long)]
    overwrite: bool,
    /// Block codec: none, lz4, zstd (level 3, the default) or zstd-N.
    #[arg(long, value_name = "CODEC", default_value = "zstd")]
    codec: String,
    /// Most steps per chunk file (lowered so that a chunk stays under 128 MiB).
    #[arg(long, value_name = "N", default_value_t = wshard_import::sink::DEFAULT_CHUNK_STEPS)]
    chunk_steps: u64,
    /// No line per episode, only the summary.
    #[arg(long)]
    quiet: bool,
}

/// True when `wshard import ARGS...` selects a native converter.
#[must_use]
pub fn is_native(args: &[OsString]) -> bool {
    args.first()
        .and_then(|a| a.to_str())
        .is_some_and(|a| VERBS.contains(&a))
}

/// An option value `wshard import` refuses before reading anything.
#[derive(Debug, thiserror::Error)]
enum BadOption {
    #[error("--codec {text}: {source}")]
    Codec {
        text: String,
        source: wshard::FormatError,
    },
    #[error("--hz {0}: must be a positive rate")]
    Hz(f64),
    #[error("--chunk-steps must be at least 1")]
    ChunkSteps,
}

fn options(c: &Common) -> Result<(ImportOptions, SinkOptions), BadOption> {
    let codec = Codec::parse(&c.codec).map_err(|source| BadOption::Codec {
        text: c.codec.clone(),
        source,
    })?;
    if let Some(hz) = c.hz {
        if !(hz.is_finite() && hz > 0.0) {
            return Err(BadOption::Hz(hz));
        }
    }
    if c.chunk_steps == 0 {
        return Err(BadOption::ChunkSteps);
    }
    Ok((
        ImportOptions {
            hz: c.hz,
            prefix: c.prefix.clone(),
            env_id: c.env_id.clone(),
        },
        SinkOptions {
            overwrite: c.overwrite,
            codec,
            chunk_steps: c.chunk_steps,
        },
    ))
}

fn status_of(e: &ImportError) -> Status {
    if e.is_bad_input() {
        Status::Corrupt
    } else {
        Status::Error
    }
}

fn report(written: &[WrittenEpisode], data_dir: &Path, quiet: bool, out: &mut dyn Write) {
    if !quiet {
        for w in written {
            let _ = writeln!(out, "{}: {} steps, {} chunks", w.id, w.steps, w.chunks);
        }
    }
    let steps: u64 = written.iter().map(|w| w.steps).sum();
    let _ = writeln!(
        out,
        "imported {} episodes ({steps} steps) into {}",
        written.len(),
        data_dir.display()
    );
}

/// Run `wshard import npz|minari|d4rl ...` (`args` starts with the verb).
pub fn run(args: &[OsString], out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let argv = std::iter::once(OsString::from("wshard import")).chain(args.iter().cloned());
    let cli = match ImportCli::try_parse_from(argv) {
        Ok(c) => c,
        Err(e) => {
            let text = e.render().to_string();
            return if e.use_stderr() {
                let _ = write!(err, "{text}");
                Status::Error.code()
            } else {
                let _ = write!(out, "{text}");
                Status::Ok.code()
            };
        }
    };
    let common = match &cli.verb {
        Verb::Npz { common, .. } | Verb::Minari { common, .. } | Verb::D4rl { common, .. } => {
            common
        }
    };
    let (opts, sink_opts) = match options(common) {
        Ok(o) => o,
        Err(m) => {
            let _ = writeln!(err, "wshard import: {m}");
            return Status::Error.code();
        }
    };
    if let Err(e) = std::fs::create_dir_all(&common.data_dir) {
        let _ = writeln!(
            err,
            "wshard import: cannot create {}: {e}",
            common.data_dir.display()
        );
        return Status::Error.code();
    }
    let _lock = match wshard_recorder::runtime::lock::acquire(&common.data_dir) {
        Ok(l) => l,
        Err(e) => {
            let _ = writeln!(err, "wshard import: {e}");
            return Status::Error.code();
        }
    };
    let fs = RealFs;
    let sink = match EpisodeSink::new(&fs, &common.data_dir, sink_opts) {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(err, "wshard import: {e}");
            return status_of(&e).code();
        }
    };
    let r = match &cli.verb {
        Verb::Npz { inputs, .. } => wshard_import::dreamer::import_npz(&sink, inputs, &opts),
        Verb::Minari { input, .. } => wshard_import::minari::import_minari(&sink, input, &opts),
        Verb::D4rl { input, .. } => wshard_import::d4rl::import_d4rl(&sink, input, &opts),
    };
    match r {
        Ok(written) => {
            report(&written, &common.data_dir, common.quiet, out);
            Status::Ok.code()
        }
        Err(e) => {
            let _ = writeln!(err, "wshard import: {e}");
            status_of(&e).code()
        }
    }
}
