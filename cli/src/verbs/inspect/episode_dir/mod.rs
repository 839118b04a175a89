//! `wshard inspect DIR` on an episode directory (single- or multi-stream; whether it is
//! kept): `model` reads its streams and events into a `DirInspection`, `render` prints it
//! as text or JSON; `run` does both. `render` uses `model`, never the reverse.

mod model;
mod render;

use std::io::Write;
use std::path::Path;

pub use model::*;
use render::{write_json, write_text};

use wshard::episode_dir::EpisodeDirError;

use crate::exit_status::Status;

/// How `wshard inspect DIR` prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InspectDirOptions {
    /// One JSON object instead of text.
    pub json: bool,
}

/// Run `wshard inspect` on an episode directory.
///
/// Exit status: [`Status::Ok`] when it was shown; [`Status::Corrupt`] when its index,
/// manifests, chunks, events or annotations are bad; [`Status::Error`] for a directory
/// that is not an episode and on I/O errors (including failing to write the output).
pub fn run(
    path: &Path,
    opts: InspectDirOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Status {
    let ins = match DirInspection::read(path) {
        Ok(ins) => ins,
        Err(e) => {
            let _ = writeln!(err, "wshard inspect: {}: {e}", path.display());
            return if e.is_io() || matches!(e, EpisodeDirError::NotAnEpisode { .. }) {
                Status::Error
            } else {
                Status::Corrupt
            };
        }
    };
    let written = if opts.json {
        write_json(&ins, out)
    } else {
        write_text(&ins, out)
    };
    match written.and_then(|()| out.flush()) {
        Ok(()) => Status::Ok,
        Err(e) => {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                let _ = writeln!(err, "wshard inspect: writing output: {e}");
            }
            Status::Error
        }
    }
}
