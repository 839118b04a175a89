//! The output directory (`crate::partial_output`: refused when it holds something unless
//! overwriting, written as `<out>.partial-<pid>` and renamed at the end) and its
//! subdirectories.

use std::path::{Path, PathBuf};

use super::error::LerobotError;
use crate::partial_output;

/// The export's name in the output's marker (`crate::output_marker`) and in the partial
/// directory's name when the output has none.
const EXPORT: &str = "lerobot";

/// Check `output` and create the partial directory the export writes into.
///
/// # Errors
/// [`LerobotError::OutputNotEmpty`], I/O errors.
pub fn prepare(output: &Path, overwrite: bool) -> Result<PathBuf, LerobotError> {
    Ok(partial_output::begin(output, overwrite, EXPORT)?)
}

/// Move the finished `partial` directory to `output` (replacing what is there).
///
/// # Errors
/// I/O errors.
pub fn commit(partial: &Path, output: &Path) -> Result<(), LerobotError> {
    Ok(partial_output::commit(partial, output, EXPORT)?)
}

pub use partial_output::abandon;

/// Create `dir` and its parents.
///
/// # Errors
/// I/O errors.
pub fn create_dir(dir: &Path) -> Result<(), LerobotError> {
    std::fs::create_dir_all(dir).map_err(|e| LerobotError::io("create", dir, e))
}
