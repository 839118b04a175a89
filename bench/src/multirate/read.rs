//! The read side of `multirate`, on the one-episode recording: the aligned view at the
//! camera clock (`wshard::align`, policy `hold` for every channel) against reading the raw
//! streams (every channel of every stream materialized, as a loader that copies the data
//! into its own arrays does), both from `EpisodeDir::open`, alternating, medians of
//! `reps`; and, when `--reference-py` names a checkout of the reference Python package,
//! the Python aligned reader (`wshard_reader`) against the reference Python reader loading
//! the same chunk files (`python/multirate_read.py`).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use wshard::align::{align_episode, AlignOptions, Clock};
use wshard::episode_dir::EpisodeDir;

use crate::error::{fail, Result};
use crate::stats::Stats;

/// One timed read case.
#[derive(Clone, Debug)]
pub struct ReadCase {
    pub name: &'static str,
    /// Seconds per repetition.
    pub seconds: Vec<f64>,
    /// Bytes the case produced (values; aligned: the table's values).
    pub bytes: u64,
}

impl ReadCase {
    pub fn median_s(&self) -> f64 {
        Stats::of(&self.seconds).median
    }
}

/// The stream whose timestamps are the clock of the aligned read.
pub const CLOCK_STREAM: &str = "cameras";

fn raw_read(dir: &Path) -> Result<u64> {
    let ep = EpisodeDir::open(dir)?;
    let mut bytes = 0u64;
    for s in ep.read_streams()? {
        let mut t = s.timestamps_ns().to_vec();
        bytes += (t.len() * 8) as u64;
        for c in s.channels() {
            let owned = c.to_contiguous().into_owned();
            bytes += owned.len() as u64;
            std::hint::black_box(&owned);
        }
        t.clear();
    }
    Ok(bytes)
}

fn aligned_read(dir: &Path) -> Result<u64> {
    let ep = EpisodeDir::open(dir)?;
    let table = align_episode(&ep, &AlignOptions::new(Clock::Stream(CLOCK_STREAM.into())))?;
    let bytes = table.columns.iter().map(|c| c.values.len() as u64).sum();
    std::hint::black_box(&table);
    Ok(bytes)
}

fn timed(f: impl Fn() -> Result<u64>) -> Result<(f64, u64)> {
    let t = Instant::now();
    let b = f()?;
    Ok((t.elapsed().as_secs_f64(), b))
}

/// Time the reads.
///
/// # Errors
/// Reading the episode, or the Python script failing.
pub fn measure(
    dir: &Path,
    reps: usize,
    reference_py: Option<&Path>,
    python: &Path,
) -> Result<Vec<ReadCase>> {
    eprintln!("  reads of {}", dir.display());
    let mut raw = ReadCase {
        name: "rust raw streams",
        seconds: Vec::new(),
        bytes: 0,
    };
    let mut aligned = ReadCase {
        name: "rust aligned (camera clock)",
        seconds: Vec::new(),
        bytes: 0,
    };
    // One untimed pass of each, so both start from the same page cache.
    raw_read(dir)?;
    aligned_read(dir)?;
    for rep in 0..reps {
        let order: [bool; 2] = if rep % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for is_raw in order {
            if is_raw {
                let (s, b) = timed(|| raw_read(dir))?;
                raw.seconds.push(s);
                raw.bytes = b;
            } else {
                let (s, b) = timed(|| aligned_read(dir))?;
                aligned.seconds.push(s);
                aligned.bytes = b;
            }
        }
    }
    let mut out = vec![raw, aligned];
    if let Some(reference) = reference_py {
        out.extend(python_cases(dir, reps, reference, python)?);
    }
    Ok(out)
}

/// Run `python/multirate_read.py`: one line per case, `case seconds,seconds,... bytes`.
fn python_cases(dir: &Path, reps: usize, reference: &Path, python: &Path) -> Result<Vec<ReadCase>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/multirate_read.py");
    let out = Command::new(python)
        .arg(&script)
        .arg("--episode")
        .arg(dir)
        .arg("--reference")
        .arg(reference)
        .args(["--reps", &reps.to_string(), "--clock", CLOCK_STREAM])
        .output()
        .map_err(|e| fail(format!("run {}: {e}", script.display())))?;
    if !out.status.success() {
        return Err(fail(format!(
            "{} failed ({}):\n{}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut cases = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [name, secs, bytes] = parts[..] else {
            return Err(fail(format!("unexpected line from the script: `{line}`")));
        };
        let seconds = secs
            .split(',')
            .map(|s| {
                s.parse::<f64>()
                    .map_err(|_| fail(format!("bad seconds in `{line}`")))
            })
            .collect::<Result<Vec<_>>>()?;
        let name: &'static str = match name {
            "py-aligned" => "python wshard_reader aligned",
            "py-reference" => "python reference reader (chunks)",
            other => return Err(fail(format!("unknown case `{other}` from the script"))),
        };
        cases.push(ReadCase {
            name,
            seconds,
            bytes: bytes
                .parse()
                .map_err(|_| fail(format!("bad bytes in `{line}`")))?,
        });
    }
    Ok(cases)
}
