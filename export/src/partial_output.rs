//! An output directory written whole or not at all (the WebDataset and LeRobot exports):
//! refused when it holds something (a file in its place counts) unless `overwrite`, and
//! then only replaced when an export made it (`crate::output_marker`: its marker lists
//! every file in it); written as `<out>.partial-<pid>`, its marker added, and renamed at
//! the end, so an export that fails or stops half-way never looks finished.

use std::path::{Path, PathBuf};

use wshard::IoError;

use crate::output_marker::{self, MarkerError};

/// Why the output directory cannot be prepared or put in place.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// The output holds something already (and no `overwrite`).
    #[error("output {} is not empty (pass --overwrite to replace it)", dir.display())]
    NotEmpty { dir: PathBuf },
    /// `overwrite`, but the output is not an export's own (`crate::output_marker`).
    #[error(transparent)]
    NotReplaceable(#[from] MarkerError),
    /// A file-system operation failed.
    #[error(transparent)]
    Io(#[from] IoError),
}

fn io(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> OutputError {
    let path = path.to_path_buf();
    move |source| OutputError::Io(IoError::new(op, path, source))
}

/// Whether `dir` exists and holds anything (a file in its place counts).
fn occupied(dir: &Path) -> Result<bool, OutputError> {
    if !dir.exists() {
        return Ok(false);
    }
    if !dir.is_dir() {
        return Ok(true);
    }
    let mut entries = std::fs::read_dir(dir).map_err(io("list", dir))?;
    Ok(entries.next().is_some())
}

/// Check `output` can be written; the partial directory to write into (created empty).
/// `fallback_name` names it when `output` has no file name.
///
/// # Errors
/// [`OutputError::NotEmpty`], [`OutputError::NotReplaceable`] (with `overwrite`, an output
/// no export made or holding a file its export did not write), [`OutputError::Io`].
pub fn begin(output: &Path, overwrite: bool, fallback_name: &str) -> Result<PathBuf, OutputError> {
    if occupied(output)? {
        if !overwrite {
            return Err(OutputError::NotEmpty {
                dir: output.to_path_buf(),
            });
        }
        output_marker::check_replaceable(output)?;
    }
    let name = output.file_name().map_or_else(
        || fallback_name.to_owned(),
        |n| n.to_string_lossy().into_owned(),
    );
    let partial = output.with_file_name(format!("{name}.partial-{}", std::process::id()));
    if partial.exists() {
        std::fs::remove_dir_all(&partial).map_err(io("remove", &partial))?;
    }
    std::fs::create_dir_all(&partial).map_err(io("create", &partial))?;
    Ok(partial)
}

/// Write the marker of the finished `partial` directory (export `export` wrote every file
/// in it) and put the directory in place of `output`: an empty directory there is
/// replaced, an export's output (checked again) loses exactly the files its marker lists.
///
/// # Errors
/// [`OutputError::NotReplaceable`] when `output` is no longer an export's own,
/// [`OutputError::Io`].
pub fn commit(partial: &Path, output: &Path, export: &str) -> Result<(), OutputError> {
    let files = output_marker::list_files(partial)?;
    output_marker::write(partial, export, &files)?;
    if occupied(output)? {
        let marker = output_marker::check_replaceable(output)?;
        output_marker::remove_listed(output, &marker)?;
    }
    if output.exists() {
        // Empty now: `remove_dir` (never `remove_dir_all`) fails rather than delete
        // something the check did not see.
        std::fs::remove_dir(output).map_err(io("remove", output))?;
    }
    std::fs::rename(partial, output).map_err(io("rename", partial))
}

/// Remove a failed export's partial directory (best effort: the error being reported is
/// the export's).
pub fn abandon(partial: &Path) {
    let _ = std::fs::remove_dir_all(partial);
}
