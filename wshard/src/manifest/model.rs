//! The manifest document (spec 14.2) and its continuity rules (spec 14.3).

use serde_json::{json, Map, Value};

use crate::episode::meta::as_u64;
use crate::error::{FormatError, Result};

/// Name of the single entry of a manifest shard.
pub const MANIFEST_BLOCK: &str = "meta/manifest";

/// `{episode_id}_chunk_{index:04d}.wshard`.
#[must_use]
pub fn chunk_file_name(episode_id: &str, index: u64) -> String {
    format!("{episode_id}_chunk_{index:04}.wshard")
}

/// What ends the name of a manifest file.
pub const MANIFEST_FILE_SUFFIX: &str = "_manifest.wshard";

/// `{episode_id}_manifest.wshard`.
#[must_use]
pub fn manifest_file_name(episode_id: &str) -> String {
    format!("{episode_id}{MANIFEST_FILE_SUFFIX}")
}

/// The manifest key (a recorder's, not a reference key) saying where a ring's series
/// starts: `{"chunk_index": K, "timestep": T}`, chunks `0..K` (timesteps `0..T`) having been
/// evicted from a flight recorder's ring. Absent: the series starts at chunk 0.
pub const RING_START_KEY: &str = "ring_start";

/// One chunk listed in a manifest.
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkRef {
    pub chunk_index: u64,
    /// File name relative to the manifest's directory.
    pub uri: String,
    /// Lowercase hex SHA-256 of the whole chunk file.
    pub sha256: String,
    /// `[start, end]`, inclusive end, in global timesteps.
    pub timestep_range: [u64; 2],
    pub length_t: u64,
    /// Other keys of the chunk entry, kept on read and written back.
    pub extra: Map<String, Value>,
}

/// A chunked episode's manifest. Extra keys (such as a recorder's `status`) are written
/// beside the reference keys, which reference readers ignore.
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    pub episode_id: String,
    pub env_id: String,
    pub total_timesteps: u64,
    pub chunks: Vec<ChunkRef>,
    /// `recording`, `complete`, `aborted`, `interrupted`, `recovered`, ... (not a reference key).
    pub status: Option<String>,
    /// Other top-level keys, kept on read and written back.
    pub extra: Map<String, Value>,
}

fn bad(message: impl Into<String>) -> FormatError {
    FormatError::BadManifest {
        message: message.into(),
    }
}

fn get_str(m: &Map<String, Value>, key: &str, what: &str) -> Result<Option<String>> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(bad(format!("{what}`{key}`: expected a string, found {v}"))),
    }
}

fn get_u64(m: &Map<String, Value>, key: &str, what: &str) -> Result<Option<u64>> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => as_u64(MANIFEST_BLOCK, &format!("{what}{key}"), v).map(Some),
    }
}

/// Check that a chunk URI is a bare file name: no directory part, not `.`/`..`, no NUL.
///
/// # Errors
/// [`FormatError::BadManifest`] naming the URI.
pub fn validate_uri(uri: &str) -> Result<()> {
    if uri.is_empty()
        || uri == "."
        || uri == ".."
        || uri.contains(['/', '\\', '\0'])
        || uri.contains("://")
    {
        return Err(bad(format!(
            "chunk uri {uri:?} is not a relative file name in the manifest's directory"
        )));
    }
    Ok(())
}

impl Manifest {
    /// An empty manifest.
    #[must_use]
    pub fn new(episode_id: impl Into<String>, env_id: impl Into<String>) -> Self {
        Self {
            episode_id: episode_id.into(),
            env_id: env_id.into(),
            total_timesteps: 0,
            chunks: Vec::new(),
            status: None,
            extra: Map::new(),
        }
    }

    /// Append a chunk and add its length to `total_timesteps`.
    pub fn push_chunk(&mut self, chunk: ChunkRef) {
        self.total_timesteps += chunk.length_t;
        self.chunks.push(chunk);
    }

