//! The output directory: refused when it holds something (unless overwriting), written as
//! `<out>.partial-<pid>` and renamed at the end, so a failed or crashed export never looks
//! finished.

use std::path::{Path, PathBuf};

use super::error::LerobotError;

/// Whether `dir` exists and holds anything (a file in its place counts).
fn occupied(dir: &Path) -> Result<bool, LerobotError> {
    if !dir.exists() {
        return Ok(false);
    }
    if !dir.is_dir() {
        return Ok(true);
    }
    let mut entries = std::fs::read_dir(dir).map_err(|e| LerobotError::io("list", dir, e))?;
    Ok(entries.next().is_some())
}

/// Check `output` and create the partial directory the export writes into.
///
/// # Errors
/// [`LerobotError::OutputNotEmpty`], I/O errors.
pub fn prepare(output: &Path, overwrite: bool) -> Result<PathBuf, LerobotError> {
    if occupied(output)? && !overwrite {
        return Err(LerobotError::OutputNotEmpty {
            dir: output.to_path_buf(),
        });
    }
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "lerobot".into());
    let partial = output.with_file_name(format!("{name}.partial-{}", std::process::id()));
    if partial.exists() {
        std::fs::remove_dir_all(&partial).map_err(|e| LerobotError::io("remove", &partial, e))?;
    }
    std::fs::create_dir_all(&partial).map_err(|e| LerobotError::io("create", &partial, e))?;
    Ok(partial)
}

/// Move the finished `partial` directory to `output` (replacing what is there).
///
/// # Errors
/// I/O errors.
pub fn commit(partial: &Path, output: &Path) -> Result<(), LerobotError> {
    if output.is_dir() {
        std::fs::remove_dir_all(output).map_err(|e| LerobotError::io("remove", output, e))?;
    } else if output.exists() {
        std::fs::remove_file(output).map_err(|e| LerobotError::io("remove", output, e))?;
    }
    std::fs::rename(partial, output).map_err(|e| LerobotError::io("rename", partial, e))
}

/// Remove a failed export's partial directory (best effort: the error being reported is
/// the export's).
pub fn abandon(partial: &Path) {
    let _ = std::fs::remove_dir_all(partial);
}

/// Create `dir` and its parents.
///
/// # Errors
/// I/O errors.
pub fn create_dir(dir: &Path) -> Result<(), LerobotError> {
    std::fs::create_dir_all(dir).map_err(|e| LerobotError::io("create", dir, e))
}
