//! The manifest commit: an episode's chunk manifest (`{id}_manifest.wshard`, role 0x04:
//! the chunks listed, the status) replaced atomically and durably, through
//! [`replace_atomically`]: write `{id}_manifest.wshard.tmp`, fsync it, rename it over the
//! manifest, fsync the directory. A crash at any point leaves the old manifest or the new
//! one, never a mixture; a `.tmp` left behind is removed by recovery.
//!
//! The session's finisher commits after each chunk it makes durable (and at open, with no
//! chunk); recovery commits what it rebuilt.

use wshard::manifest::Manifest;

use crate::error::StorageError;
use wshard_storage::fsio::{replace_atomically, Fs};
use wshard_storage::layout::EpisodeLayout;

/// Replace the episode's manifest atomically and durably.
///
/// # Errors
/// The failing step, naming the file.
pub(crate) fn commit_manifest(
    fs: &dyn Fs,
    layout: &EpisodeLayout,
    manifest: &Manifest,
) -> Result<(), StorageError> {
    let path = layout.manifest();
    let bytes = manifest
        .to_bytes()
        .map_err(|e| StorageError::format("encode manifest", e))?;
    replace_atomically(fs, &path, &bytes).map_err(|(op, e)| StorageError::io(op, &path, e))
}
