//! [`Publisher::append`]: add episodes whose blobs are already on the store to a dataset as
//! a new version on top of the latest one, so several robots can feed one dataset without
//! any of them holding the others' episodes (docs/PUBLISH.md, "Appending").
//!
//! 1. Every file of every episode must already be a blob of the right size (HEAD; never
//!    sent here): else [`PublishError::BlobNotStored`] and nothing is written.
//! 2. Read `latest.json` (version and ETag), the latest version (checked
//!    against its hash) and its catalog (read back with [`catalog::read_rows`]).
//! 3. Nothing new (every episode already in latest with the same status and files):
//!    [`LatestChange::Unchanged`], no version written.
//! 4. The new version: latest's episodes plus these (the same key replaced); the catalog:
//!    latest's rows minus the replaced keys' plus these episodes' rows, ordered by episode
//!    key (so the same set of episodes gives the same catalog, whoever appended first).
//!    Stored create-only like every version; then `latest.json` is moved by compare-and-swap.
//! 5. Another writer moved `latest.json` first ([`PublishError::LatestConflict`]): back to
//!    2 with the new latest, up to `max_attempts` times in all.

use std::collections::{BTreeMap, BTreeSet};

use wshard::episode_dir::names::{validate_stream_name, MAX_STREAM_NAME_BYTES};

use crate::catalog::{self, CatalogRow};
use crate::episodes::LocalEpisode;
use crate::error::PublishError;
use crate::layout::DatasetId;
use crate::publish::{LatestChange, ObservedLatest, PreparedVersion, Publisher};
use crate::version::{DatasetVersion, EpisodeEntry, FileEntry};

/// Attempts of one append ([`Publisher::append`]'s `max_attempts`) when other publishers
/// move `latest.json` at the same time: `wshard publish --append` and the daemon's
/// uploader both take this many.
pub const APPEND_ATTEMPTS: usize = 5;

/// What an append did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppendReport {
    /// The version latest now points at (ours, or the one that already held everything).
    pub version_hash: String,
    /// What became of `latest.json`.
    pub latest: LatestChange,
    /// The keys in the version of the episodes appended (empty when nothing was new).
    pub added: Vec<String>,
    /// Compare-and-swap attempts made (1 when no other writer came in between).
    pub attempts: usize,
}

/// One append attempt's outcome before `latest.json` is touched.
#[derive(Clone, Debug)]
pub enum AppendPlan {
    /// The merged version, stored; `latest.json` still to move.
    New(Box<PreparedVersion>),
    /// The observed version already holds every episode as it is: its hash.
    AlreadyThere(String),
}

/// The key in a dataset version of an episode published by a robot: `<robot>/<episode_id>` when
/// `robot` is given (episode ids are only unique per robot), else `<episode_id>`.
#[must_use]
pub fn episode_key(robot: Option<&str>, episode_id: &str) -> String {
    match robot {
        Some(r) => format!("{r}/{episode_id}"),
        None => episode_id.to_owned(),
    }
}

/// A robot name is a key component of the dataset (`ROBOT/EPISODE`) and, pulled, a
/// directory name, so it follows the rule of episode ids and stream names, the one rule of
/// robot names (`wshardd`'s `publish.robot` is checked with it too): 1 to
/// [`MAX_STREAM_NAME_BYTES`] bytes of `A-Z a-z 0-9 . _ -`, not starting with `.`
/// ([`validate_stream_name`]). Check a configured name before anything is sent.
///
/// # Errors
/// [`PublishError::InvalidConfig`] with field `robot`.
pub fn check_robot(robot: Option<&str>) -> Result<(), PublishError> {
    let Some(r) = robot else { return Ok(()) };
    validate_stream_name(r).map_err(|_| PublishError::InvalidConfig {
        field: "robot",
        reason: format!(
            "{r:?}: must be 1 to {MAX_STREAM_NAME_BYTES} bytes of A-Z a-z 0-9 . _ -, not \
             starting with `.`"
        ),
    })
}

fn entry_of(ep: &LocalEpisode) -> EpisodeEntry {
    EpisodeEntry {
        status: ep.status.as_str().to_owned(),
        files: ep
            .files
            .iter()
            .map(|f| {
                (
                    f.rel.clone(),
                    FileEntry {
                        sha256: f.sha256.clone(),
                        size: f.size,
                    },
                )
            })
            .collect(),
    }
}

