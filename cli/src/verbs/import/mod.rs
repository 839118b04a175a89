//! `wshard import ...`: the dispatcher of the imports.
//!
//! - `wshard import npz|minari|d4rl ...`: the native converters ([`formats`]).
//! - `wshard import bag ARGS...` and `wshard import ARGS...` (any first argument that is
//!   not one of the words above): import ROS bags as episodes by running the ROS bridge's
//!   bag importer, `python3 -m wshard_ros.bag_import ARGS...` (ingest-adapters/ros), with
//!   the arguments passed through untouched; the exit code is the importer's.
//! - `wshard import` alone, or with `-h` / `--help` / `help` first: the list of formats
//!   (`wshard import bag --help` shows the bag importer's options).
//!
//! The interpreter is `$WSHARD_PYTHON` when set (non-empty), else `python3` on `PATH`
//! ([`crate::python`]).
//! Before running it, `wshard` asks that interpreter whether it can find
//! `wshard_ros.bag_import`, so that a missing interpreter or package is said plainly (exit
//! 2, with how to install it) instead of as a Python traceback.
//!
//! Unless `$WSHARD_BIN` is set already, the importer gets this executable's path in it, so
//! that `--data-dir` finds the `wshardd` installed beside this `wshard`.
//!
//! This module uses [`formats`], never the reverse.

pub mod formats;

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::process::{Command, Stdio};

use crate::exit_status::exit;
use crate::python::{python, python_source};

/// Import episodes into a data directory: npz, minari, d4rl, ROS bags
///
/// `npz` (DreamerV3 episode files), `minari` (a Minari HDF5 dataset), `d4rl` (a D4RL HDF5
/// file), natively; `bag` or anything else: ROS bags (ROS 1 .bag, rosbag2 sqlite3 or MCAP)
/// through `python3 -m wshard_ros.bag_import ARGS...` (python from $WSHARD_PYTHON, else
/// python3). `wshard import --help` lists the formats; `wshard import FORMAT --help` their
/// options.
///
/// Exit codes: natively 0 done, 1 bad source file, 2 usage, existing episode or I/O error;
/// ROS bags the importer's code (2 when python or the wshard_ros package is missing).
#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub struct ImportArgs {
    /// `npz|minari|d4rl ...`, `bag ...`, or passed to the bag importer untouched, e.g.
    /// BAG... --mapping M.toml --data-dir DIR.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<OsString>,
}

/// The word that selects the bag importer explicitly.
pub const BAG_VERB: &str = "bag";

/// What `wshard import --help` prints.
pub const OVERVIEW: &str = "\
Import episodes into a data directory.

Usage:
  wshard import npz INPUTS... --data-dir DIR [OPTIONS]   DreamerV3 episode .npz files
  wshard import minari DATASET --data-dir DIR [OPTIONS]  a Minari dataset (HDF5)
  wshard import d4rl FILE.hdf5 --data-dir DIR [OPTIONS]  a D4RL HDF5 file
  wshard import [bag] BAG... --mapping M.toml (--data-dir DIR | --socket S) [...]
                                                          ROS bags (python3 -m wshard_ros.bag_import)

`wshard import npz|minari|d4rl --help` lists a converter's options;
`wshard import bag --help` the bag importer's.

Exit codes: npz, minari, d4rl: 0 done, 1 a bad source file, 2 usage, an existing episode
or an I/O error; bags: the bag importer's code (2 when python or wshard_ros is missing).
";

/// The variable the importer reads to find `wshardd` beside `wshard`.
pub const WSHARD_BIN_ENV: &str = "WSHARD_BIN";

/// The importer's module.
pub const IMPORT_MODULE: &str = "wshard_ros.bag_import";

/// Exit status of the probe when the module cannot be found.
const PROBE_MISSING: i32 = 3;

/// The probe: exit 0 when the module can be found, [`PROBE_MISSING`] (with the import
/// error on stderr) when not.
const PROBE: &str = "import importlib.util, sys\n\
try:\n    found = importlib.util.find_spec(sys.argv[1]) is not None\n\
except ImportError as e:\n    print(e, file=sys.stderr)\n    sys.exit(3)\n\
sys.exit(0 if found else 3)\n";

