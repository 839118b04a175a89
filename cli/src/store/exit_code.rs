//! The exit codes of the verbs that publish to the store and read datasets from it
//! (`publish`, `dataset`), and the one a store error deserves.

use wshard_publish::PublishError;

/// Exit: published.
pub const EXIT_OK: u8 = 0;
/// Exit: failed.
pub const EXIT_FAILED: u8 = 1;
/// Exit: usage or setup.
pub const EXIT_USAGE: u8 = 2;
/// Exit: lost the race on latest.json.
pub const EXIT_CONFLICT: u8 = 3;

/// The exit code for an error.
#[must_use]
pub fn exit_code(e: &PublishError) -> u8 {
    match e {
        PublishError::LatestConflict { .. } => EXIT_CONFLICT,
        PublishError::InvalidDataset { .. }
        | PublishError::InvalidConfig { .. }
        | PublishError::CredentialsMissing { .. }
        | PublishError::CredentialsFile { .. } => EXIT_USAGE,
        _ => EXIT_FAILED,
    }
}
