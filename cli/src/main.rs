//! `wshard`: the operator CLI. Parses the arguments, runs the command (`wshard_cli::verbs`)
//! with a stdout that ends the process quietly when its reader has gone, and exits with the
//! command's code.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use wshard_cli::output::closed_pipe::EndOnClosedPipe;
use wshard_cli::verbs::Command;

/// Inspect, verify and recover WShard files and wshardd data directories.
///
/// `wshard CMD --help` tells what a command does, its options and its exit codes: 0 done
/// and 2 a usage or I/O error throughout (but `import bag`, which exits with the bag
/// importer's code), and what 1 and 3 mean for it. Output to a pipe whose reader has gone
/// (`wshard cat ... | head`) ends any command quietly, killed by SIGPIPE as Unix tools are
/// (status 141 in a shell).
#[derive(Debug, Parser)]
#[command(name = "wshard", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let stdout = std::io::stdout();
    let stdout_is_terminal = stdout.is_terminal();
    // A reader that closed the pipe ends the command quietly, whatever the verb.
    let mut out = EndOnClosedPipe(stdout.lock());
    let mut err = std::io::stderr().lock();
    ExitCode::from(cli.command.run(stdout_is_terminal, &mut out, &mut err))
}
