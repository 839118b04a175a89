//! Whole-episode write and read throughput per codec, against a plain write of the same bytes.
//!
//! Every write is timed from file creation through `sync_all()` of every file it wrote
//! (buffered writes look fast until the fsync). Every read goes through
//! `ShardReader::read_block` for each block of each file (positioned read, decompression,
//! CRC32C check). Reads come from the page cache: the files were just written and the cache
//! cannot be dropped without root.

use std::fs::File;
use std::hint::black_box;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use wshard::codec::{Codec, StoredCodec};
use wshard::digest::sha256_file;
use wshard::episode::{Episode, EpisodeWriteOptions};
use wshard::hash::crc32c;
use wshard::manifest::chunk_file_name;
use wshard::read::ShardReader;

use crate::error::{fail, io_ctx, Result};
use crate::scratch::{measure_and_remove, ScratchDir};
use crate::stats::{mb_per_s, Stats};
use crate::workload::{RawBlocks, Workload};

/// How the bytes are laid out on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// The raw payload appended to one file with `write_all`.
    Plain,
    /// The whole episode as one WShard file (one block per channel).
    OneFile,
    /// The episode split into chunk episodes, one WShard file each.
    Chunks,
}

impl Layout {
    pub fn name(self) -> &'static str {
        match self {
            Self::Plain => "plain",
            Self::OneFile => "one-file",
            Self::Chunks => "chunks",
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Case {
    layout: Layout,
    codec: Codec,
    label: &'static str,
}

fn cases() -> Vec<Case> {
    let c = |layout, codec, label| Case {
        layout,
        codec,
        label,
    };
    vec![
        c(Layout::Plain, Codec::None, "-"),
        c(Layout::OneFile, Codec::None, "none"),
        c(Layout::Chunks, Codec::None, "none"),
        c(Layout::Chunks, Codec::Lz4, "lz4"),
        c(Layout::Chunks, Codec::Zstd { level: 1 }, "zstd-1"),
        c(Layout::Chunks, Codec::Zstd { level: 3 }, "zstd-3"),
    ]
}

/// One line of results.
#[derive(Clone, Debug)]
pub struct Row {
    pub workload: &'static str,
    /// `write`, `read` or `sha256`.
    pub op: &'static str,
    pub layout: Layout,
    pub codec: &'static str,
    pub files: usize,
    /// Bytes the MB/s figures are computed over (the payload; file bytes for `sha256`).
    pub bytes: u64,
    pub mb_s: Stats,
    /// Median over repetitions of (this case / the plain case of the same repetition).
    pub ratio_vs_plain: Option<Stats>,
    /// Best (max MB/s) of this case / best of the plain case. Interference here only ever
    /// slows a run down, so the best of a few is the steadier estimate of the intrinsic cost.
    pub ratio_best: Option<f64>,
    /// Writes: seconds spent in `sync_all` (inside the wall time).
    pub fsync_s: Option<Stats>,
    pub output_bytes: u64,
}

#[derive(Default)]
struct Samples {
    write: Vec<f64>,
    read: Vec<f64>,
    write_ratio: Vec<f64>,
    read_ratio: Vec<f64>,
    fsync_s: Vec<f64>,
    output_bytes: u64,
    files: usize,
}

/// One case, one repetition.
#[derive(Clone, Copy, Debug, Default)]
struct Measured {
    write_mb: f64,
    read_mb: f64,
    fsync_s: f64,
    files: usize,
    output_bytes: u64,
    /// Codec-none chunks only: `read_stored` MB/s and SHA-256 MB/s over `output_bytes`.
    stored_mb: Option<f64>,
    sha_mb: Option<f64>,
}

/// What a timed write produced.
struct Written {
    wall: Duration,
    fsync: Duration,
    paths: Vec<PathBuf>,
}

/// Run every case `reps` times, interleaved (rep 1 of every case, then rep 2, ...), each
/// repetition starting one case later than the previous one so that no case always follows
/// the same one.
///
/// # Errors
/// Write, read or verification failures.
pub fn run(
    scratch: &ScratchDir,
    w: &Workload,
    chunks: &[Episode],
    reps: usize,
) -> Result<Vec<Row>> {
    let cases = cases();
    let payload = w.payload_bytes();
    let raw = RawBlocks::of(&w.episode);
    let parts = raw.parts();
    let mut samples: Vec<Samples> = cases.iter().map(|_| Samples::default()).collect();
    let (mut sha, mut sha_bytes) = (Vec::new(), 0);
    let (mut stored, mut stored_ratio) = (Vec::new(), Vec::new());
    let name = w.kind.name();
    // The plain read target: one buffer, touched now, reused by every plain read.
    let mut plain_buf = vec![1u8; parts.iter().map(|p| p.len()).sum()];
    let ctx = Ctx {
        scratch,
        w,
        chunks,
        parts: &parts,
    };
    for rep in 0..reps {
        let mut this = vec![Measured::default(); cases.len()];
        for k in 0..cases.len() {
            let i = (k + rep) % cases.len();
            let case = cases[i];
            let m = measure(&ctx, case, &mut plain_buf)?;
            eprintln!(
                "  [{name} rep {}/{reps}] {:<8} {:<6}: write {:>6.0} MB/s (fsync {:.2} s), read {:>6.0} MB/s, {payload} -> {} bytes",
                rep + 1,
                case.layout.name(),
                case.label,
                m.write_mb,
                m.fsync_s,
                m.read_mb,
                m.output_bytes
            );
            this[i] = m;
        }
        let plain = this[0];
        for (m, s) in this.iter().zip(&mut samples) {
            s.write.push(m.write_mb);
            s.read.push(m.read_mb);
            s.write_ratio.push(m.write_mb / plain.write_mb);
            s.read_ratio.push(m.read_mb / plain.read_mb);
            s.fsync_s.push(m.fsync_s);
            s.files = m.files;
            s.output_bytes = m.output_bytes;
            if let (Some(st), Some(sh)) = (m.stored_mb, m.sha_mb) {
                stored.push(st);
                stored_ratio.push(st / plain.read_mb);
                sha.push(sh);
                sha_bytes = m.output_bytes;
            }
        }
    }
    let mut rows = Vec::new();
    let best = |v: &[f64]| Stats::of(v).max;
    let (plain_w, plain_r) = (best(&samples[0].write), best(&samples[0].read));
    for (case, s) in cases.iter().zip(&samples) {
        for (op, mb, ratio, plain_best) in [
            ("write", &s.write, &s.write_ratio, plain_w),
            ("read", &s.read, &s.read_ratio, plain_r),
        ] {
            rows.push(Row {
                workload: name,
                op,
                layout: case.layout,
                codec: case.label,
                files: s.files,
                bytes: payload,
                mb_s: Stats::of(mb),
                ratio_vs_plain: Some(Stats::of(ratio)),
                ratio_best: Some(best(mb) / plain_best),
                fsync_s: (op == "write").then(|| Stats::of(&s.fsync_s)),
                output_bytes: s.output_bytes,
            });
        }
    }
    rows.push(Row {
        workload: name,
        op: "read_stored",
        layout: Layout::Chunks,
        codec: "none",
        files: chunks.len(),
        bytes: payload,
        mb_s: Stats::of(&stored),
        ratio_vs_plain: Some(Stats::of(&stored_ratio)),
        ratio_best: Some(best(&stored) / plain_r),
        fsync_s: None,
        output_bytes: sha_bytes,
    });
    rows.push(Row {
        workload: name,
        op: "sha256",
        layout: Layout::Chunks,
        codec: "none",
        files: chunks.len(),
        bytes: sha_bytes,
        mb_s: Stats::of(&sha),
        ratio_vs_plain: None,
        ratio_best: None,
        fsync_s: None,
        output_bytes: sha_bytes,
    });
    Ok(rows)
}

struct Ctx<'a> {
    scratch: &'a ScratchDir,
    w: &'a Workload,
    chunks: &'a [Episode],
    parts: &'a [&'a [u8]],
}

