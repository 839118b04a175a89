//! The baselines: the shared MCAP peer program (`../../shared/bench/peer-mcap`), run as a
//! subprocess in the same benchmark run. It generates its own data, times each mode from
//! `File::create` through the final `fsync`, and prints one JSON line per repetition.
//! Its `plain` mode (one `write` per timestep, unbuffered, fsync at the end) is the plain
//! append baseline; `plain-buf` is the same through a 1 MiB buffer.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{fail, io_ctx, Result};
use crate::stats::Stats;

/// One JSON line of the peer.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerRow {
    pub workload: String,
    pub mode: String,
    pub rep: u64,
    pub mb_s: f64,
    pub timesteps_per_s: f64,
    pub wall_s: f64,
    pub fsync_s: f64,
    pub payload_bytes: u64,
    pub file_bytes: u64,
}

/// The medians of one peer mode over its repetitions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PeerFigures {
    pub mb_s: Stats,
    pub timesteps_per_s: Stats,
    pub file_bytes: u64,
    pub payload_bytes: u64,
    pub fsync_s: f64,
}

/// The value of `"key":` in a flat one-line JSON object (numbers and plain strings).
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("\"{key}\"");
    let at = line.find(&pat)? + pat.len();
    let rest = line[at..].trim_start().strip_prefix(':')?.trim_start();
    if let Some(s) = rest.strip_prefix('"') {
        return s.split('"').next();
    }
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

fn num(line: &str, key: &str) -> Result<f64> {
    field(line, key)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| fail(format!("peer output: no number `{key}` in {line}")))
}

/// Parse one line of the peer's output.
///
/// # Errors
/// When a field is missing.
pub fn parse_line(line: &str) -> Result<PeerRow> {
    let case = field(line, "case").ok_or_else(|| fail(format!("peer output: {line}")))?;
    let (workload, mode) = case
        .split_once('/')
        .ok_or_else(|| fail(format!("peer output: case `{case}`")))?;
    Ok(PeerRow {
        workload: workload.to_owned(),
        mode: mode.to_owned(),
        rep: num(line, "rep")? as u64,
        mb_s: num(line, "value")?,
        timesteps_per_s: num(line, "timesteps_per_s")?,
        wall_s: num(line, "wall_s")?,
        fsync_s: num(line, "fsync_s")?,
        payload_bytes: num(line, "payload_bytes")? as u64,
        file_bytes: num(line, "file_bytes")? as u64,
    })
}

/// Run the peer: `--workload W --mode M,.. --reps R --dir D [--steps N]`.
///
/// # Errors
/// When it cannot run, fails, or prints nothing parseable.
pub fn run(
    bin: &Path,
    workload: &str,
    modes: &[&str],
    reps: usize,
    steps: Option<u64>,
    dir: &Path,
) -> Result<Vec<PeerRow>> {
    std::fs::create_dir_all(dir).map_err(|e| io_ctx("create", dir, e))?;
    let mut cmd = Command::new(bin);
    cmd.args(["--workload", workload, "--mode", &modes.join(",")])
        .args(["--reps", &reps.to_string(), "--dir"])
        .arg(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    if let Some(n) = steps {
        cmd.args(["--steps", &n.to_string()]);
    }
    let out = cmd.output().map_err(|e| io_ctx("run", bin, e))?;
    if !out.status.success() {
        return Err(fail(format!("peer-mcap {workload} failed: {}", out.status)));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let rows = text
        .lines()
        .filter(|l| l.trim_start().starts_with('{'))
        .map(parse_line)
        .collect::<Result<Vec<_>>>()?;
    if rows.len() != reps * modes.len() {
        return Err(fail(format!(
            "peer-mcap {workload}: expected {} lines, got {}",
            reps * modes.len(),
            rows.len()
        )));
    }
    Ok(rows)
}

/// Medians of `mode` in `rows`.
pub fn figures(rows: &[PeerRow], mode: &str) -> Option<PeerFigures> {
    let sel: Vec<&PeerRow> = rows.iter().filter(|r| r.mode == mode).collect();
    let first = sel.first()?;
    let median_u64 = |f: &dyn Fn(&PeerRow) -> f64| {
        Stats::of(&sel.iter().map(|r| f(r)).collect::<Vec<_>>()).median
    };
    Some(PeerFigures {
        mb_s: Stats::of(&sel.iter().map(|r| r.mb_s).collect::<Vec<_>>()),
        timesteps_per_s: Stats::of(&sel.iter().map(|r| r.timesteps_per_s).collect::<Vec<_>>()),
        file_bytes: median_u64(&|r| r.file_bytes as f64) as u64,
        payload_bytes: first.payload_bytes,
        fsync_s: median_u64(&|r| r.fsync_s),
    })
}

/// The peer binary: `--peer PATH`, else `target/peer-mcap/release/peer-mcap` in this crate,
/// built (with its own lock file, target dir inside this crate) when missing.
///
/// # Errors
/// When it is missing and cannot be built.
pub fn locate(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        return if p.is_file() {
            Ok(p.to_path_buf())
        } else {
            Err(fail(format!("--peer {}: no such file", p.display())))
        };
    }
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = here.join("target/peer-mcap");
    let bin = target.join("release/peer-mcap");
    if !bin.is_file() {
        let manifest = here.join("../../shared/bench/peer-mcap/Cargo.toml");
        eprintln!(
            "building the MCAP peer: cargo build --release --manifest-path {}",
            manifest.display()
        );
        let status = Command::new("cargo")
            .args(["build", "--release", "--manifest-path"])
            .arg(&manifest)
            .env("CARGO_TARGET_DIR", &target)
            .status()
            .map_err(|e| io_ctx("run cargo for", &manifest, e))?;
        if !status.success() || !bin.is_file() {
            return Err(fail(format!("building peer-mcap failed ({status})")));
        }
    }
    Ok(bin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_peer_line() {
        let line = "{\"bench\": \"peer\", \"case\": \"joints/mcap-zstd\", \"rep\": 2, \"value\": 71.6, \
                    \"unit\": \"MB/s\", \"timesteps_per_s\": 778000, \"wall_s\": 1.285, \"write_s\": 1.2, \
                    \"finish_s\": 0.05, \"fsync_s\": 0.030, \"payload_bytes\": 92000000, \
                    \"file_bytes\": 142600000, \"ratio\": 0.645}";
        let r = parse_line(line).unwrap();
        assert_eq!(r.workload, "joints");
        assert_eq!(r.mode, "mcap-zstd");
        assert_eq!(r.rep, 2);
        assert_eq!(r.mb_s, 71.6);
        assert_eq!(r.timesteps_per_s, 778000.0);
        assert_eq!(r.file_bytes, 142_600_000);
        let f = figures(&[r], "mcap-zstd").unwrap();
        assert_eq!(f.file_bytes, 142_600_000);
        assert!(figures(&[], "plain").is_none());
    }
}
