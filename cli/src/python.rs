//! The Python interpreter of the verbs that run Python (`import bag`, `query`):
//! `$WSHARD_PYTHON` when set (non-empty), else `python3` on `PATH`.

use std::ffi::OsString;

/// The environment variable naming the Python interpreter.
pub const PYTHON_ENV: &str = "WSHARD_PYTHON";

/// The interpreter when [`PYTHON_ENV`] is not set.
pub const DEFAULT_PYTHON: &str = "python3";

/// The interpreter: `$WSHARD_PYTHON` (non-empty), else `python3`.
#[must_use]
pub fn python() -> OsString {
    match std::env::var_os(PYTHON_ENV) {
        Some(v) if !v.is_empty() => v,
        _ => OsString::from(DEFAULT_PYTHON),
    }
}

/// Where the interpreter came from, for messages.
#[must_use]
pub fn python_source() -> &'static str {
    match std::env::var_os(PYTHON_ENV) {
        Some(v) if !v.is_empty() => "$WSHARD_PYTHON",
        _ => "the default; set $WSHARD_PYTHON to choose another",
    }
}
