//! `wshard cat FILE BLOCK`: one block's decoded (uncompressed, CRC-checked) bytes, as they
//! are (`raw`), as a NumPy `.npy` file with the dtype and `[T, *shape]` from the episode's
//! meta blocks (`npy`), or as one CSV row per timestep (`csv`).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use wshard::consts::role;
use wshard::entry::content_type;
use wshard::episode::DType;
use wshard::read::{ReadAt, ShardReader};

use super::csv::write_csv;
use crate::exit_status::Status;
use crate::shard_view::describe::error_about;
use crate::shard_view::episode_view::EpisodeView;
use wshard_export::npy;

/// How `wshard cat` writes the block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum CatFormat {
    /// The decoded bytes as they are.
    #[default]
    Raw,
    /// A NumPy `.npy` (version 1.0) file.
    Npy,
    /// A header row, then one row per timestep.
    Csv,
    /// One JSON object per row (`--aligned` only).
    Jsonl,
}

impl CatFormat {
    fn is_binary(self) -> bool {
        matches!(self, Self::Raw | Self::Npy)
    }
}

/// Where and how `wshard cat` writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CatOptions {
    pub format: CatFormat,
    /// A file to write instead of stdout.
    pub output: Option<PathBuf>,
}

/// What the file says a block holds.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Holds {
    /// A `meta/*` block or one with the JSON content type.
    Json,
    /// `rows` steps of `step_shape` elements of `dtype`.
    Tensor {
        dtype: DType,
        step_shape: Vec<u64>,
        rows: u64,
    },
    /// Nothing describes it: written as bytes.
    Bytes,
}

/// A failure, already worded, with its exit status. An empty message is not printed (a
/// reader that closed the pipe needs no explanation).
struct Failure(Status, String);

fn output_failed(e: &io::Error) -> Failure {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Failure(Status::Error, String::new())
    } else {
        Failure(Status::Error, format!("writing output: {e}"))
    }
}

type Block = (Vec<u8>, Holds, Option<String>);

fn failure_at(path: &Path, e: &wshard::FormatError) -> Failure {
    let status = if e.is_io() {
        Status::Error
    } else {
        Status::Corrupt
    };
    Failure(status, error_about(path, e))
}

fn read_block(path: &Path, name: &str) -> Result<Block, Failure> {
    let reader = ShardReader::open(path).map_err(|e| failure_at(path, &e))?;
    block_from(&reader, path, name)
}

/// Block `name` of an opened shard (`path` names it in messages) and what it holds.
fn block_from<R: ReadAt>(
    reader: &ShardReader<R>,
    path: &Path,
    name: &str,
) -> Result<Block, Failure> {
    let here = |e: &wshard::FormatError| failure_at(path, e);
    let Ok((i, entry)) = reader.entry(name) else {
        let names: Vec<&str> = reader.index().names().collect();
        return Err(Failure(
            Status::Error,
            format!("block `{name}` not found (blocks: {})", names.join(", ")),
        ));
    };
    let json = name.starts_with("meta/") || entry.content_type == content_type::JSON;
    let data = reader.read_entry(i).map_err(|e| {
        let Failure(status, text) = here(&e);
        let prefix = format!("block `{name}`: ");
        let text = text.strip_prefix(&prefix).unwrap_or(&text).to_owned();
        Failure(status, format!("block `{name}`: {text}"))
    })?;
    if json {
        return Ok((data, Holds::Json, None));
    }
    if reader.header().role != role::WSHARD {
        return Ok((data, Holds::Bytes, None));
    }
    let view = EpisodeView::read(reader);
    let Some(t) = view.tensors.get(name) else {
        return Ok((data, Holds::Bytes, None));
    };
    let dtype = DType::parse(&t.dtype).map_err(|e| Failure(Status::Corrupt, e.to_string()))?;
    let step = t
        .step_shape
        .iter()
        .try_fold(dtype.size() as u64, |a, &d| a.checked_mul(d));
    let len = data.len() as u64;
    let rows = match (step, view.length) {
        (Some(s), Some(t)) if s.checked_mul(t) == Some(len) => Some(t),
        (Some(s), None) if s > 0 && len % s == 0 => Some(len / s),
        (Some(0), None) if len == 0 => Some(0),
        _ => None,
    };
    let Some(rows) = rows else {
        return Err(Failure(
            Status::Corrupt,
            format!(
                "block `{name}`: {len} bytes do not hold {} of {} (use --format raw for the bytes)",
                t.shape_label(view.length),
                t.dtype
            ),
        ));
    };
    let note = (dtype == DType::BF16).then(|| {
        format!("block `{name}` is bf16, which NumPy lacks: the .npy holds its raw bits as '<u2' (view them with ml_dtypes.bfloat16, or shift left by 16 into float32)")
    });
    Ok((
        data,
        Holds::Tensor {
            dtype,
            step_shape: t.step_shape.clone(),
            rows,
        },
        note,
    ))
}

