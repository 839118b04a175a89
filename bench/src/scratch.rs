//! A scratch directory for benchmark files, removed with everything in it on drop.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{io_ctx, Result};

/// `{base}/wshard-bench-{pid}-{nanos}`, created empty.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
}

impl ScratchDir {
    /// Create a fresh directory under `base` (the system temp dir when `None`).
    ///
    /// # Errors
    /// When the directory cannot be created.
    pub fn new(base: Option<&Path>) -> Result<Self> {
        let base = base.map_or_else(std::env::temp_dir, Path::to_path_buf);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = base.join(format!("wshard-bench-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).map_err(|e| io_ctx("create", &path, e))?;
        Ok(Self { path })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A path inside the directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.path) {
            eprintln!(
                "warning: could not remove scratch dir {}: {e}",
                self.path.display()
            );
        }
    }
}

/// Total length of `paths`, then delete them.
///
/// # Errors
/// When a file cannot be inspected or removed.
pub fn measure_and_remove(paths: &[PathBuf]) -> Result<u64> {
    let mut total = 0;
    for p in paths {
        total += std::fs::metadata(p)
            .map_err(|e| io_ctx("stat", p, e))?
            .len();
        std::fs::remove_file(p).map_err(|e| io_ctx("remove", p, e))?;
    }
    Ok(total)
}
