//! `wshard export lerobot`: the LeRobot export's arguments and run.

use std::io::Write;
use std::path::PathBuf;

use crate::Status;

/// Arguments of `wshard export lerobot`.
#[derive(Debug, clap::Args)]
pub struct LerobotArgs {
    /// Episode directories, or data directories holding them.
    #[arg(required = true, value_name = "EPISODE_OR_DATA_DIR")]
    pub inputs: Vec<PathBuf>,
    /// The output directory.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: PathBuf,
}

/// Run the export; the exit code.
pub fn run(args: &LerobotArgs, _out: &mut impl Write, err: &mut impl Write) -> u8 {
    let _ = writeln!(
        err,
        "wshard export lerobot: not built yet (inputs {:?}, output {})",
        args.inputs,
        args.output.display()
    );
    Status::Error.code()
}