/// How to get the importer.
pub const INSTALL_HINT: &str = "install the ROS bridge's Python package into that \
     interpreter (`python3 -m pip install ingest-adapters/ros ingest-adapters/python` from a \
     checkout of wshard-recorder), or put ingest-adapters/ros/src and \
     ingest-adapters/python/src on PYTHONPATH, or point $WSHARD_PYTHON at a python that has \
     them";

/// Why the bag importer cannot be run with the interpreter `python` (shown as given, with
/// where it came from, `$WSHARD_PYTHON` or the default).
#[derive(Debug, thiserror::Error)]
enum ProbeError {
    #[error("cannot run the Python interpreter `{python}` ({source_of}): {error}; {INSTALL_HINT}")]
    CannotRun {
        python: String,
        source_of: &'static str,
        error: std::io::Error,
    },
    #[error("`{python}` ({source_of}) cannot import {IMPORT_MODULE} ({why}); {INSTALL_HINT}")]
    Missing {
        python: String,
        source_of: &'static str,
        why: String,
    },
    #[error(
        "`{python}` ({source_of}) failed to look for {IMPORT_MODULE}: {why}; is it a Python 3 \
         interpreter? {INSTALL_HINT}"
    )]
    Failed {
        python: String,
        source_of: &'static str,
        why: String,
    },
}

/// Whether `python` finds the importer.
fn probe(python: &OsStr) -> Result<(), ProbeError> {
    let shown = python.to_string_lossy().into_owned();
    let out = Command::new(python)
        .arg("-c")
        .arg(PROBE)
        .arg(IMPORT_MODULE)
        .stdin(Stdio::null())
        .output()
        .map_err(|error| ProbeError::CannotRun {
            python: shown.clone(),
            source_of: python_source(),
            error,
        })?;
    if out.status.success() {
        return Ok(());
    }
    let why = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    let why = if why.is_empty() {
        format!("the probe exited with {}", out.status)
    } else {
        why
    };
    match out.status.code() {
        Some(PROBE_MISSING) => Err(ProbeError::Missing {
            python: shown,
            source_of: python_source(),
            why,
        }),
        _ => Err(ProbeError::Failed {
            python: shown,
            source_of: python_source(),
            why,
        }),
    }
}

/// The exit code for a child's status: its code, or 128 + the signal that killed it (as
/// shells report it).
fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => u8::try_from(c & 0xFF).unwrap_or(exit::ERROR),
        (None, Some(sig)) => u8::try_from((128 + sig) & 0xFF).unwrap_or(exit::ERROR),
        (None, None) => exit::ERROR,
    }
}

/// Run `wshard import ARGS...`: a native converter for `npz`, `minari`, `d4rl`; the
/// overview for nothing or `-h`/`--help`/`help`; else the bag importer (after a leading
/// `bag`, which is dropped).
pub fn run(args: &[OsString], out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    if formats::is_native(args) {
        return formats::run(args, out, err);
    }
    match args.first().and_then(|a| a.to_str()) {
        None | Some("-h" | "--help" | "help") => {
            let _ = write!(out, "{OVERVIEW}");
            exit::OK
        }
        Some(BAG_VERB) => run_bag(&args[1..], err),
        Some(_) => run_bag(args, err),
    }
}

/// Run the bag importer with `args`; returns its exit code, or 2 when it cannot be run
/// (no interpreter, no `wshard_ros`).
pub fn run_bag(args: &[OsString], err: &mut dyn Write) -> u8 {
    let python = python();
    if let Err(message) = probe(&python) {
        let _ = writeln!(err, "wshard import: {message}");
        return exit::ERROR;
    }
    let mut cmd = Command::new(&python);
    cmd.arg("-m").arg(IMPORT_MODULE).args(args);
    if std::env::var_os(WSHARD_BIN_ENV).map_or(true, |v| v.is_empty()) {
        if let Ok(me) = std::env::current_exe() {
            cmd.env(WSHARD_BIN_ENV, me);
        }
    }
    match cmd.status() {
        Ok(status) => exit_code(status),
        Err(e) => {
            let _ = writeln!(
                err,
                "wshard import: cannot run `{} -m {IMPORT_MODULE}`: {e}",
                python.to_string_lossy()
            );
            exit::ERROR
        }
    }
}
