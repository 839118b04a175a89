//! Locating the built `wshardd` and `wshard` binaries next to the test executable.

use std::path::{Path, PathBuf};
use std::process::Output;

/// What to do when a binary is missing.
pub const BUILD_HINT: &str =
    "build them first: cargo build -p wshard-recorder -p wshard-cli --bins; `cargo test --workspace` does this";

/// `target/<profile>/`: the test binary runs from `target/<profile>/deps/`. The environment
/// variable `WSHARD_BIN_DIR` overrides it.
#[must_use]
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("WSHARD_BIN_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("cannot locate the test executable");
    let parent = exe
        .parent()
        .expect("the test executable has no parent directory");
    if parent.file_name().is_some_and(|n| n == "deps") {
        parent.parent().unwrap_or(parent).to_path_buf()
    } else {
        parent.to_path_buf()
    }
}

/// The path of binary `name` in [`bin_dir`]; panics with [`BUILD_HINT`] when it is missing.
#[must_use]
pub fn binary(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.is_file(),
        "binary `{name}` not found at {}: {BUILD_HINT}",
        path.display()
    );
    path
}

/// The daemon.
#[must_use]
pub fn wshardd() -> PathBuf {
    binary("wshardd")
}

/// The operator CLI.
#[must_use]
pub fn wshard() -> PathBuf {
    binary("wshard")
}

/// A finished command's stdout then stderr, as text (for assertion messages).
#[must_use]
pub fn output_text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// True when `path` is short enough for a Unix socket address (with margin).
#[must_use]
pub fn socket_path_fits(path: &Path) -> bool {
    path.as_os_str().len() < 100
}
