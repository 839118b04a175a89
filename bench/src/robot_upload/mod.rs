//! `robot-upload`: the robot's uploader (`[publish]` of wshardd) against a real s3s-fs.
//!
//! 1. Recording throughput with the uploader running vs not: the `joints` and `cameras`
//!    workloads of `record` (joints zstd-3 ack, cameras uncompressed chunk) recorded by a
//!    daemon whose uploader is busy sending a backlog episode to s3s-fs, vs the same daemon
//!    config without `[publish]`. Target: >= 0.95x.
//! 2. Resume after a kill at 50 %: one episode with a large chunk file goes up as a
//!    multipart upload paced by the bandwidth limit; wshardd is SIGKILLed once half its
//!    parts are stored and restarted; bytes sent again vs one part. Target: <= one part.
//!
//! Only the smoke mode (`--quick`) is run by the engineers; the lead runs the full one.

mod status;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use wshard_client::{ClientOptions, CodecChoice, Durability, Transport};

use crate::error::{fail, Result};
use crate::json::JsonLine;
use crate::record::daemon::{locate, Daemon, DaemonConfig, Fsync};
use crate::record::data::{CameraWindow, JointsData};
use crate::record::drive::{open_spec, throughput, Source};
use crate::s3s_fs::{self, S3sFs};
use crate::scratch::ScratchDir;

pub const USAGE: &str = "\
robot-upload options:
  --quick             smoke run: small sizes (< 1 min)
  --joints-steps N    joints steps of the recording case (default 1,000,000)
  --camera-steps N    camera steps of the recording case (default 1,000)
  --backlog-steps N   camera steps of the backlog episode the uploader sends meanwhile
                      (default 1,500: 2.8 GB)
  --resume-steps N    camera steps of the resume case's episode (default 300: 550 MB)
  --part-mib N        part size (default 16; 5 at least)
  --limit-mib-s N     the resume case's bandwidth limit (default 64)
  --dir PATH          scratch directory (default: the system temp dir); removed at the end
  --wshardd PATH      the daemon (default ../target/release/wshardd, built if missing)
  --wshard PATH       the CLI (default ../target/release/wshard)
  --s3s-fs PATH       s3s-fs 0.14.1 (default $WSHARD_S3S_FS, else s3s-fs on PATH)";

/// Options of `upload`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UploadArgs {
    pub quick: bool,
    pub joints_steps: u64,
    pub camera_steps: u64,
    pub backlog_steps: u64,
    pub resume_steps: u64,
    pub part_mib: u64,
    pub limit_mib_s: u64,
    pub dir: Option<PathBuf>,
    pub wshardd: Option<PathBuf>,
    pub wshard: Option<PathBuf>,
    pub s3s_fs: Option<PathBuf>,
}

impl Default for UploadArgs {
    fn default() -> Self {
        Self {
            quick: false,
            joints_steps: 1_000_000,
            camera_steps: 1_000,
            backlog_steps: 1_500,
            resume_steps: 300,
            part_mib: 16,
            limit_mib_s: 64,
            dir: None,
            wshardd: None,
            wshard: None,
            s3s_fs: None,
        }
    }
}

impl UploadArgs {
    /// The smoke sizes.
    fn quick() -> Self {
        Self {
            quick: true,
            joints_steps: 50_000,
            camera_steps: 20,
            backlog_steps: 30,
            resume_steps: 12,
            part_mib: 5,
            limit_mib_s: 8,
            ..Self::default()
        }
    }
}

fn number(key: &str, v: Option<String>) -> Result<u64> {
    let v = v.ok_or_else(|| fail(format!("{key} needs a value")))?;
    v.parse()
        .map_err(|_| fail(format!("{key}: `{v}` is not a valid number")))
}

