//! How an export says it failed: the message on stderr and the exit code, shared by the
//! formats.

use std::fmt::Display;
use std::io::Write;

use crate::exit_status::Status;

/// The exit status of an export error: 1 when the input data is at fault (an episode that
/// cannot be read or holds data the format cannot take), 2 for usage and I/O errors.
pub(crate) fn error_status(bad_data: bool) -> Status {
    if bad_data {
        Status::Corrupt
    } else {
        Status::Error
    }
}

/// Say `wshard export FORMAT: ERROR` on `err`; the exit code of [`error_status`].
pub(crate) fn failed(err: &mut impl Write, format: &str, e: &impl Display, bad_data: bool) -> u8 {
    let _ = writeln!(err, "wshard export {format}: {e}");
    error_status(bad_data).code()
}
