//! Test support: write one stream's chunk files and manifest with the `wshard` crate's writer
//! (the code the recorder writes with), so that the Python tests can build episode
//! directories without a second writer. Exposed as `_native._write_chunked_stream`; not part
//! of the public API.
//!
//! `spec_json`:
//! ```text
//! {"episode_id": str, "timebase": "ticks" | "timestamps_ns", "tick_hz": float, "dt_ns": int,
//!  "steps": int, "chunk_steps": int, "alignment": 0 | 16 | 32 | 64 (default 64),
//!  "status": str (manifest status, default "complete"), "wshard_extra": {..},
//!  "channels": [{"name": str, "lane": "signal" | "action", "dtype": str, "shape": [int],
//!                "codec": "none" | "zstd" | "lz4"}]}
//! ```
//! `columns` maps each channel name, and `time/timestamps_ns` when the stream has
//! timestamps, to its little-endian bytes for all steps.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde_json::{Map, Value};
use wshard::codec::{Codec, CompressionPolicy};
use wshard::digest::sha256_file;
use wshard::episode::{names, Channel, DType, Episode, EpisodeWriteOptions, Lane, Timebase};
use wshard::manifest::{manifest_file_name, write_episode_chunked, Manifest};

use crate::errors::{IntoPy, Kind, ReadError, ReadResult};

fn bad(message: impl Into<String>) -> ReadError {
    ReadError::new(Kind::BadArgument, message)
}

fn str_of<'a>(m: &'a Map<String, Value>, key: &str) -> ReadResult<&'a str> {
    m.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| bad(format!("spec: `{key}` must be a string")).field(key))
}

fn u64_of(m: &Map<String, Value>, key: &str, default: Option<u64>) -> ReadResult<u64> {
    match m.get(key) {
        None => default.ok_or_else(|| bad(format!("spec: `{key}` missing")).field(key)),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| bad(format!("spec: `{key}` must be an unsigned integer")).field(key)),
    }
}

fn channel(spec: &Value, columns: &HashMap<String, Vec<u8>>) -> ReadResult<(Channel, Codec)> {
    let m = spec
        .as_object()
        .ok_or_else(|| bad("spec: every channel must be an object"))?;
    let name = str_of(m, "name")?;
    let lane = match str_of(m, "lane").unwrap_or("signal") {
        "signal" => Lane::Signal,
        "action" => Lane::Action,
        other => return Err(bad(format!("spec: channel `{name}`: lane {other:?}"))),
    };
    let dtype = DType::parse(str_of(m, "dtype")?).map_err(|e| bad(e.to_string()))?;
    let shape = match m.get("shape") {
        None => Vec::new(),
        Some(v) => v
            .as_array()
            .and_then(|a| a.iter().map(Value::as_u64).collect::<Option<Vec<_>>>())
            .ok_or_else(|| bad(format!("spec: channel `{name}`: shape")))?,
    };
    let codec =
        Codec::parse(str_of(m, "codec").unwrap_or("none")).map_err(|e| bad(e.to_string()))?;
    let data = columns
        .get(name)
        .cloned()
        .ok_or_else(|| bad(format!("columns: no bytes for channel `{name}`")))?;
    Ok((Channel::new(name, lane, dtype, shape, data), codec))
}