/// Parse the options after `upload`.
///
/// # Errors
/// An unknown option or a bad value.
pub fn parse(mut it: impl Iterator<Item = String>) -> Result<UploadArgs> {
    let all: Vec<String> = it.by_ref().collect();
    let mut a = if all.iter().any(|x| x == "--quick") {
        UploadArgs::quick()
    } else {
        UploadArgs::default()
    };
    let mut it = all.into_iter();
    while let Some(arg) = it.next() {
        let (key, inline) = match arg.split_once('=') {
            Some((k, v)) => (k.to_owned(), Some(v.to_owned())),
            None => (arg.clone(), None),
        };
        let mut value = || inline.clone().or_else(|| it.next());
        match key.as_str() {
            "--quick" => {}
            "-h" | "--help" => return Err(fail(USAGE)),
            "--joints-steps" => a.joints_steps = number(&key, value())?,
            "--camera-steps" => a.camera_steps = number(&key, value())?,
            "--backlog-steps" => a.backlog_steps = number(&key, value())?,
            "--resume-steps" => a.resume_steps = number(&key, value())?,
            "--part-mib" => a.part_mib = number(&key, value())?.max(5),
            "--limit-mib-s" => a.limit_mib_s = number(&key, value())?.max(1),
            "--dir" => a.dir = value().map(PathBuf::from),
            "--wshardd" => a.wshardd = value().map(PathBuf::from),
            "--wshard" => a.wshard = value().map(PathBuf::from),
            "--s3s-fs" => a.s3s_fs = value().map(PathBuf::from),
            other => {
                return Err(fail(format!(
                    "robot-upload: unknown option {other}\n{USAGE}"
                )))
            }
        }
    }
    Ok(a)
}

/// The chunk budget of the resume case: above its episode's size (`--resume-steps`).
const RESUME_CHUNK_BYTES: u64 = 1 << 30;

fn config() -> DaemonConfig {
    DaemonConfig {
        chunk_bytes: 64 << 20,
        chunk_steps: 100_000,
        fsync: Fsync::Interval(10),
        queue_frames: 8,
        compression_workers: 2,
    }
}

/// The `[publish]` table for `endpoint`.
fn publish_toml(endpoint: &str, part_mib: u64, limit: u64) -> String {
    let part = part_mib << 20;
    format!(
        "[publish]\nenabled = true\nendpoint = {endpoint:?}\nallow_http = true\n\
         bucket = {:?}\ndataset = \"bench/upload\"\nrobot = \"bench\"\n\
         part_size_bytes = {part}\nmultipart_threshold_bytes = {part}\n\
         bandwidth_limit_bytes_per_s = {limit}\nscan_interval_ms = 100\n\
         retry_min_ms = 100\nretry_max_ms = 1000\n",
        s3s_fs::BUCKET
    )
}

fn client_options(joints: bool) -> ClientOptions {
    let base = ClientOptions {
        timeout: Some(Duration::from_secs(300)),
        ..ClientOptions::default()
    };
    if joints {
        ClientOptions {
            batch_bytes: 1 << 20,
            batch_steps: 4096,
            batch_delay: None,
            ..base
        }
    } else {
        base
    }
}

/// Record `steps` camera steps (uncompressed, chunk durability) as `episode`.
fn record_cameras(d: &mut Daemon, window: &CameraWindow, episode: &str, steps: u64) -> Result<f64> {
    let source = Source::Cameras(window);
    let spec = open_spec(
        episode,
        "bench/upload",
        &source,
        CameraWindow::channels(CodecChoice::None),
        Durability::Chunk,
    );
    let r = throughput(
        d,
        client_options(false),
        spec,
        source,
        steps,
        Transport::Socket,
    )?;
    let bytes = steps as f64 * teleop_workload::CAMERAS_RECORD_BYTES as f64;
    Ok(bytes / r.wall.as_secs_f64().max(1e-9) / 1e6)
}

/// Record the joints steps (zstd-3, ack); timesteps/s.
fn record_joints(d: &mut Daemon, joints: &JointsData, episode: &str) -> Result<f64> {
    let source = Source::Joints(joints);
    let spec = open_spec(
        episode,
        "bench/upload",
        &source,
        JointsData::channels(CodecChoice::Zstd { level: 3 }),
        Durability::Ack,
    );
    let steps = joints.steps();
    let r = throughput(
        d,
        client_options(true),
        spec,
        source,
        steps,
        Transport::Socket,
    )?;
    Ok(steps as f64 / r.wall.as_secs_f64().max(1e-9))
}

/// One row of the recording case.
struct RecordingRow {
    uploader: bool,
    joints_ts_s: f64,
    cameras_mb_s: f64,
    /// Bytes the uploader sent while the timed episodes were recorded.
    uploaded_meanwhile: u64,
}

