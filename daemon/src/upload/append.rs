//! Adding the uploaded episodes to the dataset: the publish crate's append (their blobs are
//! verified on the store already; nothing is sent but the manifest, the catalog and the
//! pointer), under the robot's key prefix (`<robot>/<episode>`).

use wshard_publish::episodes::LocalEpisode;
use wshard_publish::{DatasetId, PublishError, Publisher};

/// Append `episodes` to `dataset` as `robot`'s; the version hash `latest.json` points at
/// after it.
///
/// # Errors
/// The publish crate's.
pub(super) fn append(
    publisher: &Publisher,
    dataset: &DatasetId,
    robot: &str,
    episodes: &[LocalEpisode],
    attempts: usize,
) -> Result<String, PublishError> {
    let report = publisher.append(dataset, Some(robot), episodes, attempts)?;
    Ok(report.version_hash)
}
