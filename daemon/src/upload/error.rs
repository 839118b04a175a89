//! Why a pass of the uploader stopped ([`CycleError`]), what failed about one episode
//! (`EpisodeError`), and the short kind of a store error that status and the metrics
//! show ([`error_kind`]).

use wshard_publish::store::{OP_COMPLETE_MULTIPART, OP_UPLOAD_PART};
use wshard_publish::PublishError;

use super::queue_log::QueueLogError;

/// Why a pass stopped.
#[derive(Debug, thiserror::Error)]
pub enum CycleError {
    /// The queue log failed: the uploader stops.
    #[error(transparent)]
    Queue(#[from] QueueLogError),
    /// The store failed: retry after the backoff.
    #[error(transparent)]
    Store(#[from] PublishError),
    /// The daemon is shutting down.
    #[error("stopped")]
    Stopped,
}

/// What failed about one episode (skipped until a restart).
#[derive(Debug)]
pub(super) enum EpisodeError {
    Cycle(CycleError),
    /// Its local files cannot be read or changed since they were enqueued.
    Local(PublishError),
}

impl From<QueueLogError> for EpisodeError {
    fn from(e: QueueLogError) -> Self {
        Self::Cycle(CycleError::Queue(e))
    }
}

impl From<CycleError> for EpisodeError {
    fn from(e: CycleError) -> Self {
        Self::Cycle(e)
    }
}

/// The short kind of a store error, for status and metrics.
#[must_use]
pub fn error_kind(e: &PublishError) -> &'static str {
    match e {
        PublishError::CredentialsMissing { .. } => "credentials_missing",
        PublishError::CredentialsRejected { .. } => "credentials_rejected",
        PublishError::Forbidden { .. } => "forbidden",
        PublishError::BucketNotFound { .. } => "bucket_not_found",
        PublishError::EndpointUnreachable { .. } => "endpoint_unreachable",
        PublishError::StoreUnavailable { .. } => "store_unavailable",
        PublishError::BlobMismatch { .. } => "blob_mismatch",
        PublishError::LatestConflict { .. } => "latest_conflict",
        PublishError::UploadGone { .. } => "upload_gone",
        PublishError::InvalidConfig { .. } | PublishError::InvalidDataset { .. } => "config",
        PublishError::Io { .. }
        | PublishError::EpisodeRead { .. }
        | PublishError::ManifestRead { .. }
        | PublishError::LocalChunkMismatch { .. }
        | PublishError::LocalFileChanged { .. }
        | PublishError::EpisodeNotFinished { .. }
        | PublishError::EpisodeNotFound { .. }
        | PublishError::EpisodeStatusUnknown { .. }
        | PublishError::AnnotationsRead { .. } => "local_episode",
        _ => "store",
    }
}

/// Whether `e` is a failed step (a part, the completion) of an existing multipart upload
/// with the store answering: a server error that may persist, another error reply, the
/// upload lost again. An unreachable store is not the upload's fault.
#[must_use]
pub fn is_multipart_step_failure(e: &PublishError) -> bool {
    match e {
        PublishError::StoreUnavailable { op, .. } | PublishError::Store { op, .. } => {
            [OP_UPLOAD_PART, OP_COMPLETE_MULTIPART].contains(op)
        }
        PublishError::UploadGone { .. } => true,
        _ => false,
    }
}