fn write(dir: &Path, spec_json: &str, columns: &HashMap<String, Vec<u8>>) -> ReadResult<PathBuf> {
    let spec: Value = serde_json::from_str(spec_json).map_err(|e| bad(format!("spec: {e}")))?;
    let m = spec.as_object().ok_or_else(|| bad("spec: not an object"))?;
    let id = str_of(m, "episode_id")?;
    let timebase = match str_of(m, "timebase")? {
        "ticks" => Timebase::ticks(
            m.get("tick_hz")
                .and_then(Value::as_f64)
                .ok_or_else(|| bad("spec: `tick_hz` must be a number"))?,
        ),
        "timestamps_ns" => Timebase::TimestampsNs {
            dt_ns: u64_of(m, "dt_ns", Some(0))?,
        },
        other => return Err(bad(format!("spec: timebase {other:?}"))),
    };
    let steps = u64_of(m, "steps", None)?;
    let t = usize::try_from(steps).map_err(|_| bad("spec: steps too large"))?;
    let mut ep = Episode::new(id, "", timebase);
    let mut opts = EpisodeWriteOptions {
        alignment: u8::try_from(u64_of(m, "alignment", Some(64))?)
            .map_err(|_| bad("spec: alignment"))?,
        // Keep every block compressed with the codec asked for, whatever the ratio.
        policy: CompressionPolicy::any_smaller(),
        ..EpisodeWriteOptions::default()
    };
    ep.set_reward(vec![0.0; t]);
    ep.set_done(vec![false; t]);
    if let Some(ts) = columns.get(names::TIMESTAMPS_NS) {
        ep.timestamps_ns = Some(
            ts.chunks_exact(8)
                .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
        );
    }
    for spec in m
        .get("channels")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("spec: `channels` must be a list"))?
    {
        let (ch, codec) = channel(spec, columns)?;
        opts.block_codecs.insert(ch.block_name(), codec);
        ep.push_channel(ch);
    }
    if let Some(Value::Object(extra)) = m.get("wshard_extra") {
        ep.wshard_extra.clone_from(extra);
    }
    let fmt = |e: wshard::FormatError| ReadError::format(&e, dir);
    std::fs::create_dir_all(dir)
        .map_err(|e| ReadError::new(Kind::Io, format!("create_dir_all: {e}")).at(dir))?;
    let mut manifest = write_episode_chunked(
        &ep,
        dir,
        u64_of(m, "chunk_steps", Some(steps.max(1)))?,
        &opts,
    )
    .map_err(fmt)?;
    let path = dir.join(manifest_file_name(id));
    if let Some(status) = m.get("status").and_then(Value::as_str) {
        manifest.status = Some(status.to_owned());
        let bytes = manifest.to_bytes().map_err(fmt)?;
        std::fs::write(&path, bytes)
            .map_err(|e| ReadError::new(Kind::Io, format!("write: {e}")).at(&path))?;
    }
    Ok(path)
}

fn rehash(manifest_path: &Path) -> ReadResult<()> {
    let fmt = |e: wshard::FormatError| ReadError::format(&e, manifest_path);
    let mut manifest = Manifest::read_file(manifest_path).map_err(fmt)?;
    let dir = manifest_path.parent().unwrap_or(Path::new("."));
    for c in &mut manifest.chunks {
        c.sha256 = sha256_file(&dir.join(&c.uri)).map_err(fmt)?;
    }
    let bytes = manifest.to_bytes().map_err(fmt)?;
    std::fs::write(manifest_path, bytes)
        .map_err(|e| ReadError::new(Kind::Io, format!("write: {e}")).at(manifest_path))
}

/// Recompute every chunk's SHA-256 in the manifest at `manifest_path` (after a test damaged
/// a chunk on purpose, so that the reader gets past the hash check to the block checks).
#[pyfunction]
pub(crate) fn _rehash_manifest(py: Python<'_>, manifest_path: PathBuf) -> PyResult<()> {
    py.detach(|| rehash(&manifest_path)).py_err(py)
}

/// Write a stream's chunks and manifest into `dir`; returns the manifest's path.
#[pyfunction]
pub(crate) fn _write_chunked_stream(
    py: Python<'_>,
    dir: PathBuf,
    spec_json: &str,
    columns: HashMap<String, Bound<'_, PyBytes>>,
) -> PyResult<String> {
    let columns: HashMap<String, Vec<u8>> = columns
        .into_iter()
        .map(|(k, v)| (k, v.as_bytes().to_vec()))
        .collect();
    py.detach(|| write(&dir, spec_json, &columns))
        .map(|p| p.display().to_string())
        .py_err(py)
}