fn recording_case(
    a: &UploadArgs,
    bins: &Bins,
    server: &S3sFs,
    scratch: &Path,
) -> Result<Vec<RecordingRow>> {
    let joints = JointsData::build(a.joints_steps);
    let window = CameraWindow::build(64.min(a.camera_steps.max(a.backlog_steps)).max(1));
    let mut rows = Vec::new();
    for uploader in [false, true] {
        let dir = scratch.join(if uploader { "rec-on" } else { "rec-off" });
        let extra = if uploader {
            publish_toml(server.endpoint(), a.part_mib, 0)
        } else {
            String::new()
        };
        let mut d = Daemon::start_with(&bins.wshardd, &dir, config(), &extra)?;
        // The backlog (untimed): with the uploader on, it is being sent meanwhile.
        record_cameras(&mut d, &window, "backlog", a.backlog_steps)?;
        let control = dir.join("wshardd-control.sock");
        let sent0 = status::sent_bytes(&bins.wshard, &control);
        let joints_ts_s = record_joints(&mut d, &joints, "joints")?;
        let cameras_mb_s = record_cameras(&mut d, &window, "cameras", a.camera_steps)?;
        let sent1 = status::sent_bytes(&bins.wshard, &control);
        d.stop();
        rows.push(RecordingRow {
            uploader,
            joints_ts_s,
            cameras_mb_s,
            uploaded_meanwhile: sent1.saturating_sub(sent0),
        });
    }
    Ok(rows)
}

/// What the resume case measured.
struct ResumeResult {
    part_bytes: u64,
    parts_total: u64,
    parts_done_at_kill: u64,
    parts_journaled: u64,
    parts_sent_after: u64,
    bytes_sent_after: u64,
    /// Parts sent in both runs minus the parts of the file: at most the part in flight.
    resent_bytes: u64,
    resume_s: f64,
}

fn resume_case(
    a: &UploadArgs,
    bins: &Bins,
    server: &S3sFs,
    scratch: &Path,
) -> Result<ResumeResult> {
    let dir = scratch.join("resume");
    let window = CameraWindow::build(64.min(a.resume_steps).max(1));
    let limit = a.limit_mib_s << 20;
    let part = a.part_mib << 20;
    let extra = publish_toml(server.endpoint(), a.part_mib, limit);
    // One chunk file for the whole episode: the kill lands in the middle of one multipart
    // upload, and its parts are the episode's.
    let one_chunk = DaemonConfig {
        chunk_bytes: RESUME_CHUNK_BYTES,
        ..config()
    };
    let mut d = Daemon::start_with(&bins.wshardd, &dir, one_chunk, &extra)?;
    record_cameras(&mut d, &window, "resume", a.resume_steps)?;
    let control = dir.join("wshardd-control.sock");
    let at_kill = status::wait(&bins.wshard, &control, Duration::from_secs(600), |s| {
        s.parts_total > 1 && s.parts_done * 2 >= s.parts_total
    })?;
    d.kill9();
    let parts_journaled = status::journaled_parts(&dir.join("data/.upload/queue.log"));
    let t0 = Instant::now();
    let d = Daemon::start_with(
        &bins.wshardd,
        &dir,
        one_chunk,
        &publish_toml(server.endpoint(), a.part_mib, 0),
    )?;
    let done = status::wait(&bins.wshard, &control, Duration::from_secs(600), |s| {
        s.published >= 1
    })?;
    let resume_s = t0.elapsed().as_secs_f64();
    d.stop();
    // Sent before the kill: at least the parts journaled, at most one more (in flight).
    let sent_before_max = parts_journaled + 1;
    let resent_parts = (sent_before_max + done.parts_sent).saturating_sub(at_kill.parts_total);
    Ok(ResumeResult {
        part_bytes: part,
        parts_total: at_kill.parts_total,
        parts_done_at_kill: at_kill.parts_done,
        parts_journaled,
        parts_sent_after: done.parts_sent,
        bytes_sent_after: done.sent_bytes,
        resent_bytes: resent_parts * part,
        resume_s,
    })
}

/// The binaries.
struct Bins {
    wshardd: PathBuf,
    wshard: PathBuf,
    s3s_fs: PathBuf,
}

fn locate_bins(a: &UploadArgs) -> Result<Bins> {
    let wshardd = locate(a.wshardd.as_deref())?;
    let wshard = a
        .wshard
        .clone()
        .unwrap_or_else(|| wshardd.with_file_name("wshard"));
    if !wshard.is_file() {
        return Err(fail(format!(
            "{}: no such file (cargo build --release -p wshard-cli, or --wshard)",
            wshard.display()
        )));
    }
    let s3s_fs = s3s_fs::binary(a.s3s_fs.as_deref())?;
    Ok(Bins {
        wshardd,
        wshard,
        s3s_fs,
    })
}

