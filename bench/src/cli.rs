//! The command line: `wshard-bench <benchmark> [options]`.

use std::path::PathBuf;

use crate::error::{fail, Result};

pub const USAGE: &str = "\
usage: wshard-bench <benchmark> [options]

benchmarks:
  format    the wshard format library: write/read throughput per codec against a plain
            write, single-block read cost vs block count, mmap zero-copy views
  record    the recorder daemon: the workloads through the real socket into durable chunks
            with the real `wshardd`, against plain append and the MCAP peer in the same run
  multirate three producer processes (1 kHz joints, 200 Hz IMU with events, 30 Hz cameras)
            into one multi-stream episode vs three single-stream episodes, then the aligned
            read vs the raw streams (options: `wshard-bench multirate --help`)
  robot-upload  the daemon's uploader against s3s-fs: recording (joints, cameras) with
            the uploader running vs not; resume after a SIGKILL at 50 % of a multipart
            upload (options: `wshard-bench robot-upload --help`)
  upload    `wshard publish` to a real S3 server (s3s-fs) vs a plain multipart put of the
            same bytes with the same client; re-publish bytes (options: `wshard-bench
            upload --help`)
  remote-read  one block of a 1,000-block shard read from a real s3s-fs: requests and bytes
            vs the block (options: `wshard-bench remote-read --help`)

format options:
  --size-mib N    payload size of each workload episode in MiB (default 1024; 64 = smoke run)
  --chunk-mib N   payload per chunk file in MiB (default 64)
  --reps N        repetitions of each throughput case; medians are reported (default 3)
  --dir PATH      scratch directory (default: the system temp dir); files are deleted after
  -h, --help      this text

record options:
  --quick             small sizes, one repetition: a smoke run (< 30 s)
  --cases LIST        comma-separated, from: joints, long (joints x10), latency, cameras
                      (= cameras-chunk,cameras-ack,cameras-lz4,cameras-zstd), or those four
                      one by one; default: all. Not in `all`, by name only: joints-single
                      (joints pushed one timestep per frame/slot, min(--joints-steps, 200000)),
                      flight-joints, flight-cameras (in flight mode, a 10 s ring), and flight
                      (= joints,flight-joints,cameras-zstd,flight-cameras)
  --transport T       socket (default), shm (the client's shared-memory ring) or both (each
                      case over the socket, then over shm, compared in the same run)
  --reps N            repetitions of the joints case and its baselines (default 3)
  --camera-reps N     repetitions of each cameras case and its baselines (default 1)
  --joints-steps N    timesteps of `joints` (default 1000000; `long` records 10x)
  --camera-steps N    timesteps of the cameras cases (default 3000)
  --latency-steps N   1 kHz timesteps of `latency` (default 5000 = 5 s)
  --window N          distinct camera steps generated and cycled (default 64)
  --chunk-mib N       rotation.max_bytes, the chunk budget (default 64)
  --chunk-steps N     rotation.max_timesteps (default 100000, the daemon's default)
  --queue-frames N    queues.max_pending_frames (default 8)
  --real-time         send each timestep at its t_ns after the first (the workload's real
                      rate: 1 kHz joints, 30 Hz cameras) instead of as fast as it goes; no
                      MCAP peer and no plain append (their speeds mean nothing at a fixed
                      rate); flight-cameras is timed at disk speed, then at real rate (the
                      trigger after 30 s of recording)
  --minutes N         the joints and cameras cases record N minutes of the workload
                      (--joints-steps = N x 60000, --camera-steps = N x 1800); with
                      --real-time, N minutes of wall time each
  --verify            read every chunk back and compare every byte (untimed)
  --no-profile        skip the fsync-never comparison runs for missed targets
  --no-peer           skip the MCAP peer (no MCAP ratios; cameras keep their own plain runs)
  --dir PATH          scratch directory (default: the system temp dir); removed at the end
  --wshardd PATH      the daemon binary (default ../target/release/wshardd, built if missing)
  --peer PATH         the MCAP peer binary (default target/peer-mcap/release/peer-mcap in
                      this crate, built from ../../shared/bench/peer-mcap if missing)";

/// The `record` cases, in run order.
pub const RECORD_CASES: [&str; 7] = [
    "joints",
    "long",
    "latency",
    "cameras-chunk",
    "cameras-ack",
    "cameras-lz4",
    "cameras-zstd",
];

/// Cases run only when named (not part of `all`), with their place in the run order.
/// `flight` names the flight recorder's cases (`flight-joints`, `flight-cameras`): the same
/// workloads as `joints` and `cameras-zstd`, opened in flight mode (a bounded ring).
pub const RECORD_EXTRA_CASES: [&str; 3] = ["joints-single", "flight-joints", "flight-cameras"];

/// Every case name in run order.
const RECORD_ORDER: [&str; 10] = [
    "joints",
    "flight-joints",
    "joints-single",
    "long",
    "latency",
    "cameras-chunk",
    "cameras-ack",
    "cameras-lz4",
    "cameras-zstd",
    "flight-cameras",
];

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    Help,
    Format(FormatArgs),
    Record(RecordArgs),
    RobotUpload(crate::robot_upload::UploadArgs),
    Multirate(crate::multirate::args::MultirateArgs),
    /// Internal: one producer process of `multirate`.
    MultirateProducer(crate::multirate::producer::ProducerArgs),
    Upload(crate::upload::args::UploadArgs),
    /// `None`: its `--help`.
    RemoteRead(Option<crate::remote_read::RemoteReadArgs>),
}