/// Prefault, timed write, timed read (plus `read_stored` and SHA-256 for codec-none chunks),
/// then delete the files.
fn measure(ctx: &Ctx<'_>, case: Case, plain_buf: &mut [u8]) -> Result<Measured> {
    let payload = ctx.w.payload_bytes();
    prefault(ctx.scratch, ctx.parts)?;
    let written = match case.layout {
        Layout::Plain => write_plain(ctx.scratch, ctx.parts)?,
        Layout::OneFile => write_episodes(
            ctx.scratch,
            std::slice::from_ref(&ctx.w.episode),
            case.codec,
        )?,
        Layout::Chunks => write_episodes(ctx.scratch, ctx.chunks, case.codec)?,
    };
    let paths = &written.paths;
    let (rwall, decoded) = match case.layout {
        Layout::Plain => read_plain(paths, plain_buf)?,
        _ => read_episodes(paths)?,
    };
    let check = |what: &str, decoded: u64| {
        if decoded < payload {
            return Err(fail(format!(
                "{} {} {}: {what} returned {decoded} bytes, the payload is {payload}",
                ctx.w.kind.name(),
                case.layout.name(),
                case.label
            )));
        }
        Ok(())
    };
    check("read", decoded)?;
    let mut m = Measured {
        write_mb: mb_per_s(payload, written.wall),
        read_mb: mb_per_s(payload, rwall),
        fsync_s: written.fsync.as_secs_f64(),
        files: paths.len(),
        ..Measured::default()
    };
    if case.layout == Layout::Chunks && case.codec == Codec::None {
        let (swall, bytes) = hash_files(paths)?;
        m.sha_mb = Some(mb_per_s(bytes, swall));
        let (rwall, decoded) = read_raw_stored(paths)?;
        check("read_stored", decoded)?;
        m.stored_mb = Some(mb_per_s(payload, rwall));
    }
    m.output_bytes = measure_and_remove(paths)?;
    Ok(m)
}

