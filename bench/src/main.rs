//! `wshard-bench`: benchmarks of the recorder, one subcommand per benchmark.
//!
//! - `format`: the wshard format library (see [`format`]).
//! - `record`: the recorder daemon through its socket (see [`record`]).
//! - `robot-upload`: the daemon's uploader: recording with it running vs not, resume after a kill (see [`robot_upload`]).
//! - `upload`: `wshard publish` to s3s-fs vs a plain multipart put (see [`upload`]).
//! - `multirate`: three producer processes into one multi-stream episode vs three episodes (see [`multirate`]).
//! - `remote-read`: requests and bytes of one remote block read (see [`remote_read`]).

mod block_count;
mod cli;
mod error;
mod format;
mod json;
mod mmap_view;
mod multirate;
mod record;
mod remote_read;
mod report;
mod robot_upload;
mod s3s_fs;
mod scratch;
mod stats;
mod throughput;
mod upload;
mod workload;

use std::process::ExitCode;

use cli::Command;

fn main() -> ExitCode {
    let result = cli::parse(std::env::args().skip(1)).and_then(|cmd| match cmd {
        Command::Help => {
            println!("{}", cli::USAGE);
            Ok(())
        }
        Command::Format(args) => format::run(&args),
        Command::Record(args) => record::run(&args),
        Command::Multirate(args) => multirate::run(&args),
        Command::RobotUpload(args) => robot_upload::run(&args),
        Command::MultirateProducer(args) => multirate::producer::run(&args),
        Command::Upload(args) => upload::run(&args),
        Command::RemoteRead(None) => {
            println!("{}", remote_read::USAGE);
            Ok(())
        }
        Command::RemoteRead(Some(args)) => remote_read::run(&args),
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wshard-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
