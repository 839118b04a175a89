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
/// Exit codes: 0 all good, 1 a file is corrupt, 2 usage or I/O error; `recover` also
/// exits 3 when data was (or would be) lost, and 1 when recovery itself failed; `status`,
/// `episodes`, `close` and `metrics` exit 1 when the daemon refuses (unknown episode,
/// permission denied) and 2 when it cannot be reached; `bridge` likewise for the ROS
/// bridge; `import bag` exits with the bag importer's code (2 when it cannot be run).
/// Output to a pipe whose reader has gone (`wshard cat ... | head`) ends any verb quietly,
/// killed by SIGPIPE as Unix tools are (status 141 in a shell).
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