fn write_plain(scratch: &ScratchDir, parts: &[&[u8]]) -> Result<Written> {
    let path = scratch.file("plain.bin");
    let start = Instant::now();
    let mut f = File::create(&path).map_err(|e| io_ctx("create", &path, e))?;
    for p in parts {
        f.write_all(p).map_err(|e| io_ctx("write", &path, e))?;
    }
    let t = Instant::now();
    f.sync_all().map_err(|e| io_ctx("fsync", &path, e))?;
    Ok(Written {
        fsync: t.elapsed(),
        wall: start.elapsed(),
        paths: vec![path],
    })
}

/// Read the plain file into `buf` (allocated and touched before, reused): the limit of
/// copying the bytes out of the page cache.
fn read_plain(paths: &[PathBuf], buf: &mut [u8]) -> Result<(Duration, u64)> {
    let start = Instant::now();
    let mut total = 0;
    for p in paths {
        let mut f = File::open(p).map_err(|e| io_ctx("open", p, e))?;
        let len = usize::try_from(f.metadata().map_err(|e| io_ctx("stat", p, e))?.len())?;
        let dst = buf
            .get_mut(..len)
            .ok_or_else(|| fail(format!("{}: larger than the read buffer", p.display())))?;
        f.read_exact(dst).map_err(|e| io_ctx("read", p, e))?;
        total += len as u64;
        black_box(&dst[len - 1]);
    }
    Ok((start.elapsed(), total))
}

/// Untimed, before every timed write: write as many bytes as the payload into a dummy file
/// (page cache only, never synced) and delete it, so the timed write finds warm free pages.
/// This VM hands idle free memory back to the host, and faulting it in again costs seconds
/// per GiB: without this, that cost lands on whichever case follows a pause.
fn prefault(scratch: &ScratchDir, parts: &[&[u8]]) -> Result<()> {
    let path = scratch.file("prefault.tmp");
    let mut f = File::create(&path).map_err(|e| io_ctx("create", &path, e))?;
    for p in parts {
        f.write_all(p).map_err(|e| io_ctx("write", &path, e))?;
    }
    drop(f);
    std::fs::remove_file(&path).map_err(|e| io_ctx("remove", &path, e))?;
    Ok(())
}

/// Write each episode to its own file with `Episode::write_to` straight into the `File` (the
/// writer issues one `write_all` per block) and `sync_all` it.
fn write_episodes(scratch: &ScratchDir, episodes: &[Episode], codec: Codec) -> Result<Written> {
    let opts = EpisodeWriteOptions {
        default_codec: codec,
        ..EpisodeWriteOptions::default()
    };
    let paths: Vec<PathBuf> = episodes
        .iter()
        .enumerate()
        .map(|(k, ep)| scratch.file(&chunk_file_name(&ep.id, k as u64)))
        .collect();
    let mut fsync = Duration::ZERO;
    let start = Instant::now();
    for (ep, path) in episodes.iter().zip(&paths) {
        let file = File::create(path).map_err(|e| io_ctx("create", path, e))?;
        let (file, _) = ep.write_to(file, &opts)?;
        let t = Instant::now();
        file.sync_all().map_err(|e| io_ctx("fsync", path, e))?;
        fsync += t.elapsed();
    }
    Ok(Written {
        wall: start.elapsed(),
        fsync,
        paths,
    })
}

/// Open each file and read every block by name: decompression and CRC check included.
fn read_episodes(paths: &[PathBuf]) -> Result<(Duration, u64)> {
    let start = Instant::now();
    let mut total = 0;
    for p in paths {
        let r = ShardReader::open(p)?;
        for name in r.index().names() {
            let data = r.read_block(name)?;
            total += data.len() as u64;
            black_box(data);
        }
    }
    Ok((start.elapsed(), total))
}

/// Raw blocks through `read_stored` (one positioned read into one fresh `Vec`) plus the CRC32C
/// check: what `read_block` would cost on raw blocks without its second copy (it passes the
/// stored `Vec` to `decompress`, which copies raw blocks with `to_vec`).
fn read_raw_stored(paths: &[PathBuf]) -> Result<(Duration, u64)> {
    let start = Instant::now();
    let mut total = 0;
    for p in paths {
        let r = ShardReader::open(p)?;
        let index = r.index();
        for (i, e) in index.entries().iter().enumerate() {
            let data = if index.stored_codec(i) == Some(StoredCodec::Raw) {
                let data = r.read_stored(i)?;
                if index.crc_checked(i) && crc32c(&data) != e.checksum {
                    return Err(fail(format!("{}: entry {i}: CRC mismatch", p.display())));
                }
                data
            } else {
                r.read_entry(i)?
            };
            total += data.len() as u64;
            black_box(data);
        }
    }
    Ok((start.elapsed(), total))
}

/// SHA-256 of each file, as a manifest entry needs it (`ChunkRef::for_file`).
fn hash_files(paths: &[PathBuf]) -> Result<(Duration, u64)> {
    let mut total = 0;
    for p in paths {
        total += std::fs::metadata(p)
            .map_err(|e| io_ctx("stat", p, e))?
            .len();
    }
    let start = Instant::now();
    for p in paths {
        black_box(sha256_file(p)?);
    }
    Ok((start.elapsed(), total))
}
