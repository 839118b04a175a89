//! `wshard inspect --peek FILE.wal`: `model` reads a journal segment into a
//! `JournalPeek`, `render` prints it as text or JSON; `run` does both. `render` uses
//! `model`, never the reverse.

mod model;
mod render;

use std::io::Write;
use std::path::Path;

pub use model::*;
use render::{write_json, write_text};

use crate::exit_status::Status;

/// Run `wshard inspect --peek` on a journal.
///
/// Exit status: [`Status::Ok`] when every byte was usable and the segment header decodes;
/// [`Status::Corrupt`] otherwise; [`Status::Error`] when the file cannot be read or the
/// output written.
pub fn run(path: &Path, opts: PeekOptions, out: &mut dyn Write, err: &mut dyn Write) -> Status {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            let _ = writeln!(err, "wshard inspect: {}: {e}", path.display());
            return Status::Error;
        }
    };
    let peek = JournalPeek::from_bytes(path, &bytes);
    let written = if opts.json {
        write_json(&peek, opts.verbose, out)
    } else {
        write_text(&peek, opts.verbose, out)
    };
    match written.and_then(|()| out.flush()) {
        Err(e) => {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                let _ = writeln!(err, "wshard inspect: writing output: {e}");
            }
            Status::Error
        }
        Ok(()) if peek.ok() => Status::Ok,
        Ok(()) => Status::Corrupt,
    }
}
