//! The committed fixtures the tests start from, and copying them into a test's own directory.

use std::path::{Path, PathBuf};

/// `golden/datadir-v0.1/data`: a data directory written by the 0.1 release
/// (golden/datadir-v0.1/README.md).
#[must_use]
pub fn datadir_v01() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../golden/datadir-v0.1/data")
}

/// Copy the tree `from` into `to` (created), files byte for byte. Panics on an I/O error
/// (tests only).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy's directory");
    for e in std::fs::read_dir(from).expect("read the fixture directory") {
        let e = e.expect("fixture directory entry");
        let dst = to.join(e.file_name());
        if e.file_type().expect("fixture file type").is_dir() {
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).expect("copy a fixture file");
        }
    }
}
