//! The `upload` results: a table, then one JSON line per case.

use std::time::Duration;

use super::args::UploadArgs;
use super::data::DataFile;
use crate::json::JsonLine;
use crate::stats::{mb_per_s, Stats};

/// One measured case.
#[derive(Clone, Debug)]
pub struct Row {
    pub case: &'static str,
    /// File bytes the case covers.
    pub bytes: u64,
    /// Payload bytes sent to the store.
    pub sent: u64,
    pub wall: Duration,
    pub cpu_self_s: f64,
    pub cpu_server_s: f64,
}

impl Row {
    pub fn new(
        case: &'static str,
        bytes: u64,
        sent: u64,
        wall: Duration,
        cpu_self_s: f64,
        cpu_server_s: f64,
    ) -> Self {
        Self {
            case,
            bytes,
            sent,
            wall,
            cpu_self_s,
            cpu_server_s,
        }
    }

    fn mb_s(&self) -> f64 {
        mb_per_s(self.bytes, self.wall)
    }

    fn per_gb(&self, cpu: f64) -> f64 {
        cpu / (self.bytes as f64 / 1e9)
    }
}

fn median_mb_s(rows: &[Row], case: &str) -> Stats {
    let v: Vec<f64> = rows
        .iter()
        .filter(|r| r.case == case)
        .map(Row::mb_s)
        .collect();
    Stats::of(&v)
}

/// Print the table and the JSON lines to stdout.
pub fn print(a: &UploadArgs, files: &[DataFile], bytes: u64, rows: &[Row], republished: u64) {
    let plain = median_mb_s(rows, "plain").median;
    println!(
        "upload: {} files, {:.1} MB ({} MB episodes, {} MiB chunks), part {} MiB, reps {}; \
         s3s-fs on loopback",
        files.len(),
        bytes as f64 / 1e6,
        a.episode_mb,
        a.chunk_mib,
        a.part_mib,
        a.reps
    );
    println!();
    println!(
        "{:<20} {:>9} {:>8} {:>8} {:>9} {:>13} {:>15} {:>10}",
        "case", "MB", "wall s", "MB/s", "vs plain", "CPU s/GB self", "CPU s/GB s3s-fs", "sent MB"
    );
    for r in rows {
        println!(
            "{:<20} {:>9.1} {:>8.2} {:>8.1} {:>8.2}x {:>13.2} {:>15.2} {:>10.1}",
            r.case,
            r.bytes as f64 / 1e6,
            r.wall.as_secs_f64(),
            r.mb_s(),
            r.mb_s() / plain,
            r.per_gb(r.cpu_self_s),
            r.per_gb(r.cpu_server_s),
            r.sent as f64 / 1e6
        );
    }
    let up = median_mb_s(rows, "upload");
    let publish = median_mb_s(rows, "publish");
    println!();
    println!(
        "upload vs plain (median MB/s): {:.2}x (goal >= 0.9x); publish (with hashing and \
         verification) vs plain: {:.2}x; re-publish sent {republished} bytes (goal 0): {}",
        up.median / plain,
        publish.median / plain,
        if republished == 0 { "ok" } else { "FAILED" }
    );
    println!();
    for r in rows {
        println!(
            "{}",
            JsonLine::new()
                .str("bench", "upload")
                .str("case", r.case)
                .int("bytes", r.bytes)
                .int("sent_bytes", r.sent)
                .num("wall_s", r.wall.as_secs_f64())
                .num("mb_s", r.mb_s())
                .num("vs_plain", r.mb_s() / plain)
                .num("cpu_s_per_gb_self", r.per_gb(r.cpu_self_s))
                .num("cpu_s_per_gb_server", r.per_gb(r.cpu_server_s))
                .render()
        );
    }
}
