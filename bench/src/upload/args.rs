//! Options of `upload`.

use std::path::PathBuf;

use crate::error::{fail, Result};

pub const USAGE: &str = "\
upload options:
  --total-mb N        episode bytes in all, decimal MB (default 2000 = 2 GB)
  --episode-mb N      bytes per episode, decimal MB (default 200)
  --chunk-mib N       bytes per chunk file in MiB (default 64)
  --part-mib N        multipart part size in MiB, at least 5 (default 16); files of at least
                      one part go up as multipart uploads, on both sides
  --reps N            repetitions of the plain and the upload cases, alternating (default 1)
  --quick             50 MB in 25 MB episodes, 12 MiB chunks, 5 MiB parts: a smoke run
  --s3s-fs PATH       the S3 server (default $WSHARD_S3S_FS, else s3s-fs on PATH)
  --dir PATH          scratch directory (default: the system temp dir); removed at the end";

/// Options of `upload`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UploadArgs {
    pub total_mb: u64,
    pub episode_mb: u64,
    pub chunk_mib: u64,
    pub part_mib: u64,
    pub reps: usize,
    pub s3s_fs: Option<PathBuf>,
    pub dir: Option<PathBuf>,
}

impl Default for UploadArgs {
    fn default() -> Self {
        Self {
            total_mb: 2000,
            episode_mb: 200,
            chunk_mib: 64,
            part_mib: 16,
            reps: 1,
            s3s_fs: None,
            dir: None,
        }
    }
}

fn number(key: &str, v: &str) -> Result<u64> {
    match v.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(fail(format!("{key}: `{v}` is not a positive whole number"))),
    }
}

/// Parse the options after `upload`.
///
/// # Errors
/// An unknown option, a missing or malformed value.
pub fn parse(mut it: impl Iterator<Item = String>) -> Result<Option<UploadArgs>> {
    let mut a = UploadArgs::default();
    while let Some(arg) = it.next() {
        let (key, inline) = match arg.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k.to_owned(), Some(v.to_owned())),
            _ => (arg, None),
        };
        match key.as_str() {
            "-h" | "--help" => return Ok(None),
            "--quick" => {
                a.total_mb = 50;
                a.episode_mb = 25;
                a.chunk_mib = 12;
                a.part_mib = 5;
                continue;
            }
            _ => {}
        }
        let value = match inline {
            Some(v) => v,
            None => it
                .next()
                .ok_or_else(|| fail(format!("{key} needs a value\n\n{USAGE}")))?,
        };
        match key.as_str() {
            "--total-mb" => a.total_mb = number(&key, &value)?,
            "--episode-mb" => a.episode_mb = number(&key, &value)?,
            "--chunk-mib" => a.chunk_mib = number(&key, &value)?,
            "--part-mib" => a.part_mib = number(&key, &value)?,
            "--reps" => {
                a.reps = usize::try_from(number(&key, &value)?)
                    .map_err(|_| fail(format!("{key}: {value} is too large")))?;
            }
            "--s3s-fs" => a.s3s_fs = Some(PathBuf::from(value)),
            "--dir" => a.dir = Some(PathBuf::from(value)),
            other => return Err(fail(format!("unknown option `{other}`\n\n{USAGE}"))),
        }
    }
    if a.part_mib < 5 {
        return Err(fail("--part-mib: S3's smallest part is 5 MiB"));
    }
    Ok(Some(a))
}