    /// Where the listed series starts: `(first chunk index, first global timestep)`, past
    /// the chunks a flight recorder's ring evicted ([`RING_START_KEY`]); `(0, 0)` otherwise.
    #[must_use]
    pub fn ring_start(&self) -> (u64, u64) {
        let Some(Value::Object(m)) = self.extra.get(RING_START_KEY) else {
            return (0, 0);
        };
        let field = |k: &str| m.get(k).and_then(Value::as_u64).unwrap_or(0);
        (field("chunk_index"), field("timestep"))
    }

    /// The index the next chunk of the series takes.
    #[must_use]
    pub fn next_chunk_index(&self) -> u64 {
        self.ring_start().0 + self.chunks.len() as u64
    }

    /// Remove the first `n` listed chunks (a ring's oldest) and record where the series now
    /// starts; `total_timesteps` keeps counting them. Returns the removed entries.
    pub fn evict_front(&mut self, n: usize) -> Vec<ChunkRef> {
        let n = n.min(self.chunks.len());
        let removed: Vec<ChunkRef> = self.chunks.drain(..n).collect();
        if let Some(last) = removed.last() {
            let (chunk_index, timestep) = self.chunks.first().map_or(
                (last.chunk_index + 1, last.timestep_range[0] + last.length_t),
                |c| (c.chunk_index, c.timestep_range[0]),
            );
            self.extra.insert(
                RING_START_KEY.into(),
                json!({"chunk_index": chunk_index, "timestep": timestep}),
            );
        }
        removed
    }

    /// The JSON document (keys sorted when written).
    #[must_use]
    pub fn to_json(&self) -> Value {
        let total = self.chunks.len() as u64;
        let chunks: Vec<Value> = self
            .chunks
            .iter()
            .map(|c| {
                let mut m = c.extra.clone();
                m.insert("chunk_index".into(), json!(c.chunk_index));
                m.insert("uri".into(), json!(c.uri));
                m.insert("sha256".into(), json!(c.sha256));
                m.insert("timestep_range".into(), json!(c.timestep_range));
                m.insert("length_T".into(), json!(c.length_t));
                m.insert("total_chunks".into(), json!(total));
                Value::Object(m)
            })
            .collect();
        let mut m = self.extra.clone();
        m.insert("episode_id".into(), json!(self.episode_id));
        if !self.env_id.is_empty() {
            m.insert("env_id".into(), json!(self.env_id));
        }
        m.insert("total_chunks".into(), json!(total));
        m.insert("total_timesteps".into(), json!(self.total_timesteps));
        m.insert("chunks".into(), Value::Array(chunks));
        if let Some(s) = &self.status {
            m.insert("status".into(), json!(s));
        }
        Value::Object(m)
    }