/// Run the benchmark.
///
/// # Errors
/// Any failure of the daemon, the server or the client.
pub fn run(a: &UploadArgs) -> Result<()> {
    let bins = locate_bins(a)?;
    let scratch = ScratchDir::new(a.dir.as_deref())?;
    // The daemons inherit the credentials.
    std::env::set_var("AWS_ACCESS_KEY_ID", s3s_fs::ACCESS_KEY);
    std::env::set_var("AWS_SECRET_ACCESS_KEY", s3s_fs::SECRET_KEY);
    let server = S3sFs::start(&bins.s3s_fs, &scratch.path().join("s3"))?;
    println!(
        "robot-upload benchmark{}: s3s-fs at {}, parts of {} MiB",
        if a.quick {
            " (quick: a smoke run, not a measurement)"
        } else {
            ""
        },
        server.endpoint(),
        a.part_mib
    );
    let rows = recording_case(a, &bins, &server, scratch.path())?;
    println!("\n1. Recording with the uploader running vs not (target >= 0.95x)");
    println!(
        "{:<10} {:>16} {:>14} {:>22}",
        "uploader", "joints steps/s", "cameras MB/s", "uploaded meanwhile MB"
    );
    for r in &rows {
        println!(
            "{:<10} {:>16.0} {:>14.1} {:>22.1}",
            if r.uploader { "running" } else { "off" },
            r.joints_ts_s,
            r.cameras_mb_s,
            r.uploaded_meanwhile as f64 / 1e6
        );
    }
    let (off, on) = (&rows[0], &rows[1]);
    let rj = on.joints_ts_s / off.joints_ts_s.max(1e-9);
    let rc = on.cameras_mb_s / off.cameras_mb_s.max(1e-9);
    println!(
        "ratio: joints {rj:.3}x, cameras {rc:.3}x (target >= 0.95x: {})",
        if rj >= 0.95 && rc >= 0.95 {
            "met"
        } else {
            "NOT met"
        }
    );
    if on.uploaded_meanwhile == 0 {
        println!("note: the uploader sent nothing while the timed episodes were recorded: raise --backlog-steps");
    }
    let r = resume_case(a, &bins, &server, scratch.path())?;
    println!(
        "\n2. Resume after a SIGKILL at 50 % of a multipart upload (target: re-sent <= one part)"
    );
    println!(
        "parts {} of {} MiB; at the kill: {} stored per status, {} journaled; after the restart: {} parts, {:.1} MB sent in {:.1} s",
        r.parts_total,
        r.part_bytes >> 20,
        r.parts_done_at_kill,
        r.parts_journaled,
        r.parts_sent_after,
        r.bytes_sent_after as f64 / 1e6,
        r.resume_s
    );
    println!(
        "re-sent at most {:.1} MB = {:.2} parts ({})",
        r.resent_bytes as f64 / 1e6,
        r.resent_bytes as f64 / r.part_bytes as f64,
        if r.resent_bytes <= r.part_bytes {
            "met"
        } else {
            "NOT met"
        }
    );
    for row in &rows {
        println!(
            "{}",
            JsonLine::new()
                .str("bench", "robot-upload")
                .str("case", "recording")
                .bool("uploader", row.uploader)
                .num("joints_timesteps_per_s", row.joints_ts_s)
                .num("cameras_mb_s", row.cameras_mb_s)
                .int("uploaded_meanwhile_bytes", row.uploaded_meanwhile)
                .bool("quick", a.quick)
                .render()
        );
    }
    println!(
        "{}",
        JsonLine::new()
            .str("bench", "robot-upload")
            .str("case", "resume")
            .int("part_bytes", r.part_bytes)
            .int("parts_total", r.parts_total)
            .int("parts_journaled_at_kill", r.parts_journaled)
            .int("parts_sent_after_restart", r.parts_sent_after)
            .int("bytes_sent_after_restart", r.bytes_sent_after)
            .int("resent_bytes_max", r.resent_bytes)
            .num("resume_s", r.resume_s)
            .bool(
                "target_resent_le_one_part_met",
                r.resent_bytes <= r.part_bytes
            )
            .bool("quick", a.quick)
            .render()
    );
    Ok(())
}
