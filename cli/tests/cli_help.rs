//! `wshard --help` lists each command on one line, a one-line summary; the details (what
//! the command does, its exit codes) are in `wshard CMD --help` and `wshard help CMD`.

mod common;

use common::wshard;

/// The top-level commands, in the order `wshard --help` lists them (then `help`).
const COMMANDS: [&str; 23] = [
    "status", "episodes", "close", "stop", "abort", "keep", "split", "trigger", "upload",
    "metrics", "annotate", "bridge", "export", "import", "publish", "query", "cache", "dataset",
    "doctor", "inspect", "verify", "recover", "cat",
];

/// The lines of the `Commands:` section of a help text.
fn command_lines(help: &str) -> Vec<&str> {
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

/// `(command, summary)` from `wshard --help`.
fn summaries() -> Vec<(String, String)> {
    let run = wshard(["--help"]);
    assert_eq!(run.code, 0, "{run:?}");
    command_lines(&run.stdout)
        .iter()
        .map(|l| {
            let l = l.trim_start();
            let (name, summary) = l.split_once(' ').unwrap_or((l, ""));
            (name.to_owned(), summary.trim().to_owned())
        })
        .collect()
}

#[test]
fn cli_help_lists_one_line_per_command() {
    let mut want: Vec<&str> = COMMANDS.to_vec();
    want.push("help");
    for flag in ["--help", "-h"] {
        let run = wshard([flag]);
        assert_eq!(run.code, 0, "{run:?}");
        let lines = command_lines(&run.stdout);
        // A wrapped or second line would be a line of its own, not starting with a name.
        let names: Vec<&str> = lines
            .iter()
            .map(|l| l.split_whitespace().next().unwrap_or(""))
            .collect();
        assert_eq!(names, want, "{}", run.stdout);
        for line in lines {
            assert!(
                line.starts_with("  ") && !line.starts_with("   "),
                "{line:?}"
            );
            assert!(line.len() <= 100, "not a one-line summary: {line:?}");
            let summary = line
                .trim_start()
                .split_once(' ')
                .map_or("", |(_, s)| s.trim());
            assert!(!summary.is_empty(), "no summary: {line:?}");
            // One sentence: no paragraph of details after it.
            assert!(!summary.contains(". "), "more than a summary: {line:?}");
            assert!(
                !summary.contains("Exit"),
                "exit codes belong to CMD --help: {line:?}"
            );
        }
    }
    // The top-level help says where the details are.
    let run = wshard(["--help"]);
    assert!(run.stdout.contains("wshard CMD --help"), "{}", run.stdout);
    assert!(run.stdout.contains("SIGPIPE"), "{}", run.stdout);
}

#[test]
fn cli_help_of_each_command_carries_its_details() {
    let summaries = summaries();
    assert_eq!(summaries.len(), COMMANDS.len() + 1, "{summaries:?}");
    for (name, summary) in summaries.iter().filter(|(n, _)| n != "help") {
        // `wshard help CMD` is clap's long help, for every command (import too).
        let run = wshard(["help", name]);
        assert_eq!(run.code, 0, "{name}: {run:?}");
        assert!(
            run.stdout.contains(summary.as_str()),
            "{name}: {}",
            run.stdout
        );
        assert!(
            run.stdout.contains("Exit codes: "),
            "{name}: {}",
            run.stdout
        );
        // `wshard CMD --help` too (for import, its own overview of the formats).
        let run = wshard([name.as_str(), "--help"]);
        assert_eq!(run.code, 0, "{name}: {run:?}");
        assert!(
            run.stdout.contains("Exit codes: "),
            "{name}: {}",
            run.stdout
        );
        if name != "import" {
            assert!(
                run.stdout.contains(summary.as_str()),
                "{name}: {}",
                run.stdout
            );
            assert!(run.stdout.contains("Usage: "), "{name}: {}", run.stdout);
        }
    }
    // The details that the top-level help used to carry, each in its command's help.
    for (name, detail) in [
        ("recover", "3 data lost"),
        ("recover", "1 recovery failed"),
        ("recover", "A dry run unless --apply"),
        ("status", "1 the daemon refused, 2 it cannot be reached"),
        ("episodes", "1 the daemon refused, 2 it cannot be reached"),
        ("metrics", "1 the daemon refused, 2 it cannot be reached"),
        (
            "close",
            "1 the daemon refused (unknown episode, permission denied)",
        ),
        ("close", "its client gets ERROR STOPPED"),
        ("stop", "as `complete`"),
        ("abort", "as `aborted`"),
        ("keep", "--release removes it"),
        (
            "split",
            "1 the daemon refused (unknown episode, a stream alone",
        ),
        ("split", "a multi-stream episode: every stream"),
        ("split", "EPISODE.0001"),
        ("bridge", "1 the bridge refused or failed"),
        ("import", "the bag importer's code"),
        ("inspect", "1 a file is corrupt, 2 usage or I/O error"),
        ("verify", "1 a file is corrupt, 2 usage or I/O error"),
        ("cat", "1 the file or the block is corrupt"),
        ("publish", "3 another publisher moved latest.json first"),
        ("publish", "AWS_ACCESS_KEY_ID"),
        ("query", "duckdb-extension-httpfs"),
        ("doctor", "1 any failed"),
    ] {
        let run = wshard([name, "--help"]);
        assert!(
            run.stdout.contains(detail),
            "{name}: {detail}: {}",
            run.stdout
        );
    }
}

#[test]
fn cli_help_short_is_the_summary() {
    for (name, summary) in summaries()
        .iter()
        .filter(|(n, _)| n != "help" && n != "import")
    {
        let run = wshard([name.as_str(), "-h"]);
        assert_eq!(run.code, 0, "{name}: {run:?}");
        let first = run.stdout.lines().next().unwrap_or("");
        assert_eq!(first, summary, "{name}: {}", run.stdout);
        assert!(
            !run.stdout.contains("Exit codes: "),
            "{name}: {}",
            run.stdout
        );
    }
}
