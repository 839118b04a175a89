//! `wshard recover DIR [--apply]`: `target` tells what DIR is (an episode, single- or
//! multi-stream, or a data directory), `model` runs the daemon's recovery on it into a
//! `RecoverRun`, `render` prints it as text or JSON; `run` does all three.
//! `render` uses `model`, `model` uses `target`, never the reverse.

mod model;
mod render;
mod target;

use std::io::{self, Write};
use std::path::Path;

pub use model::*;
use render::{write_json, write_text};
pub use target::{Target, TargetError};

/// Run `wshard recover`.
///
/// Exit status ([`RecoverStatus::code`]): 0 nothing lost (or nothing to do), 3 data was (or
/// would be) lost, 1 recovery failed on input it cannot handle, 2 usage or I/O error or
/// the data directory is locked by a live daemon.
pub fn run(
    dir: &Path,
    opts: RecoverOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> RecoverStatus {
    let run = match model::recover(dir, opts) {
        Ok(r) => r,
        Err(message) => {
            let _ = writeln!(err, "wshard recover: {message}");
            return RecoverStatus::Error;
        }
    };
    let written = if opts.json {
        write_json(&run, out)
    } else {
        write_text(&run, out)
    };
    for e in &run.episodes {
        if let EpisodeOutcome::Failed(id, e) = e {
            let _ = writeln!(err, "wshard recover: episode {id}: recovery failed: {e}");
        }
    }
    match written.and_then(|()| out.flush()) {
        Ok(()) => run.status(),
        Err(e) => {
            if e.kind() != io::ErrorKind::BrokenPipe {
                let _ = writeln!(err, "wshard recover: writing output: {e}");
            }
            RecoverStatus::Error
        }
    }
}