fn write_out(
    sink: &mut dyn Write,
    name: &str,
    format: CatFormat,
    data: &[u8],
    holds: &Holds,
) -> Result<(), Failure> {
    let io_fail = |e: io::Error| output_failed(&e);
    let not_json = || {
        Failure(
            Status::Error,
            format!("block `{name}` is JSON; use --format raw"),
        )
    };
    match (format, holds) {
        (CatFormat::Raw, _) => sink.write_all(data).map_err(io_fail),
        (CatFormat::Jsonl, _) => Err(Failure(
            Status::Error,
            "--format jsonl is for --aligned".to_owned(),
        )),
        (_, Holds::Json) => Err(not_json()),
        (CatFormat::Npy, Holds::Bytes) => {
            let h = npy::header("|u1", &[data.len() as u64])
                .map_err(|e| Failure(Status::Error, e.to_string()))?;
            sink.write_all(&h)
                .and_then(|()| sink.write_all(data))
                .map_err(io_fail)
        }
        (
            CatFormat::Npy,
            Holds::Tensor {
                dtype,
                step_shape,
                rows,
            },
        ) => {
            let (descr, _) = npy::descr(dtype.code()).unwrap_or(("|u1", false));
            let shape: Vec<u64> = std::iter::once(*rows)
                .chain(step_shape.iter().copied())
                .collect();
            let h =
                npy::header(descr, &shape).map_err(|e| Failure(Status::Error, e.to_string()))?;
            sink.write_all(&h)
                .and_then(|()| sink.write_all(data))
                .map_err(io_fail)
        }
        (CatFormat::Csv, Holds::Bytes) => write_csv(sink, name, "u8", 1, 1, data).map_err(io_fail),
        (
            CatFormat::Csv,
            Holds::Tensor {
                dtype, step_shape, ..
            },
        ) => {
            let per_step = step_shape
                .iter()
                .try_fold(1usize, |a, &d| a.checked_mul(usize::try_from(d).ok()?))
                .filter(|&n| n > 0)
                .ok_or_else(|| {
                    Failure(
                        Status::Error,
                        format!("block `{name}` has no values per step to write as CSV"),
                    )
                })?;
            write_csv(sink, name, dtype.code(), dtype.size(), per_step, data).map_err(io_fail)
        }
    }
}

fn cat(
    path: &Path,
    name: &str,
    opts: &CatOptions,
    block: Result<Block, Failure>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), Failure> {
    let (data, holds, note) = block?;
    if let (Some(note), CatFormat::Npy) = (note, opts.format) {
        let _ = writeln!(err, "wshard cat: {}: {note}", path.display());
    }
    match &opts.output {
        None => {
            write_out(out, name, opts.format, &data, &holds)?;
            out.flush().map_err(|e| output_failed(&e))
        }
        Some(p) => {
            let fail = |e: io::Error| Failure(Status::Error, format!("{}: {e}", p.display()));
            let mut file = BufWriter::new(File::create(p).map_err(fail)?);
            write_out(&mut file, name, opts.format, &data, &holds)?;
            file.into_inner()
                .map_err(|e| fail(e.into_error()))?
                .sync_all()
                .map_err(fail)
        }
    }
}

/// Run `wshard cat`. `stdout_is_terminal` keeps binary formats off a terminal unless `-o`
/// is given.
///
/// Exit status: [`Status::Ok`]; [`Status::Corrupt`] when the file or the block is corrupt
/// (bad CRC, does not decompress, length disagrees with its shape); [`Status::Error`] for a
/// block that does not exist, a JSON block asked for as npy/csv, a binary format to a
/// terminal, and I/O errors.
pub fn run(
    path: &Path,
    block: &str,
    opts: &CatOptions,
    stdout_is_terminal: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Status {
    if let Some(refused) = refuse(opts, stdout_is_terminal, err) {
        return refused;
    }
    finish(path, block, opts, read_block(path, block), out, err)
}

/// `wshard cat` on a shard already opened (a remote one: only its index, meta blocks and
/// the block asked for are read); `label` names it in messages. Exit status as [`run`].
pub fn run_reader<R: ReadAt>(
    reader: &ShardReader<R>,
    label: &Path,
    block: &str,
    opts: &CatOptions,
    stdout_is_terminal: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Status {
    if let Some(refused) = refuse(opts, stdout_is_terminal, err) {
        return refused;
    }
    finish(
        label,
        block,
        opts,
        block_from(reader, label, block),
        out,
        err,
    )
}

fn finish(
    path: &Path,
    block: &str,
    opts: &CatOptions,
    got: Result<Block, Failure>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Status {
    match cat(path, block, opts, got, out, err) {
        Ok(()) => Status::Ok,
        Err(Failure(status, message)) => {
            if !message.is_empty() {
                let _ = writeln!(err, "wshard cat: {}: {message}", path.display());
            }
            status
        }
    }
}

/// The options refused before anything is read.
fn refuse(opts: &CatOptions, stdout_is_terminal: bool, err: &mut dyn Write) -> Option<Status> {
    if opts.format == CatFormat::Jsonl {
        let _ = writeln!(
            err,
            "wshard cat: --format jsonl is for --aligned; a block is written as raw, npy or csv"
        );
        return Some(Status::Error);
    }
    if opts.format.is_binary() && opts.output.is_none() && stdout_is_terminal {
        let _ = writeln!(
            err,
            "wshard cat: refusing to write binary data to a terminal: use -o FILE, redirect stdout, or --format csv"
        );
        return Some(Status::Error);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cat_keeps_binary_off_a_terminal() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let opts = CatOptions {
            format: CatFormat::Npy,
            output: None,
        };
        let status = run(
            Path::new("x.wshard"),
            "reward",
            &opts,
            true,
            &mut out,
            &mut err,
        );
        assert_eq!(status, Status::Error);
        assert!(String::from_utf8(err).unwrap().contains("refusing"));
        assert!(out.is_empty());
        let csv = CatOptions {
            format: CatFormat::Csv,
            output: None,
        };
        let mut err = Vec::new();
        // CSV may go to a terminal: this fails only because the file does not exist.
        let status = run(
            Path::new("/nonexistent/x.wshard"),
            "reward",
            &csv,
            true,
            &mut out,
            &mut err,
        );
        assert_eq!(status, Status::Error);
        assert!(String::from_utf8(err)
            .unwrap()
            .contains("/nonexistent/x.wshard"));
    }
}