/// What the appended episodes bring: their entries in the version and catalog rows, by key.
struct Addition {
    entries: BTreeMap<String, EpisodeEntry>,
    rows: Vec<CatalogRow>,
}

impl Publisher {
    /// Add `episodes` (whose blobs are already on the store) to `dataset` as a new
    /// version: latest's episodes plus these under [`episode_key`]`(robot, id)`, the
    /// catalog merged (an episode's `robot` column is `robot` when its own metadata has
    /// none); `latest.json` moved by compare-and-swap, re-read and re-merged on a conflict,
    /// `max_attempts` times in all (0 counts as 1).
    ///
    /// # Errors
    /// [`PublishError::BlobNotStored`] (before anything is written),
    /// [`PublishError::InvalidConfig`] for a bad robot name, no episode or the same episode
    /// key twice, [`PublishError::LatestConflict`]
    /// after `max_attempts`, [`PublishError::CatalogRead`], the errors of reading episodes,
    /// versions and the store.
    pub fn append(
        &self,
        dataset: &DatasetId,
        robot: Option<&str>,
        episodes: &[LocalEpisode],
        max_attempts: usize,
    ) -> Result<AppendReport, PublishError> {
        let addition = self.addition(dataset, robot, episodes)?;
        self.check_blobs(robot, episodes)?;
        let max_attempts = max_attempts.max(1);
        let mut attempt = 1;
        loop {
            let observed = self.observe_latest(dataset)?;
            let prepared = match self.prepare_append_over(dataset, &addition, &observed)? {
                AppendPlan::New(prepared) => *prepared,
                AppendPlan::AlreadyThere(version_hash) => {
                    return Ok(AppendReport {
                        version_hash,
                        latest: LatestChange::Unchanged,
                        added: Vec::new(),
                        attempts: attempt,
                    })
                }
            };
            match self.commit_over(prepared, observed) {
                Ok(r) => {
                    return Ok(AppendReport {
                        version_hash: r.prepared.version_hash,
                        latest: r.latest,
                        added: addition.entries.keys().cloned().collect(),
                        attempts: attempt,
                    })
                }
                Err(PublishError::LatestConflict { .. }) if attempt < max_attempts => {
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// One attempt of [`Publisher::append`] without moving `latest.json`: the merged version
    /// on top of `observed`, stored (create-only), or [`AppendPlan::AlreadyThere`]. Pass a
    /// new version to [`Publisher::commit_over`] with the same `observed`.
    ///
    /// # Errors
    /// As [`Publisher::append`].
    pub fn prepare_append(
        &self,
        dataset: &DatasetId,
        robot: Option<&str>,
        episodes: &[LocalEpisode],
        observed: &ObservedLatest,
    ) -> Result<AppendPlan, PublishError> {
        let addition = self.addition(dataset, robot, episodes)?;
        self.check_blobs(robot, episodes)?;
        self.prepare_append_over(dataset, &addition, observed)
    }

    /// The version entries and catalog rows of the episodes (local reads only).
    fn addition(
        &self,
        dataset: &DatasetId,
        robot: Option<&str>,
        episodes: &[LocalEpisode],
    ) -> Result<Addition, PublishError> {
        check_robot(robot)?;
        if episodes.is_empty() {
            return Err(PublishError::InvalidConfig {
                field: "episodes",
                reason: "no episode to append".into(),
            });
        }
        let mut rows = catalog::rows(&dataset.to_string(), episodes)?;
        for row in &mut rows {
            row.episode = episode_key(robot, &row.episode);
            if row.robot.is_none() {
                row.robot = robot.map(str::to_owned);
            }
        }
        let mut entries = BTreeMap::new();
        for ep in episodes {
            let key = episode_key(robot, &ep.id);
            if entries.insert(key.clone(), entry_of(ep)).is_some() {
                // Its catalog rows would be in twice.
                return Err(PublishError::InvalidConfig {
                    field: "episodes",
                    reason: format!("episode {key} is given twice"),
                });
            }
        }
        Ok(Addition { entries, rows })
    }

    /// Every file of every episode is a blob of its size on the store (HEAD).
    fn check_blobs(
        &self,
        robot: Option<&str>,
        episodes: &[LocalEpisode],
    ) -> Result<(), PublishError> {
        let mut seen = BTreeSet::new();
        for ep in episodes {
            for f in &ep.files {
                if !seen.insert(f.sha256.clone()) {
                    continue;
                }
                let key = self.keys().blob(&f.sha256);
                let found = match self.store().head_size(&key)? {
                    Some(size) if size == f.size => continue,
                    Some(size) => format!("{size} bytes there, {} expected", f.size),
                    None => "absent".to_owned(),
                };
                return Err(PublishError::BlobNotStored {
                    episode: episode_key(robot, &ep.id),
                    file: f.rel.clone(),
                    key,
                    found,
                });
            }
        }
        Ok(())
    }

    /// The catalog rows of a stored version (none for a version without a catalog).
    fn version_rows(&self, version: &DatasetVersion) -> Result<Vec<CatalogRow>, PublishError> {
        let Some(c) = &version.catalog else {
            return Ok(Vec::new());
        };
        let key = self.keys().blob(&c.sha256);
        let f = self
            .store()
            .get(&key)?
            .ok_or_else(|| PublishError::CatalogRead {
                key: key.clone(),
                detail: "not on the store".into(),
            })?;
        let actual = wshard::digest::sha256_hex(&f.bytes);
        if actual != c.sha256 {
            return Err(PublishError::BlobMismatch {
                key,
                expected: format!("sha256 {}", c.sha256),
                found: format!("sha256 {actual}"),
            });
        }
        catalog::read_rows(f.bytes).map_err(|e| PublishError::CatalogRead {
            key,
            detail: e.to_string(),
        })
    }

    fn prepare_append_over(
        &self,
        dataset: &DatasetId,
        addition: &Addition,
        observed: &ObservedLatest,
    ) -> Result<AppendPlan, PublishError> {
        let (mut version, base_rows) = match &observed.version {
            Some(v) => {
                let m = self.read_version(dataset, v)?;
                let rows = self.version_rows(&m)?;
                (m, rows)
            }
            None => (
                DatasetVersion {
                    dataset: dataset.to_string(),
                    episodes: BTreeMap::new(),
                    catalog: None,
                },
                Vec::new(),
            ),
        };
        let nothing_new = addition
            .entries
            .iter()
            .all(|(k, e)| version.episodes.get(k) == Some(e));
        if let (true, Some(v)) = (nothing_new, &observed.version) {
            return Ok(AppendPlan::AlreadyThere(v.clone()));
        }
        let mut rows: Vec<CatalogRow> = base_rows
            .into_iter()
            .filter(|r| !addition.entries.contains_key(&r.episode))
            .chain(addition.rows.iter().cloned())
            .collect();
        // Stable: the streams of an episode keep their order.
        rows.sort_by(|a, b| a.episode.cmp(&b.episode));
        for (k, e) in &addition.entries {
            version.episodes.insert(k.clone(), e.clone());
        }
        let catalog = catalog::to_parquet(&rows).map_err(|e| PublishError::CatalogWrite {
            dataset: dataset.to_string(),
            detail: e.to_string(),
        })?;
        let stored = self.store_version(dataset, version, catalog, &BTreeSet::new())?;
        Ok(AppendPlan::New(Box::new(stored.into_prepared(
            dataset,
            Vec::new(),
            Vec::new(),
        ))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn episode_keys_and_robot_names() {
        assert_eq!(episode_key(Some("r1"), "ep-7"), "r1/ep-7");
        assert_eq!(episode_key(None, "ep-7"), "ep-7");
        assert!(check_robot(Some("arm-01")).is_ok());
        assert!(check_robot(None).is_ok());
        assert!(check_robot(Some(&"r".repeat(MAX_STREAM_NAME_BYTES))).is_ok());
        let long = "r".repeat(MAX_STREAM_NAME_BYTES + 1);
        for bad in ["", "a/b", ".hidden", "x\ny", "arm 01", "bras-é", &long] {
            assert!(check_robot(Some(bad)).is_err(), "{bad:?} accepted");
        }
    }
}
