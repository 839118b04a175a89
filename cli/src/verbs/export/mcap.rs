//! `wshard export mcap`: the MCAP export's arguments and run (the work is
//! `wshard_export::mcap`).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use wshard_export::mcap::{
    export_resolved, resolve_inputs, EpisodeMcap, ImageMode, McapCompression, McapError,
    McapOptions, DEFAULT_CHUNK_SIZE, DEFAULT_JPEG_QUALITY,
};

use super::failure::{error_status, failed};
use crate::exit_status::Status;

/// `--compression`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CompressionArg {
    Zstd,
    Lz4,
    None,
}

/// `--images`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ImagesArg {
    /// foxglove.RawImage with the recorded pixels (rgb8, mono8, 16UC1, 32FC1).
    Raw,
    /// foxglove.CompressedImage JPEG for colour and mono; depth stays lossless.
    Jpeg,
    /// foxglove.CompressedImage PNG (lossless); f32 depth stays raw.
    Png,
}

/// Arguments of `wshard export mcap`.
#[derive(Debug, clap::Args)]
pub struct McapArgs {
    /// Episode directories (not one still recording), or data directories holding them
    /// (then every finished episode in it).
    #[arg(required = true, value_name = "EPISODE_OR_DATA_DIR")]
    pub inputs: Vec<PathBuf>,
    /// The output directory: gets `<episode>.mcap` per episode, and .wshard-export.json
    /// listing them. Must be empty or absent unless --overwrite.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: PathBuf,
    /// Chunk compression.
    #[arg(long, value_enum, default_value = "zstd")]
    pub compression: CompressionArg,
    /// Target chunk size in bytes (before compression).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_CHUNK_SIZE,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub chunk_size: u64,
    /// How picture channels are written.
    #[arg(long, value_enum, default_value = "raw")]
    pub images: ImagesArg,
    /// JPEG quality of --images jpeg.
    #[arg(long, value_name = "1-100", default_value_t = DEFAULT_JPEG_QUALITY,
          value_parser = clap::value_parser!(u8).range(1..=100))]
    pub jpeg_quality: u8,
    /// Replace the files of the exported episodes in an output directory exports made (the
    /// other episodes' files stay); a directory holding a file no export wrote is refused.
    #[arg(long)]
    pub overwrite: bool,
    /// Episodes exported at once (default: the available cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub workers: Option<u32>,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

impl McapArgs {
    fn options(&self) -> McapOptions {
        McapOptions {
            compression: match self.compression {
                CompressionArg::Zstd => McapCompression::Zstd,
                CompressionArg::Lz4 => McapCompression::Lz4,
                CompressionArg::None => McapCompression::None,
            },
            chunk_size: self.chunk_size,
            images: match self.images {
                ImagesArg::Raw => ImageMode::Raw,
                ImagesArg::Jpeg => ImageMode::Jpeg,
                ImagesArg::Png => ImageMode::Png,
            },
            jpeg_quality: self.jpeg_quality,
            overwrite: self.overwrite,
            workers: self.workers.map_or_else(
                || std::thread::available_parallelism().map_or(1, usize::from),
                |w| usize::try_from(w).unwrap_or(1),
            ),
        }
    }
}

fn report(out: &mut impl Write, r: &EpisodeMcap) {
    let _ = writeln!(
        out,
        "{}: {} ({} channels, {} messages, {} bytes)",
        r.episode_id,
        r.file.display(),
        r.channels,
        r.messages,
        r.bytes
    );
}

/// Run the export; the exit code: 0 every episode written, 1 an episode could not be read
/// or holds data MCAP cannot take, 2 usage or I/O error.
pub fn run(args: &McapArgs, out: &mut impl Write, err: &mut impl Write) -> u8 {
    let opts = args.options();
    // The count for the live progress line (a terminal only).
    let resolved = match resolve_inputs(&args.inputs) {
        Ok(r) => r,
        Err(e) => {
            let e = McapError::from(e);
            return failed(err, "mcap", &e, e.is_bad_input());
        }
    };
    let total = resolved.episodes.len();
    let done = AtomicUsize::new(0);
    let live = !args.quiet && std::io::stderr().is_terminal();
    let progress = |dir: &Path, _: &Result<EpisodeMcap, McapError>| {
        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
        if live {
            eprint!("\r\x1b[2K[{n}/{total}] {}", dir.display());
            if n == total {
                eprintln!();
            }
        }
    };
    let export = match export_resolved(resolved, &args.output, &opts, &progress) {
        Ok(e) => e,
        Err(e) => return failed(err, "mcap", &e, e.is_bad_input()),
    };
    if !args.quiet {
        for s in &export.skipped {
            let _ = writeln!(err, "skipped {}: {}", s.dir.display(), s.reason);
        }
    }
    let mut status = Status::Ok;
    for (_, r) in &export.episodes {
        match r {
            Ok(r) if !args.quiet => report(out, r),
            Ok(_) => {}
            Err(e) => {
                let _ = writeln!(err, "wshard export mcap: {e}");
                status = match (status, error_status(e.is_bad_input())) {
                    (Status::Error, _) | (_, Status::Error) => Status::Error,
                    _ => Status::Corrupt,
                };
            }
        }
    }
    status.code()
}
