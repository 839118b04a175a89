//! `wshard cache stats` and `wshard cache gc --limit BYTES`: the local blob cache of remote
//! reads and pulls (`$WSHARD_CACHE_DIR`, else `$XDG_CACHE_HOME/wshard`, else
//! `~/.cache/wshard`; docs/PUBLISH.md, "Remote reads and the cache").

use std::io::Write;

use serde_json::json;
use wshard_publish::cache::BlobCache;

use crate::exit_status::Status;

/// The local blob cache of remote reads and pulls: stats, gc --limit BYTES
///
/// Exit codes: 0 done, 2 usage, or the cache cannot be found or read.
#[derive(Debug, clap::Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    pub verb: CacheVerb,
}

/// The verbs of `wshard cache`.
#[derive(Clone, Debug, clap::Subcommand)]
pub enum CacheVerb {
    /// Where the cache is, its blobs and bytes (and downloads in progress).
    Stats {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Remove the least recently used blobs until at most BYTES remain (and downloads
    /// left by a crash, after an hour).
    Gc {
        /// Bytes to keep at most: an integer, optionally with K, M, G (powers of 1024).
        #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
        limit: u64,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// A byte count `parse_bytes` refuses, quoted as given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadByteCount {
    #[error("{0:?}: unit must be K, M, G or T")]
    Unit(String),
    #[error("{0:?}: not a byte count (e.g. 500M)")]
    NotANumber(String),
    #[error("{0:?}: too large")]
    TooLarge(String),
}

/// `123`, `64K`, `10M`, `2G` (powers of 1024; `KiB`, `MiB`, `GiB` too).
///
/// # Errors
/// [`BadByteCount`], saying what is accepted.
pub fn parse_bytes(s: &str) -> Result<u64, BadByteCount> {
    let t = s.trim();
    let digits = t.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &t[digits.len()..];
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(BadByteCount::Unit(s.to_owned())),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| BadByteCount::NotANumber(s.to_owned()))?;
    n.checked_mul(1 << shift)
        .ok_or_else(|| BadByteCount::TooLarge(s.to_owned()))
}

/// Run `wshard cache VERB`. Exit 0, or 2 when the cache cannot be found or read.
pub fn run(verb: &CacheVerb, out: &mut dyn Write, err: &mut dyn Write) -> Status {
    let cache = match BlobCache::from_env() {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(err, "wshard cache: {e}");
            return Status::Error;
        }
    };
    let root = cache.root().display().to_string();
    let written = match verb {
        CacheVerb::Stats { json } => match cache.stats() {
            Ok(s) if *json => writeln!(
                out,
                "{}",
                json!({"root": root, "blobs": s.blobs, "bytes": s.bytes,
                    "partial_files": s.partial_files, "partial_bytes": s.partial_bytes})
            ),
            Ok(s) => writeln!(
                out,
                "cache    {root}\nblobs    {}\nbytes    {}\npartial  {} files, {} bytes",
                s.blobs, s.bytes, s.partial_files, s.partial_bytes
            ),
            Err(e) => {
                let _ = writeln!(err, "wshard cache stats: {e}");
                return Status::Error;
            }
        },
        CacheVerb::Gc { limit, json } => match cache.gc(*limit) {
            Ok(r) if *json => writeln!(
                out,
                "{}",
                json!({"root": root, "limit": limit, "removed_blobs": r.removed_blobs,
                    "removed_bytes": r.removed_bytes, "kept_blobs": r.kept_blobs,
                    "kept_bytes": r.kept_bytes, "removed_partials": r.removed_partials})
            ),
            Ok(r) => writeln!(
                out,
                "removed {} blobs ({} bytes), kept {} blobs ({} bytes) under the limit {limit}",
                r.removed_blobs, r.removed_bytes, r.kept_blobs, r.kept_bytes
            ),
            Err(e) => {
                let _ = writeln!(err, "wshard cache gc: {e}");
                return Status::Error;
            }
        },
    };
    match written {
        Ok(()) => Status::Ok,
        Err(e) => {
            let _ = writeln!(err, "wshard cache: writing output: {e}");
            Status::Error
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_bytes;

    #[test]
    fn byte_counts_parse() {
        assert_eq!(parse_bytes("123"), Ok(123));
        assert_eq!(parse_bytes("64K"), Ok(64 << 10));
        assert_eq!(parse_bytes("10MiB"), Ok(10 << 20));
        assert!(parse_bytes("10X").is_err());
        assert!(parse_bytes("-1").is_err());
    }
}