/// Options of `record`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordArgs {
    pub quick: bool,
    /// Names from [`RECORD_CASES`], in run order.
    pub cases: Vec<&'static str>,
    pub reps: usize,
    pub camera_reps: usize,
    pub joints_steps: u64,
    pub camera_steps: u64,
    pub latency_steps: u64,
    pub window: u64,
    pub chunk_mib: u64,
    pub chunk_steps: u64,
    pub queue_frames: u64,
    pub verify: bool,
    pub profile: bool,
    pub peer_runs: bool,
    pub dir: Option<PathBuf>,
    pub wshardd: Option<PathBuf>,
    pub peer: Option<PathBuf>,
    /// `--transport`: the transports each case runs over, in order (`socket`, `shm`).
    pub transports: Vec<&'static str>,
    /// `--real-time`: each timestep sent at its `t_ns` after the first.
    pub real_time: bool,
    /// `--minutes`: the duration the joints and cameras steps were set from.
    pub minutes: Option<u64>,
}

impl Default for RecordArgs {
    fn default() -> Self {
        Self {
            quick: false,
            cases: RECORD_CASES.to_vec(),
            reps: 3,
            camera_reps: 1,
            joints_steps: 1_000_000,
            camera_steps: 3_000,
            latency_steps: 5_000,
            window: 64,
            chunk_mib: 64,
            chunk_steps: 100_000,
            queue_frames: 8,
            verify: false,
            profile: true,
            peer_runs: true,
            dir: None,
            wshardd: None,
            peer: None,
            transports: vec!["socket"],
            real_time: false,
            minutes: None,
        }
    }
}

/// Seconds in a minute, for `--minutes`.
const SECONDS_PER_MINUTE: u64 = 60;

impl RecordArgs {
    /// The sizes of `--quick` (explicit sizes given after it still win).
    fn quick(&mut self) {
        self.quick = true;
        self.reps = 1;
        self.camera_reps = 1;
        self.joints_steps = 100_000;
        self.camera_steps = 100;
        self.latency_steps = 1_000;
    }

    /// `--minutes N`: the joints and cameras steps of N minutes at the workloads' rates.
    fn minutes(&mut self, n: u64) {
        let s = n * SECONDS_PER_MINUTE;
        let per_s = |period_ns: i64| 1_000_000_000 / period_ns.unsigned_abs();
        self.minutes = Some(n);
        self.joints_steps = s * per_s(teleop_workload::JOINTS_PERIOD_NS);
        self.camera_steps = s * per_s(teleop_workload::CAMERAS_PERIOD_NS);
    }
}

/// Options of `format`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatArgs {
    pub size_mib: u64,
    pub chunk_mib: u64,
    pub reps: usize,
    pub dir: Option<PathBuf>,
}

impl Default for FormatArgs {
    fn default() -> Self {
        Self {
            size_mib: 1024,
            chunk_mib: 64,
            reps: 3,
            dir: None,
        }
    }
}

