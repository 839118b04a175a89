//! What an export wrote into its output directory: the file [`MARKER_FILE`] that every
//! export (WebDataset, LeRobot, MCAP) leaves there, listing the files it wrote, so that
//! `--overwrite` replaces an export's own files and nothing else.
//!
//! The rule, the same for every export: an output directory that is absent or empty is
//! written; a non-empty one needs `--overwrite`, and then must have been made by an export:
//! it holds the marker, and every file in it is the marker, a file the marker lists, or a
//! listed file's `.partial` (an MCAP file being written); empty directories hold nothing and
//! do not count. Anything else (a directory no export made, a file someone added) is
//! refused, naming the file, and nothing is removed. An export never deletes a file it did
//! not write.
//!
//! The marker is JSON, `{"export": "webdataset", "files": ["manifest.jsonl", ...]}`, the
//! files as paths relative to the output directory (`/`-separated), sorted: the same bytes
//! for the same output.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use wshard::IoError;

/// The marker's file name, in the output directory.
pub const MARKER_FILE: &str = ".wshard-export.json";

/// The suffix of a file being written (the MCAP export's `<episode>.mcap.partial`).
const PARTIAL_SUFFIX: &str = ".partial";

/// Why an output directory cannot be replaced, or its marker not written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MarkerError {
    /// A non-empty output without a marker: no export made it.
    #[error("output {} holds files and no {MARKER_FILE}: no export made it, so --overwrite does not replace it (an export removes only files it wrote); empty it or choose another directory", dir.display())]
    NotAnExport { dir: PathBuf },
    /// The output holds a file its marker does not list.
    #[error("output {} holds {}, which the export there did not write (it is not in {MARKER_FILE}); --overwrite removes only files an export wrote: move it away or choose another directory", dir.display(), file.display())]
    ForeignFile { dir: PathBuf, file: PathBuf },
    /// The marker cannot be understood (then nothing in the directory is taken as an
    /// export's).
    #[error("{}: {reason}", path.display())]
    BadMarker { path: PathBuf, reason: String },
    /// A file-system operation failed.
    #[error(transparent)]
    Io(#[from] IoError),
}

fn io(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> MarkerError {
    let path = path.to_path_buf();
    move |source| MarkerError::Io(IoError::new(op, path, source))
}

/// What the marker of an output directory says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marker {
    /// The export that wrote the directory (`webdataset`, `lerobot`, `mcap`).
    pub export: String,
    /// The files it wrote, relative to the directory, sorted.
    pub files: BTreeSet<String>,
}

impl Marker {
    /// Whether `relative` (a `/`-separated path in the directory) is the export's: the
    /// marker, a listed file, or a listed file's `.partial`.
    #[must_use]
    pub fn owns(&self, relative: &str) -> bool {
        relative == MARKER_FILE
            || self.files.contains(relative)
            || relative
                .strip_suffix(PARTIAL_SUFFIX)
                .is_some_and(|f| self.files.contains(f))
    }
}

/// A listed path that stays inside the directory: relative, no `..`, no root.
fn inside(relative: &str) -> bool {
    !relative.is_empty()
        && Path::new(relative)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
}

/// Write the marker of `dir`: export `export` wrote `files` (relative paths).
///
/// # Errors
/// [`MarkerError::Io`] naming the marker.
pub fn write(dir: &Path, export: &str, files: &BTreeSet<String>) -> Result<(), MarkerError> {
    let path = dir.join(MARKER_FILE);
    let value = serde_json::json!({ "export": export, "files": files });
    let mut bytes = serde_json::to_vec_pretty(&value).map_err(|e| MarkerError::BadMarker {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    bytes.push(b'\n');
    std::fs::write(&path, bytes).map_err(io("write", &path))
}

/// The marker of `dir`, `None` when there is none.
///
/// # Errors
/// [`MarkerError::BadMarker`] when it is not a marker (or lists a path outside `dir`),
/// [`MarkerError::Io`].
pub fn read(dir: &Path) -> Result<Option<Marker>, MarkerError> {
    let path = dir.join(MARKER_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("read", &path)(e)),
    };
    let bad = |reason: String| MarkerError::BadMarker {
        path: path.clone(),
        reason,
    };
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| bad(format!("not JSON: {e}")))?;
    let export = value
        .get("export")
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| bad("no \"export\" string".to_owned()))?
        .to_owned();
    let listed = value
        .get("files")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| bad("no \"files\" list".to_owned()))?;
    let mut files = BTreeSet::new();
    for f in listed {
        let f = f
            .as_str()
            .ok_or_else(|| bad(format!("file {f} is not a string")))?;
        if !inside(f) {
            return Err(bad(format!(
                "file {f:?} is not a path inside the directory"
            )));
        }
        files.insert(f.to_owned());
    }
    Ok(Some(Marker { export, files }))
}

