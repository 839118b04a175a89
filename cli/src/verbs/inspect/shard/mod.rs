//! `wshard inspect FILE`: `model` reads what a shard holds into an `Inspection`,
//! `render` prints it as text or JSON; `run` does both. `render` uses `model`, never the
//! reverse.

mod model;
mod render;

use std::io::Write;
use std::path::Path;

pub use model::*;
use render::{write_json, write_text};

use crate::exit_status::Status;
use crate::shard_view::describe::error_about;

/// Run `wshard inspect`: print to `out`, report failures to `err`.
///
/// Exit status: [`Status::Ok`] when the file was shown and every block is good,
/// [`Status::Corrupt`] when some block is bad, the meta blocks are unreadable, or the file
/// is not a readable shard,
/// [`Status::Error`] on I/O errors (including failing to write the output).
pub fn run(path: &Path, opts: InspectOptions, out: &mut dyn Write, err: &mut dyn Write) -> Status {
    let ins = match Inspection::read(path, opts.verbose) {
        Ok(ins) => ins,
        Err(e) => {
            let _ = writeln!(
                err,
                "wshard inspect: {}: {}",
                path.display(),
                error_about(path, &e)
            );
            return if e.is_io() {
                Status::Error
            } else {
                Status::Corrupt
            };
        }
    };
    print(&ins, opts, out, err)
}

/// Print an inspection gathered elsewhere (a remote shard); exit status as [`run`].
pub fn print(
    ins: &Inspection,
    opts: InspectOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Status {
    let written = if opts.json {
        write_json(ins, opts.verbose, out)
    } else {
        write_text(ins, opts.verbose, out)
    };
    match written.and_then(|()| out.flush()) {
        Err(e) => {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                let _ = writeln!(err, "wshard inspect: writing output: {e}");
            }
            Status::Error
        }
        Ok(()) if ins.ok() => Status::Ok,
        Ok(()) => Status::Corrupt,
    }
}
