//! A dataset version and the latest pointer, and their canonical JSON.
//!
//! A dataset version (stored as `versions/<hash>.json`, its bytes exactly the canonical
//! form, `hash` = SHA-256 of those bytes) lists every file of every episode of the version
//! by content hash (the episodes' own chunk manifests are among those files):
//!
//! ```json
//! {"dataset":"lab/pick","episodes":{"ep1":{"files":{"ep1_chunk_0000.wshard":
//!  {"sha256":"<64 hex>","size":1234},...},"status":"complete"}},
//!  "format":"wshard-dataset-version","format_version":1}
//! ```
//!
//! File names are relative to the episode directory (`streams/S/S_chunk_0000.wshard` for a
//! stream of a multi-stream episode): no local path, no time, nothing of the publisher.
//! The pointer (`latest.json`, canonical too) is
//! `{"dataset":"lab/pick","format":"wshard-dataset-latest","format_version":1,"version":"<hash>"}`.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::canonical::{to_canonical_bytes, CanonicalError};
use crate::hash::is_sha256_hex;

/// `format` of a dataset version.
pub const VERSION_FORMAT: &str = "wshard-dataset-version";
/// `format` of the latest pointer.
pub const LATEST_FORMAT: &str = "wshard-dataset-latest";
/// `format_version` written, and the highest read.
pub const FORMAT_VERSION: u64 = 1;

/// One file of an episode: its content hash and size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEntry {
    pub sha256: String,
    pub size: u64,
}

/// One episode of a version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpisodeEntry {
    /// `complete`, `interrupted` or `recovered`.
    pub status: String,
    /// Relative file name -> blob.
    pub files: BTreeMap<String, FileEntry>,
}

/// A dataset version: the episodes (by key) with their files, and the catalog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatasetVersion {
    pub dataset: String,
    pub episodes: BTreeMap<String, EpisodeEntry>,
    /// The catalog table (Parquet, one row per episode stream) as a blob; `None` in a
    /// version written before the catalog existed.
    pub catalog: Option<FileEntry>,
}

/// Why a dataset version or latest pointer does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("not JSON: {0}")]
    Json(String),
    #[error("field {0}: missing or of the wrong type")]
    Field(String),
    #[error("format {found:?} (expected {expected}) or format_version above {FORMAT_VERSION}")]
    Format {
        found: String,
        expected: &'static str,
    },
    #[error(transparent)]
    Canonical(#[from] CanonicalError),
}

fn field<'a>(obj: &'a Map<String, Value>, name: &str, at: &str) -> Result<&'a Value, VersionError> {
    obj.get(name)
        .ok_or_else(|| VersionError::Field(format!("{at}{name}")))
}

fn str_field(obj: &Map<String, Value>, name: &str, at: &str) -> Result<String, VersionError> {
    field(obj, name, at)?
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| VersionError::Field(format!("{at}{name}")))
}

fn object<'a>(v: &'a Value, at: &str) -> Result<&'a Map<String, Value>, VersionError> {
    v.as_object()
        .ok_or_else(|| VersionError::Field(at.trim_end_matches('.').to_owned()))
}

fn check_format(obj: &Map<String, Value>, expected: &'static str) -> Result<(), VersionError> {
    let found = str_field(obj, "format", "")?;
    let version = field(obj, "format_version", "")?
        .as_u64()
        .ok_or_else(|| VersionError::Field("format_version".into()))?;
    if found != expected || version > FORMAT_VERSION {
        return Err(VersionError::Format { found, expected });
    }
    Ok(())
}

impl DatasetVersion {
    /// The JSON value (before canonicalization).
    #[must_use]
    pub fn to_value(&self) -> Value {
        let episodes: Map<String, Value> = self
            .episodes
            .iter()
            .map(|(id, ep)| {
                let files: Map<String, Value> = ep
                    .files
                    .iter()
                    .map(|(name, f)| (name.clone(), json!({"sha256": f.sha256, "size": f.size})))
                    .collect();
                (id.clone(), json!({"files": files, "status": ep.status}))
            })
            .collect();
        let mut v = json!({
            "dataset": self.dataset,
            "episodes": episodes,
            "format": VERSION_FORMAT,
            "format_version": FORMAT_VERSION,
        });
        if let (Some(c), Some(obj)) = (&self.catalog, v.as_object_mut()) {
            obj.insert(
                "catalog".into(),
                json!({"sha256": c.sha256, "size": c.size}),
            );
        }
        v
    }

    /// The canonical bytes: what is stored and hashed.
    ///
    /// # Errors
    /// Never for a version built by this crate (sizes are integers).
    pub fn canonical_bytes(&self) -> Result<Vec<u8>, VersionError> {
        Ok(to_canonical_bytes(&self.to_value())?)
    }

