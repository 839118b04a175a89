//! The keys of the store, all under the configured prefix:
//!
//! ```text
//! blobs/sha256/<hh>/<64 hex>                    one episode file, by its SHA-256
//! datasets/<ws>/<name>/versions/<64 hex>.json   a dataset version (canonical JSON, immutable)
//! datasets/<ws>/<name>/latest.json              the pointer to the latest version (CAS)
//! datasets/<ws>/<name>/catalog/<64 hex>.parquet the catalog of a version (create-only)
//! ```
//!
//! and [`DatasetId`], the checked `workspace/name`.

use crate::error::PublishError;

/// Longest workspace or name.
pub const MAX_DATASET_PART: usize = 64;
/// Where the blobs are, below the prefix.
pub const BLOBS_DIR: &str = "blobs/sha256";
/// Where the datasets are, below the prefix.
pub const DATASETS_DIR: &str = "datasets";
/// The pointer's file name.
pub const LATEST_FILE: &str = "latest.json";
/// The catalogs' directory of a dataset.
pub const CATALOG_DIR: &str = "catalog";
/// The extension of a catalog key.
pub const CATALOG_EXT: &str = "parquet";
/// The key the doctor writes, reads and deletes (below the prefix).
pub const DOCTOR_PROBE_PREFIX: &str = "_wshard_doctor";

/// A dataset's `workspace/name`, each part 1..=64 of `[a-z0-9_-]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DatasetId {
    workspace: String,
    name: String,
}

impl DatasetId {
    /// Parse and check `workspace/name`.
    ///
    /// # Errors
    /// [`PublishError::InvalidDataset`] saying what is wrong.
    pub fn parse(s: &str) -> Result<Self, PublishError> {
        let bad = |reason| PublishError::InvalidDataset {
            name: s.to_owned(),
            reason,
        };
        let (ws, name) = s.split_once('/').ok_or_else(|| bad("no `/`"))?;
        for part in [ws, name] {
            if part.is_empty() || part.len() > MAX_DATASET_PART {
                return Err(bad("a part is empty or longer than 64"));
            }
            if !part
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
            {
                return Err(bad("only a-z 0-9 _ - are allowed, and one `/`"));
            }
        }
        Ok(Self {
            workspace: ws.to_owned(),
            name: name.to_owned(),
        })
    }

    #[must_use]
    pub fn workspace(&self) -> &str {
        &self.workspace
    }

    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl std::fmt::Display for DatasetId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.workspace, self.name)
    }
}

/// Keys under one prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    /// `prefix` is empty or ends with `/` ([`crate::StoreConfig::key_prefix`]).
    #[must_use]
    pub fn new(prefix: String) -> Self {
        Self { prefix }
    }

    /// The prefix: empty or ending with `/`.
    #[must_use]
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// `blobs/sha256/<first 2 hex>/<hex>`.
    #[must_use]
    pub fn blob(&self, sha256_hex: &str) -> String {
        let head = sha256_hex.get(..2).unwrap_or(sha256_hex);
        format!("{}{BLOBS_DIR}/{head}/{sha256_hex}", self.prefix)
    }

    /// `datasets/<ws>/<name>/`.
    #[must_use]
    pub fn dataset_dir(&self, ds: &DatasetId) -> String {
        format!(
            "{}{DATASETS_DIR}/{}/{}/",
            self.prefix, ds.workspace, ds.name
        )
    }

    /// `datasets/<ws>/<name>/versions/<hash>.json`.
    #[must_use]
    pub fn version(&self, ds: &DatasetId, version_hash: &str) -> String {
        format!("{}versions/{version_hash}.json", self.dataset_dir(ds))
    }

    /// `datasets/<ws>/<name>/latest.json`.
    #[must_use]
    pub fn latest(&self, ds: &DatasetId) -> String {
        format!("{}{LATEST_FILE}", self.dataset_dir(ds))
    }

    /// `datasets/<ws>/<name>/catalog/<version hash>.parquet`: the catalog of a version,
    /// named by the version (the same bytes are also the blob the version names).
    #[must_use]
    pub fn catalog(&self, ds: &DatasetId, version_hash: &str) -> String {
        format!(
            "{}{CATALOG_DIR}/{version_hash}.{CATALOG_EXT}",
            self.dataset_dir(ds)
        )
    }

    /// The doctor's probe key, unique per run.
    #[must_use]
    pub fn doctor_probe(&self, unique: &str) -> String {
        format!("{}{DOCTOR_PROBE_PREFIX}/{unique}", self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dataset_names_are_checked_and_keys_built() -> Result<(), PublishError> {
        let ds = DatasetId::parse("lab/pick-v1")?;
        let keys = Keys::new("fleet/".into());
        assert_eq!(keys.latest(&ds), "fleet/datasets/lab/pick-v1/latest.json");
        assert_eq!(keys.blob("abcd"), "fleet/blobs/sha256/ab/abcd");
        for bad in ["lab", "Lab/x", "lab/", "/x", "a/b/c", "a/../b", "a b/c"] {
            assert!(DatasetId::parse(bad).is_err(), "{bad} accepted");
        }
        Ok(())
    }
}
