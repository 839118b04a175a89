//! The output directory: refused when it is not empty (unless `overwrite`), written as
//! `<out>.partial-<pid>` and renamed at the end, so an export that stops half-way never
//! looks finished.

use std::path::{Path, PathBuf};

use super::error::WebdatasetError;

/// Check `out` can be written; the partial directory to write into (created empty).
///
/// # Errors
/// [`WebdatasetError::OutputNotEmpty`], [`WebdatasetError::Io`].
pub fn begin(out: &Path, overwrite: bool) -> Result<PathBuf, WebdatasetError> {
    if !overwrite && out.is_dir() {
        let mut entries =
            std::fs::read_dir(out).map_err(|e| WebdatasetError::io("list", out, e))?;
        if entries.next().is_some() {
            return Err(WebdatasetError::OutputNotEmpty {
                path: out.to_path_buf(),
            });
        }
    } else if !overwrite && out.exists() {
        return Err(WebdatasetError::OutputNotEmpty {
            path: out.to_path_buf(),
        });
    }
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "webdataset".to_owned());
    let partial = out.with_file_name(format!("{name}.partial-{}", std::process::id()));
    if partial.exists() {
        std::fs::remove_dir_all(&partial)
            .map_err(|e| WebdatasetError::io("remove", &partial, e))?;
    }
    std::fs::create_dir_all(&partial).map_err(|e| WebdatasetError::io("create", &partial, e))?;
    Ok(partial)
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
    if out.is_dir() {
        std::fs::remove_dir_all(out).map_err(|e| WebdatasetError::io("remove", out, e))?;
    } else if out.exists() {
        std::fs::remove_file(out).map_err(|e| WebdatasetError::io("remove", out, e))?;
    }
    std::fs::rename(partial, out).map_err(|e| WebdatasetError::io("rename", partial, e))
}

/// Remove a partial directory after a failure (best effort: the error being reported is
/// the one that matters).
pub fn abandon(partial: &Path) {
    let _ = std::fs::remove_dir_all(partial);
}
