//! The output directory (`crate::partial_output`: refused when not empty unless
//! `overwrite`, written as `<out>.partial-<pid>` and renamed at the end) and its files.

use std::path::{Path, PathBuf};

use super::error::WebdatasetError;
use crate::partial_output;

/// The export's name in the output's marker (`crate::output_marker`) and in the partial
/// directory's name when the output has none.
const EXPORT: &str = "webdataset";

/// Check `out` can be written; the partial directory to write into (created empty).
///
/// # Errors
/// [`WebdatasetError::OutputNotEmpty`], [`WebdatasetError::Io`].
pub fn begin(out: &Path, overwrite: bool) -> Result<PathBuf, WebdatasetError> {
    Ok(partial_output::begin(out, overwrite, EXPORT)?)
}

/// Write one file of the output.
///
/// # Errors
/// [`WebdatasetError::Io`] naming the file.
pub fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), WebdatasetError> {
    let path = dir.join(name);
    std::fs::write(&path, bytes).map_err(|e| WebdatasetError::io("write", &path, e))
}

/// Put the finished partial directory in place of `out`.
///
/// # Errors
/// [`WebdatasetError::Io`].
pub fn commit(partial: &Path, out: &Path) -> Result<(), WebdatasetError> {
    Ok(partial_output::commit(partial, out, EXPORT)?)
}

pub use partial_output::abandon;