/// Every file under `dir`, as `/`-separated paths relative to it, sorted.
///
/// # Errors
/// [`MarkerError::Io`] naming the directory that cannot be listed.
pub fn list_files(dir: &Path) -> Result<BTreeSet<String>, MarkerError> {
    let mut out = BTreeSet::new();
    let mut pending = vec![(dir.to_path_buf(), String::new())];
    while let Some((path, prefix)) = pending.pop() {
        for entry in std::fs::read_dir(&path).map_err(io("list", &path))? {
            let entry = entry.map_err(io("list", &path))?;
            let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
            let kind = entry.file_type().map_err(io("stat", &entry.path()))?;
            if kind.is_dir() {
                pending.push((entry.path(), format!("{name}/")));
            } else {
                out.insert(name);
            }
        }
    }
    Ok(out)
}

/// Check that the non-empty output `dir` is an export's and holds nothing else; its marker.
///
/// # Errors
/// [`MarkerError::NotAnExport`] (no marker; also for a file in place of the directory),
/// [`MarkerError::ForeignFile`] naming the first file the marker does not list,
/// [`MarkerError::BadMarker`], [`MarkerError::Io`].
pub fn check_replaceable(dir: &Path) -> Result<Marker, MarkerError> {
    if !dir.is_dir() {
        return Err(MarkerError::NotAnExport {
            dir: dir.to_path_buf(),
        });
    }
    let marker = read(dir)?.ok_or_else(|| MarkerError::NotAnExport {
        dir: dir.to_path_buf(),
    })?;
    if let Some(foreign) = list_files(dir)?.into_iter().find(|f| !marker.owns(f)) {
        return Err(MarkerError::ForeignFile {
            dir: dir.to_path_buf(),
            file: dir.join(foreign),
        });
    }
    Ok(marker)
}

/// Remove what `marker` lists from `dir` (files already gone are fine), their `.partial`
/// files, the marker, and the directories under `dir` left empty by that. Call after
/// [`check_replaceable`]: no file that is not listed is touched.
///
/// # Errors
/// [`MarkerError::Io`] naming the file that cannot be removed.
pub fn remove_listed(dir: &Path, marker: &Marker) -> Result<(), MarkerError> {
    let mut parents = BTreeSet::new();
    let partials = marker.files.iter().map(|f| format!("{f}{PARTIAL_SUFFIX}"));
    let names: Vec<String> = marker.files.iter().cloned().chain(partials).collect();
    for name in names.iter().map(String::as_str).chain([MARKER_FILE]) {
        let path = dir.join(name);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io("remove", &path)(e)),
        }
        let mut parent = Path::new(name).parent();
        while let Some(p) = parent.filter(|p| !p.as_os_str().is_empty()) {
            parents.insert(p.to_path_buf());
            parent = p.parent();
        }
    }
    // Deepest first; a directory that still holds something stays.
    for p in parents.iter().rev() {
        let _ = std::fs::remove_dir(dir.join(p));
    }
    remove_empty_dirs(dir)
}

/// Remove the empty directories under `dir` (deepest first; never a file).
fn remove_empty_dirs(dir: &Path) -> Result<(), MarkerError> {
    for entry in std::fs::read_dir(dir).map_err(io("list", dir))? {
        let entry = entry.map_err(io("list", dir))?;
        if entry
            .file_type()
            .map_err(io("stat", &entry.path()))?
            .is_dir()
        {
            remove_empty_dirs(&entry.path())?;
            // Fails (and is left) when something is still in it.
            let _ = std::fs::remove_dir(entry.path());
        }
    }
    Ok(())
}
