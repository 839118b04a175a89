//! `wshard cat --aligned DIR`: an episode's channels aligned on one clock, as CSV or JSON
//! Lines. `model` turns the options into the library's and reads the aligned table,
//! `render` prints it; `run` does both. `render` uses the library's table, never `model`.

mod model;
mod render;

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

pub use model::*;
pub use render::{csv_header, write_csv, write_jsonl};
use wshard::align::{AlignError, AlignedTable};
use wshard::episode_dir::EpisodeDirError;

use crate::exit_status::Status;

/// How the aligned table is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AlignedFormat {
    #[default]
    Csv,
    Jsonl,
}

/// Where and how `wshard cat --aligned` writes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AlignedOptions {
    pub args: AlignedArgs,
    pub format: AlignedFormat,
    /// A file to write instead of stdout.
    pub output: Option<PathBuf>,
}

/// The exit status an alignment error deserves: bad data is [`Status::Corrupt`]; I/O, a
/// directory that is not an episode, and options naming what does not exist are
/// [`Status::Error`].
fn status_of(e: &AlignError) -> Status {
    match e {
        AlignError::Dir(d) if d.is_io() || matches!(d, EpisodeDirError::NotAnEpisode { .. }) => {
            Status::Error
        }
        AlignError::Dir(_) => Status::Corrupt,
        _ => Status::Error,
    }
}

fn write(table: &AlignedTable, format: AlignedFormat, out: &mut dyn Write) -> io::Result<()> {
    match format {
        AlignedFormat::Csv => write_csv(table, out),
        AlignedFormat::Jsonl => write_jsonl(table, out),
    }
}

fn write_to_file(table: &AlignedTable, format: AlignedFormat, path: &Path) -> io::Result<()> {
    let mut file = BufWriter::new(File::create(path)?);
    write(table, format, &mut file)?;
    file.into_inner()
        .map_err(io::IntoInnerError::into_error)?
        .sync_all()
}

/// Run `wshard cat --aligned`.
///
/// Exit status: [`Status::Ok`]; [`Status::Corrupt`] when the episode's files are bad;
/// [`Status::Error`] for bad options, an unknown stream or channel, `linear` on a
/// non-numeric channel, and I/O errors.
pub fn run(dir: &Path, opts: &AlignedOptions, out: &mut dyn Write, err: &mut dyn Write) -> Status {
    let fail = |err: &mut dyn Write, status: Status, message: &dyn std::fmt::Display| {
        let _ = writeln!(err, "wshard cat: {}: {message}", dir.display());
        status
    };
    let align = match opts.args.options() {
        Ok(o) => o,
        Err(e) => return fail(err, Status::Error, &e),
    };
    let table = match read_aligned(dir, &align) {
        Ok(t) => t,
        Err(e) => return fail(err, status_of(&e), &e),
    };
    let written = match &opts.output {
        None => write(&table, opts.format, out),
        Some(p) => write_to_file(&table, opts.format, p)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display()))),
    };
    match written {
        Ok(()) => Status::Ok,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Status::Error,
        Err(e) => fail(err, Status::Error, &format!("writing output: {e}")),
    }
}
