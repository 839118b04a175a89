//! `wshard export mcap`: the MCAP export's arguments and run.

use std::io::Write;
use std::path::PathBuf;

use crate::Status;

/// Arguments of `wshard export mcap`.
#[derive(Debug, clap::Args)]
pub struct McapArgs {
    /// Episode directories, or data directories holding them.
    #[arg(required = true, value_name = "EPISODE_OR_DATA_DIR")]
    pub inputs: Vec<PathBuf>,
    /// The output directory.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: PathBuf,
}

/// Run the export; the exit code.
pub fn run(args: &McapArgs, _out: &mut impl Write, err: &mut impl Write) -> u8 {
    let _ = writeln!(
        err,
        "wshard export mcap: not built yet (inputs {:?}, output {})",
        args.inputs,
        args.output.display()
    );
    Status::Error.code()
}
