//! Reading an `.npz` archive (`np.savez`, stored, or `np.savez_compressed`, deflated): a
//! zip of `.npy` members, one array per key.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use wshard::IoError;

use crate::array::Array;
use crate::error::{ImportError, Result};
use crate::npy::{decode, NpyProblem};

/// Suffix of the archive's members.
const NPY_SUFFIX: &str = ".npy";

/// Every array of the archive at `path`, by key (the member name without `.npy`).
///
/// # Errors
/// [`ImportError::Io`], [`ImportError::NotFormat`] for a file that is not a zip archive,
/// [`ImportError::Unsupported`] / [`ImportError::BadData`] naming the key.
pub fn read_npz(path: &Path) -> Result<BTreeMap<String, Array>> {
    let file = std::fs::File::open(path)
        .map_err(|source| ImportError::Io(IoError::new("open", path, source)))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(|e| {
        ImportError::NotFormat {
            path: path.to_path_buf(),
            expected: "an .npz (zip) archive",
            message: e.to_string(),
        }
    })?;
    let mut out = BTreeMap::new();
    for i in 0..zip.len() {
        let mut member = zip.by_index(i).map_err(|e| ImportError::NotFormat {
            path: path.to_path_buf(),
            expected: "an .npz (zip) archive",
            message: format!("member {i}: {e}"),
        })?;
        let name = member.name().to_owned();
        let Some(key) = name.strip_suffix(NPY_SUFFIX) else {
            return Err(ImportError::Unsupported {
                path: path.to_path_buf(),
                key: name,
                what: "archive member (not an .npy array)".into(),
            });
        };
        let mut bytes = Vec::with_capacity(usize::try_from(member.size()).unwrap_or(0));
        member
            .read_to_end(&mut bytes)
            .map_err(|e| ImportError::BadData {
                path: path.to_path_buf(),
                key: key.to_owned(),
                message: format!("cannot read the member: {e}"),
            })?;
        let array = decode(&bytes).map_err(|p| match p {
            NpyProblem::Unsupported(what) => ImportError::Unsupported {
                path: path.to_path_buf(),
                key: key.to_owned(),
                what,
            },
            NpyProblem::Bad(message) => ImportError::BadData {
                path: path.to_path_buf(),
                key: key.to_owned(),
                message,
            },
        })?;
        out.insert(key.to_owned(), array);
    }
    Ok(out)
}
