//! Options of `multirate` and of its producer processes.

use std::path::PathBuf;

use super::producer::{ProducerArgs, Target};
use super::streams::Role;
use crate::error::{fail, Result};

pub const USAGE: &str = "\
multirate options:
  --seconds S         seconds of data per case (default 60): 60,000 joints steps, 12,000 IMU
                      steps, 1,800 frames of each camera (3.3 GB)
  --quick             6 s of data, one repetition, a shorter paced phase: a smoke run
  --reps N            repetitions of each case (default 1)
  --no-paced          skip the paced phase (the 1 kHz stream's DURABLE latency)
  --read-reps N       repetitions of each read case (default 3)
  --reference-py PATH a checkout of the reference WShard Python package (its `py/` folder,
                      importable as `wshard`): adds the Python read cases (needs
                      `wshard_reader` installed)
  --python PATH       the interpreter of the Python read cases (default python3): it needs
                      numpy, `wshard_reader` and the reference package's dependencies
  --dir PATH          scratch directory (default: the system temp dir); removed at the end
  --wshardd PATH      the daemon binary (default ../target/release/wshardd, built if missing)";

/// Options of `multirate`.
#[derive(Clone, Debug, PartialEq)]
pub struct MultirateArgs {
    pub seconds: f64,
    pub reps: usize,
    pub paced: bool,
    pub read_reps: usize,
    pub reference_py: Option<PathBuf>,
    pub python: PathBuf,
    pub dir: Option<PathBuf>,
    pub wshardd: Option<PathBuf>,
}

impl Default for MultirateArgs {
    fn default() -> Self {
        Self {
            seconds: 60.0,
            reps: 1,
            paced: true,
            read_reps: 3,
            reference_py: None,
            python: PathBuf::from("python3"),
            dir: None,
            wshardd: None,
        }
    }
}

fn number<T: std::str::FromStr>(key: &str, v: &str) -> Result<T> {
    v.parse()
        .map_err(|_| fail(format!("{key}: `{v}` is not a valid number")))
}

/// Split `--key=value` / `--key value`.
fn next_value(
    key: &str,
    inline: Option<String>,
    it: &mut impl Iterator<Item = String>,
) -> Result<String> {
    match inline {
        Some(v) => Ok(v),
        None => it
            .next()
            .ok_or_else(|| fail(format!("{key} needs a value"))),
    }
}

fn split(arg: String) -> (String, Option<String>) {
    match arg.split_once('=') {
        Some((k, v)) if k.starts_with("--") => (k.to_owned(), Some(v.to_owned())),
        _ => (arg, None),
    }
}

/// Parse the options after `multirate`.
///
/// # Errors
/// An unknown option, a missing or malformed value.
pub fn parse(mut it: impl Iterator<Item = String>) -> Result<MultirateArgs> {
    let mut a = MultirateArgs::default();
    while let Some(arg) = it.next() {
        let (key, inline) = split(arg);
        match key.as_str() {
            "--quick" => {
                a.seconds = 6.0;
                a.reps = 1;
            }
            "--no-paced" => a.paced = false,
            "-h" | "--help" => {
                println!("usage: wshard-bench multirate [options]\n\n{USAGE}");
                std::process::exit(0);
            }
            "--seconds" => {
                a.seconds = number(&key, &next_value(&key, inline, &mut it)?)?;
                if !(a.seconds > 0.0 && a.seconds.is_finite()) {
                    return Err(fail("--seconds must be > 0"));
                }
            }
            "--reps" => a.reps = number::<usize>(&key, &next_value(&key, inline, &mut it)?)?.max(1),
            "--read-reps" => {
                a.read_reps = number::<usize>(&key, &next_value(&key, inline, &mut it)?)?.max(1);
            }
            "--reference-py" => {
                a.reference_py = Some(PathBuf::from(next_value(&key, inline, &mut it)?));
            }
            "--python" => a.python = PathBuf::from(next_value(&key, inline, &mut it)?),
            "--dir" => a.dir = Some(PathBuf::from(next_value(&key, inline, &mut it)?)),
            "--wshardd" => a.wshardd = Some(PathBuf::from(next_value(&key, inline, &mut it)?)),
            other => return Err(fail(format!("unknown option `{other}`\n\n{USAGE}"))),
        }
    }
    Ok(a)
}

/// Parse the options after `multirate-producer` (internal: the benchmark starts it).
///
/// # Errors
/// An unknown or missing option.
pub fn parse_producer(mut it: impl Iterator<Item = String>) -> Result<ProducerArgs> {
    let (mut socket, mut role, mut target, mut seconds, mut paced) =
        (None, None, None, 60.0, false);
    while let Some(arg) = it.next() {
        let (key, inline) = split(arg);
        match key.as_str() {
            "--paced" => paced = true,
            "--socket" => socket = Some(PathBuf::from(next_value(&key, inline, &mut it)?)),
            "--role" => role = Some(Role::parse(&next_value(&key, inline, &mut it)?)?),
            "--stream-of" => {
                target = Some(Target::Stream {
                    episode: next_value(&key, inline, &mut it)?,
                });
            }
            "--episode" => {
                target = Some(Target::Episode {
                    episode: next_value(&key, inline, &mut it)?,
                });
            }
            "--seconds" => seconds = number(&key, &next_value(&key, inline, &mut it)?)?,
            other => {
                return Err(fail(format!(
                    "multirate-producer: unknown option `{other}`"
                )))
            }
        }
    }
    Ok(ProducerArgs {
        socket: socket.ok_or_else(|| fail("multirate-producer needs --socket"))?,
        role: role.ok_or_else(|| fail("multirate-producer needs --role"))?,
        target: target.ok_or_else(|| fail("multirate-producer needs --stream-of or --episode"))?,
        seconds,
        paced,
    })
}
