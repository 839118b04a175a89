//! The command line: `wshard-bench <benchmark> [options]`.

use std::path::PathBuf;

use crate::error::{fail, Result};

pub const USAGE: &str = "\
usage: wshard-bench <benchmark> [options]

benchmarks:
  format    the wshard format library: write/read throughput per codec against a plain
            write, single-block read cost vs block count, mmap zero-copy views

format options:
  --size-mib N    payload size of each workload episode in MiB (default 1024; 64 = smoke run)
  --chunk-mib N   payload per chunk file in MiB (default 64)
  --reps N        repetitions of each throughput case; medians are reported (default 3)
  --dir PATH      scratch directory (default: the system temp dir); files are deleted after
  -h, --help      this text";

/// What to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Help,
    Format(FormatArgs),
}

/// Options of `format`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatArgs {
    pub size_mib: u64,
    pub chunk_mib: u64,
    pub reps: usize,
    pub dir: Option<PathBuf>,
}

impl Default for FormatArgs {
    fn default() -> Self {
        Self {
            size_mib: 1024,
            chunk_mib: 64,
            reps: 3,
            dir: None,
        }
    }
}

/// Parse the arguments after the program name.
///
/// # Errors
/// An unknown benchmark or option, a missing or malformed value.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Command> {
    let mut it = args.into_iter();
    let Some(bench) = it.next() else {
        return Ok(Command::Help);
    };
    match bench.as_str() {
        "format" | "--format" => parse_format(it),
        "help" | "-h" | "--help" => Ok(Command::Help),
        other => Err(fail(format!("unknown benchmark `{other}`\n\n{USAGE}"))),
    }
}

fn parse_format(mut it: impl Iterator<Item = String>) -> Result<Command> {
    let mut a = FormatArgs::default();
    while let Some(arg) = it.next() {
        let (key, inline) = match arg.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k.to_owned(), Some(v.to_owned())),
            _ => (arg, None),
        };
        if key == "-h" || key == "--help" {
            return Ok(Command::Help);
        }
        let value = match inline {
            Some(v) => v,
            None => it
                .next()
                .ok_or_else(|| fail(format!("{key} needs a value\n\n{USAGE}")))?,
        };
        match key.as_str() {
            "--size-mib" => a.size_mib = positive(&key, &value)?,
            "--chunk-mib" => a.chunk_mib = positive(&key, &value)?,
            "--reps" => {
                a.reps = usize::try_from(positive(&key, &value)?)
                    .map_err(|_| fail(format!("{key}: {value} is too large")))?;
            }
            "--dir" => a.dir = Some(PathBuf::from(value)),
            other => return Err(fail(format!("unknown option `{other}`\n\n{USAGE}"))),
        }
    }
    Ok(Command::Format(a))
}

fn positive(key: &str, value: &str) -> Result<u64> {
    match value.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(fail(format!(
            "{key}: expected a positive integer, got `{value}`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn parses_format_options() {
        let cmd = parse(args("format --size-mib 64 --reps=2 --dir /x")).unwrap();
        assert_eq!(
            cmd,
            Command::Format(FormatArgs {
                size_mib: 64,
                reps: 2,
                dir: Some(PathBuf::from("/x")),
                ..FormatArgs::default()
            })
        );
        assert_eq!(parse(args("")).unwrap(), Command::Help);
        assert!(parse(args("format --size-mib 0")).is_err());
        assert!(parse(args("format --bogus 1")).is_err());
        assert!(parse(args("daemon")).is_err());
    }
}