/// Parse the arguments after the program name.
///
/// # Errors
/// An unknown benchmark or option, a missing or malformed value.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Command> {
    let mut it = args.into_iter();
    let Some(bench) = it.next() else {
        return Ok(Command::Help);
    };
    match bench.as_str() {
        "format" | "--format" => parse_format(it),
        "record" | "--record" => parse_record(it),
        "multirate" => crate::multirate::args::parse(it).map(Command::Multirate),
        "remote-read" => crate::remote_read::parse(it).map(Command::RemoteRead),
        "robot-upload" => crate::robot_upload::parse(it).map(Command::RobotUpload),
        "multirate-producer" => {
            crate::multirate::args::parse_producer(it).map(Command::MultirateProducer)
        }
        "upload" => match crate::upload::args::parse(it)? {
            Some(a) => Ok(Command::Upload(a)),
            None => {
                println!("{}", crate::upload::args::USAGE);
                Ok(Command::Help)
            }
        },
        "help" | "-h" | "--help" => Ok(Command::Help),
        other => Err(fail(format!("unknown benchmark `{other}`\n\n{USAGE}"))),
    }
}

fn parse_format(mut it: impl Iterator<Item = String>) -> Result<Command> {
    let mut a = FormatArgs::default();
    while let Some(arg) = it.next() {
        let (key, inline) = match arg.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k.to_owned(), Some(v.to_owned())),
            _ => (arg, None),
        };
        if key == "-h" || key == "--help" {
            return Ok(Command::Help);
        }
        let value = match inline {
            Some(v) => v,
            None => it
                .next()
                .ok_or_else(|| fail(format!("{key} needs a value\n\n{USAGE}")))?,
        };
        match key.as_str() {
            "--size-mib" => a.size_mib = positive(&key, &value)?,
            "--chunk-mib" => a.chunk_mib = positive(&key, &value)?,
            "--reps" => {
                a.reps = usize::try_from(positive(&key, &value)?)
                    .map_err(|_| fail(format!("{key}: {value} is too large")))?;
            }
            "--dir" => a.dir = Some(PathBuf::from(value)),
            other => return Err(fail(format!("unknown option `{other}`\n\n{USAGE}"))),
        }
    }
    Ok(Command::Format(a))
}

fn parse_record(mut it: impl Iterator<Item = String>) -> Result<Command> {
    let mut a = RecordArgs::default();
    while let Some(arg) = it.next() {
        let (key, inline) = match arg.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k.to_owned(), Some(v.to_owned())),
            _ => (arg, None),
        };
        match key.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--quick" => {
                a.quick();
                continue;
            }
            "--verify" => {
                a.verify = true;
                continue;
            }
            "--no-profile" => {
                a.profile = false;
                continue;
            }
            "--no-peer" => {
                a.peer_runs = false;
                continue;
            }
            "--real-time" => {
                a.real_time = true;
                continue;
            }
            _ => {}
        }
        let value = match inline {
            Some(v) => v,
            None => it
                .next()
                .ok_or_else(|| fail(format!("{key} needs a value\n\n{USAGE}")))?,
        };
        let count = |v: &str| {
            usize::try_from(positive(&key, v)?)
                .map_err(|_| fail(format!("{key}: {v} is too large")))
        };
        match key.as_str() {
            "--cases" => a.cases = record_cases(&value)?,
            "--reps" => a.reps = count(&value)?,
            "--camera-reps" => a.camera_reps = count(&value)?,
            "--joints-steps" => a.joints_steps = positive(&key, &value)?,
            "--camera-steps" => a.camera_steps = positive(&key, &value)?,
            "--latency-steps" => a.latency_steps = positive(&key, &value)?,
            "--window" => a.window = positive(&key, &value)?,
            "--minutes" => a.minutes(positive(&key, &value)?),
            "--chunk-mib" => a.chunk_mib = positive(&key, &value)?,
            "--chunk-steps" => a.chunk_steps = positive(&key, &value)?,
            "--queue-frames" => a.queue_frames = positive(&key, &value)?,
            "--dir" => a.dir = Some(PathBuf::from(value)),
            "--wshardd" => a.wshardd = Some(PathBuf::from(value)),
            "--peer" => a.peer = Some(PathBuf::from(value)),
            "--transport" => {
                a.transports = match value.as_str() {
                    "socket" => vec!["socket"],
                    "shm" => vec!["shm"],
                    "both" => vec!["socket", "shm"],
                    v => {
                        return Err(fail(format!(
                            "--transport: `{v}` is not socket, shm or both"
                        )))
                    }
                }
            }
            other => return Err(fail(format!("unknown option `{other}`\n\n{USAGE}"))),
        }
    }
    Ok(Command::Record(a))
}

