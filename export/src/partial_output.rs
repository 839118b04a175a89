//! An output directory written whole or not at all (the WebDataset and LeRobot exports):
//! refused when it holds something (a file in its place counts) unless `overwrite`,
//! written as `<out>.partial-<pid>` and renamed at the end, so an export that fails or
//! stops half-way never looks finished.

use std::path::{Path, PathBuf};

/// Why the output directory cannot be prepared or put in place.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// The output holds something already (and no `overwrite`).
    #[error("output {} is not empty (pass --overwrite to replace it)", dir.display())]
    NotEmpty { dir: PathBuf },
    /// A file-system operation failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn io(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> OutputError {
    let path = path.to_path_buf();
    move |source| OutputError::Io { op, path, source }
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
/// [`OutputError::NotEmpty`], [`OutputError::Io`].
pub fn begin(output: &Path, overwrite: bool, fallback_name: &str) -> Result<PathBuf, OutputError> {
    if !overwrite && occupied(output)? {
        return Err(OutputError::NotEmpty {
            dir: output.to_path_buf(),
        });
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

/// Put the finished `partial` directory in place of `output` (replacing what is there).
///
/// # Errors
/// [`OutputError::Io`].
pub fn commit(partial: &Path, output: &Path) -> Result<(), OutputError> {
    if output.is_dir() {
        std::fs::remove_dir_all(output).map_err(io("remove", output))?;
    } else if output.exists() {
        std::fs::remove_file(output).map_err(io("remove", output))?;
    }
    std::fs::rename(partial, output).map_err(io("rename", partial))
}

/// Remove a failed export's partial directory (best effort: the error being reported is
/// the export's).
pub fn abandon(partial: &Path) {
    let _ = std::fs::remove_dir_all(partial);
}
