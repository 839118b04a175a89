//! Adding the uploaded episodes to the dataset: the publish crate's append (its blobs are
//! verified on the store already; nothing is sent but the manifest, the catalog and the
//! pointer).

use wshard_publish::episodes::LocalEpisode;
use wshard_publish::{DatasetId, PublishError, Publisher};

/// Append `episodes` to `dataset`; the version hash `latest.json` points at after it.
///
/// # Errors
/// The publish crate's.
pub(super) fn append(
    publisher: &Publisher,
    data_dir: &std::path::Path,
    dataset: &DatasetId,
    _robot: &str,
    episodes: &[LocalEpisode],
    _attempts: usize,
) -> Result<String, PublishError> {
    // Interim: until the publish crate's append lands, publish these episodes as the
    // dataset's version.
    let ids: Vec<String> = episodes.iter().map(|e| e.id.clone()).collect();
    let report = publisher.publish(data_dir, dataset, &ids)?;
    Ok(report.prepared.version_hash)
}
