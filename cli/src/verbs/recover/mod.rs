//! `wshard recover DIR [--apply]`: `target` tells what DIR is (an episode, single- or
//! multi-stream, or a data directory), `model` runs the daemon's recovery on it into a
//! `RecoverRun`, `render` prints it as text or JSON; `run` does all three.
//! `render` uses `model`, `model` uses `target`, never the reverse.

mod model;
mod render;
mod target;

use std::io::{self, Write};
use std::path::{Path, PathBuf};

pub use model::*;
use render::{write_json, write_text};
pub use target::{Target, TargetError};

/// Recover episodes offline with the daemon's code (a dry run unless --apply)
///
/// Recover an episode directory (DATA_DIR/EPISODE, single- or multi-stream) or every
/// episode of a data directory offline, with the daemon's recovery code. A dry run unless
/// --apply. In a data directory, directories that are not episodes are left alone and
/// listed; a stream folder or the quarantine directory is refused.
///
/// Exit codes: 0 nothing lost (or nothing to do), 3 data lost (corrupt regions discarded,
/// or files that may hold data quarantined), 1 recovery failed, 2 usage or I/O error, a
/// refused directory, or the data directory is in use by a live wshardd.
#[derive(Debug, clap::Args)]
pub struct RecoverArgs {
    /// An episode directory or a data directory.
    pub dir: PathBuf,
    /// Change the files (takes the data directory lock). Without it nothing is changed.
    #[arg(long)]
    pub apply: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

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