    /// Parse stored bytes (any JSON spelling; the caller checks the hash of the bytes).
    ///
    /// # Errors
    /// [`VersionError`] naming the field.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, VersionError> {
        let v: Value =
            serde_json::from_slice(bytes).map_err(|e| VersionError::Json(e.to_string()))?;
        let top = object(&v, "$")?;
        check_format(top, VERSION_FORMAT)?;
        let dataset = str_field(top, "dataset", "")?;
        let mut episodes = BTreeMap::new();
        for (id, ep) in object(field(top, "episodes", "")?, "episodes")? {
            let at = format!("episodes.{id}.");
            let ep = object(ep, &at)?;
            let status = str_field(ep, "status", &at)?;
            let mut files = BTreeMap::new();
            for (name, f) in object(field(ep, "files", &at)?, &format!("{at}files"))? {
                let fat = format!("{at}files.{name}.");
                let f = object(f, &fat)?;
                let sha256 = str_field(f, "sha256", &fat)?;
                if !is_sha256_hex(&sha256) {
                    return Err(VersionError::Field(format!("{fat}sha256")));
                }
                let size = field(f, "size", &fat)?
                    .as_u64()
                    .ok_or_else(|| VersionError::Field(format!("{fat}size")))?;
                files.insert(name.clone(), FileEntry { sha256, size });
            }
            episodes.insert(id.clone(), EpisodeEntry { status, files });
        }
        let catalog = match top.get("catalog") {
            None => None,
            Some(c) => {
                let c = object(c, "catalog.")?;
                let sha256 = str_field(c, "sha256", "catalog.")?;
                if !is_sha256_hex(&sha256) {
                    return Err(VersionError::Field("catalog.sha256".into()));
                }
                let size = field(c, "size", "catalog.")?
                    .as_u64()
                    .ok_or_else(|| VersionError::Field("catalog.size".into()))?;
                Some(FileEntry { sha256, size })
            }
        };
        Ok(Self {
            dataset,
            episodes,
            catalog,
        })
    }

    /// Total payload bytes referenced.
    #[must_use]
    pub fn total_bytes(&self) -> u64 {
        self.episodes
            .values()
            .flat_map(|e| e.files.values())
            .map(|f| f.size)
            .sum()
    }
}

/// The canonical bytes of `latest.json` pointing at `version_hash`.
///
/// # Errors
/// Never in practice (only strings).
pub fn latest_bytes(dataset: &str, version_hash: &str) -> Result<Vec<u8>, VersionError> {
    Ok(to_canonical_bytes(&json!({
        "dataset": dataset,
        "format": LATEST_FORMAT,
        "format_version": FORMAT_VERSION,
        "version": version_hash,
    }))?)
}

/// The version hash a `latest.json` points at.
///
/// # Errors
/// [`VersionError`] when it is not a pointer.
pub fn parse_latest(bytes: &[u8]) -> Result<String, VersionError> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| VersionError::Json(e.to_string()))?;
    let top = object(&v, "$")?;
    check_format(top, LATEST_FORMAT)?;
    let version = str_field(top, "version", "")?;
    if !is_sha256_hex(&version) {
        return Err(VersionError::Field("version".into()));
    }
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wshard::digest::sha256_hex;

    fn sample() -> DatasetVersion {
        let mut files = BTreeMap::new();
        files.insert(
            "ep_chunk_0000.wshard".to_owned(),
            FileEntry {
                sha256: "a".repeat(64),
                size: 10,
            },
        );
        let mut episodes = BTreeMap::new();
        episodes.insert(
            "ep".to_owned(),
            EpisodeEntry {
                status: "complete".into(),
                files,
            },
        );
        DatasetVersion {
            dataset: "lab/pick".into(),
            episodes,
            catalog: Some(FileEntry {
                sha256: "c".repeat(64),
                size: 99,
            }),
        }
    }

    #[test]
    fn manifest_round_trips_and_hash_is_stable() -> Result<(), VersionError> {
        let m = sample();
        let bytes = m.canonical_bytes()?;
        assert_eq!(DatasetVersion::from_bytes(&bytes)?, m);
        // The same content spelled differently canonicalizes to the same bytes.
        let pretty = serde_json::to_vec_pretty(&m.to_value()).unwrap_or_default();
        assert_eq!(
            DatasetVersion::from_bytes(&pretty)?.canonical_bytes()?,
            bytes
        );
        assert_eq!(sha256_hex(&bytes), sha256_hex(&m.canonical_bytes()?));
        // A version from before the catalog existed still reads, without one.
        let old = DatasetVersion {
            catalog: None,
            ..m.clone()
        };
        let old_bytes = old.canonical_bytes()?;
        assert!(!String::from_utf8_lossy(&old_bytes).contains("catalog"));
        assert_eq!(DatasetVersion::from_bytes(&old_bytes)?, old);
        let latest = latest_bytes("lab/pick", &"b".repeat(64))?;
        assert_eq!(parse_latest(&latest)?, "b".repeat(64));
        Ok(())
    }
}