    /// Parse the JSON document, accepting Go's and Python's key sets.
    ///
    /// # Errors
    /// [`FormatError::BadManifest`] / [`FormatError::BadMeta`] naming the key.
    pub fn from_json(v: &Value) -> Result<Self> {
        let m = v
            .as_object()
            .ok_or_else(|| bad("document is not a JSON object"))?;
        let episode_id =
            get_str(m, "episode_id", "")?.ok_or_else(|| bad("missing `episode_id`"))?;
        let env_id = get_str(m, "env_id", "")?.unwrap_or_default();
        let total_timesteps =
            get_u64(m, "total_timesteps", "")?.ok_or_else(|| bad("missing `total_timesteps`"))?;
        let status = get_str(m, "status", "")?;
        let list = match m.get("chunks") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a.clone(),
            Some(v) => return Err(bad(format!("`chunks`: expected an array, found {v}"))),
        };
        let mut chunks = Vec::with_capacity(list.len());
        for (k, c) in list.iter().enumerate() {
            let what = format!("chunks[{k}].");
            let cm = c
                .as_object()
                .ok_or_else(|| bad(format!("{what}: expected an object")))?;
            let range = match cm.get("timestep_range") {
                Some(Value::Array(a)) if a.len() == 2 => [
                    as_u64(MANIFEST_BLOCK, &format!("{what}timestep_range"), &a[0])?,
                    as_u64(MANIFEST_BLOCK, &format!("{what}timestep_range"), &a[1])?,
                ],
                other => {
                    return Err(bad(format!(
                        "{what}timestep_range: expected [start, end], found {other:?}"
                    )))
                }
            };
            let known = [
                "chunk_index",
                "uri",
                "sha256",
                "timestep_range",
                "length_T",
                "total_chunks",
            ];
            chunks.push(ChunkRef {
                chunk_index: get_u64(cm, "chunk_index", &what)?
                    .ok_or_else(|| bad(format!("{what}chunk_index missing")))?,
                uri: get_str(cm, "uri", &what)?.ok_or_else(|| bad(format!("{what}uri missing")))?,
                sha256: get_str(cm, "sha256", &what)?.unwrap_or_default(),
                timestep_range: range,
                length_t: get_u64(cm, "length_T", &what)?
                    .ok_or_else(|| bad(format!("{what}length_T missing")))?,
                extra: cm
                    .iter()
                    .filter(|(k, _)| !known.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            });
        }
        let known = [
            "episode_id",
            "env_id",
            "total_chunks",
            "total_timesteps",
            "chunks",
            "status",
        ];
        let extra = m
            .iter()
            .filter(|(k, _)| !known.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(Self {
            episode_id,
            env_id,
            total_timesteps,
            chunks,
            status,
            extra,
        })
    }

    /// The reference continuity rules: chunk indices exactly `0..n` once each, each range
    /// starting right after the previous one ends, and the lengths summing to
    /// `total_timesteps`. A ring's series ([`RING_START_KEY`]) starts at its ring start
    /// instead: indices `K..K+n`, the first range at `T`, lengths summing to
    /// `total_timesteps - T`. Also checks that every chunk's range spans its `length_T` and that
    /// every URI is a bare file name.
    ///
    /// # Errors
    /// [`FormatError::ChunkIndexSequence`], [`FormatError::TimestepGap`],
    /// [`FormatError::LengthSum`], [`FormatError::BadManifest`].
    pub fn validate_continuity(&self) -> Result<()> {
        let (first_index, first_step) = self.ring_start();
        let mut sorted: Vec<&ChunkRef> = self.chunks.iter().collect();
        sorted.sort_by_key(|c| c.chunk_index);
        if let Some(first) = sorted.first() {
            if first_step > 0 && first.timestep_range[0] != first_step {
                return Err(bad(format!(
                    "chunk {}: starts at timestep {}, the ring starts at {first_step}",
                    first.chunk_index, first.timestep_range[0]
                )));
            }
        }
        for (position, c) in sorted.iter().enumerate() {
            if Some(c.chunk_index) != first_index.checked_add(position as u64) {
                return Err(FormatError::ChunkIndexSequence {
                    position,
                    got: c.chunk_index,
                });
            }
            validate_uri(&c.uri)?;
            if c.length_t > 0
                && c.timestep_range[1]
                    .checked_sub(c.timestep_range[0])
                    .and_then(|w| w.checked_add(1))
                    != Some(c.length_t)
            {
                return Err(bad(format!(
                    "chunk {}: timestep_range [{}, {}] does not span length_T {}",
                    c.chunk_index, c.timestep_range[0], c.timestep_range[1], c.length_t
                )));
            }
        }
        for pair in sorted.windows(2) {
            let (prev, next) = (pair[0], pair[1]);
            if prev.timestep_range[1].checked_add(1) != Some(next.timestep_range[0]) {
                return Err(FormatError::TimestepGap {
                    prev_index: prev.chunk_index,
                    prev_end: prev.timestep_range[1],
                    next_index: next.chunk_index,
                    next_start: next.timestep_range[0],
                });
            }
        }
        let sum = sorted
            .iter()
            .try_fold(0u64, |acc, c| acc.checked_add(c.length_t))
            .unwrap_or(u64::MAX);
        if sum != self.total_timesteps.saturating_sub(first_step) {
            return Err(FormatError::LengthSum {
                sum,
                total: self.total_timesteps,
            });
        }
        Ok(())
    }
}