/// Case names (and the groups `cameras`, `all`, alias `joints-long`), in run order.
fn record_cases(list: &str) -> Result<Vec<&'static str>> {
    let mut want = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let names: Vec<&str> = match name {
            "all" => RECORD_CASES.to_vec(),
            "cameras" => RECORD_CASES
                .iter()
                .copied()
                .filter(|c| c.starts_with("cameras-"))
                .collect(),
            "joints-long" => vec!["long"],
            // The flight recorder against normal recording of the same workloads.
            "flight" => vec!["joints", "flight-joints", "cameras-zstd", "flight-cameras"],
            other => match RECORD_ORDER.iter().find(|c| **c == other) {
                Some(c) => vec![*c],
                None => {
                    return Err(fail(format!(
                        "--cases: unknown case `{other}` (known: {}, {}, cameras, flight, all)",
                        RECORD_CASES.join(", "),
                        RECORD_EXTRA_CASES.join(", ")
                    )))
                }
            },
        };
        want.extend(names);
    }
    if want.is_empty() {
        return Err(fail("--cases: no case named"));
    }
    Ok(RECORD_ORDER
        .iter()
        .copied()
        .filter(|c| want.contains(c))
        .collect())
}

fn positive(key: &str, value: &str) -> Result<u64> {
    match value.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(fail(format!(
            "{key}: expected a positive integer, got `{value}`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn parses_format_options() {
        let cmd = parse(args("format --size-mib 64 --reps=2 --dir /x")).unwrap();
        assert_eq!(
            cmd,
            Command::Format(FormatArgs {
                size_mib: 64,
                reps: 2,
                dir: Some(PathBuf::from("/x")),
                ..FormatArgs::default()
            })
        );
        assert_eq!(parse(args("")).unwrap(), Command::Help);
        assert!(parse(args("format --size-mib 0")).is_err());
        assert!(parse(args("format --bogus 1")).is_err());
        assert!(parse(args("daemon")).is_err());
    }

    #[test]
    fn parses_record_options() {
        let Command::Record(a) = parse(args("record")).unwrap() else {
            panic!("not record");
        };
        assert_eq!(a, RecordArgs::default());
        let Command::Record(a) = parse(args(
            "record --quick --cases cameras,joints --chunk-mib=32 --verify",
        ))
        .unwrap() else {
            panic!("not record");
        };
        assert!(a.quick && a.verify);
        assert_eq!(a.joints_steps, 100_000);
        assert_eq!(a.chunk_mib, 32);
        assert_eq!(
            a.cases,
            vec![
                "joints",
                "cameras-chunk",
                "cameras-ack",
                "cameras-lz4",
                "cameras-zstd"
            ]
        );
        let Command::Record(a) =
            parse(args("record --cases joints-single,joints --transport both")).unwrap()
        else {
            panic!("not record");
        };
        assert_eq!(a.cases, vec!["joints", "joints-single"]);
        assert_eq!(a.transports, vec!["socket", "shm"]);
        let Command::Record(a) = parse(args(
            "record --cases flight --real-time --minutes 10 --reps 1",
        ))
        .unwrap() else {
            panic!("not record");
        };
        assert!(a.real_time);
        assert_eq!(a.minutes, Some(10));
        assert_eq!((a.joints_steps, a.camera_steps), (600_000, 18_000));
        assert!(parse(args("record --minutes 0")).is_err());
        assert!(parse(args("record --transport tcp")).is_err());
        assert!(parse(args("record --cases bogus")).is_err());
        assert!(parse(args("record --reps 0")).is_err());
        assert!(parse(args("record --bogus")).is_err());
    }
}
