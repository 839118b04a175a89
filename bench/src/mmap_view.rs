//! Zero-copy typed views over a memory-mapped shard.
//!
//! `MappedShard::view::<T>(name)` should cost a name lookup and a few checks whatever the block
//! size, and return a slice that points into the map. The run checks the pointer (it lies
//! inside the map and equals `bytes(name)`), spot-checks the contents against the episode, and
//! times `read_block` and `view_verified` on the same block for contrast: both touch every
//! byte.

use std::fs::File;
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use wshard::episode::{Episode, EpisodeWriteOptions};
use wshard::read::MappedShard;

use crate::error::{fail, io_ctx, Result};
use crate::scratch::ScratchDir;
use crate::stats::micros;

/// Repetitions of `view` for the mean.
const VIEWS: u32 = 100_000;

/// What the run measured.
#[derive(Clone, Debug)]
pub struct Report {
    pub block: String,
    pub block_bytes: u64,
    pub file_bytes: u64,
    pub open_us: f64,
    pub view_first_us: f64,
    pub view_mean_us: f64,
    pub views: u32,
    pub view_f32_block: String,
    pub view_f32_len: usize,
    pub view_verified_us: f64,
    pub read_block_us: f64,
}

/// Check that `view` lies inside `map` and covers exactly what `bytes` does.
fn check_inside<T>(name: &str, view: &[T], map: &[u8], bytes: &[u8]) -> Result<()> {
    let (lo, hi) = (map.as_ptr() as usize, map.as_ptr() as usize + map.len());
    let len = std::mem::size_of_val(view);
    let (p, end) = (view.as_ptr() as usize, view.as_ptr() as usize + len);
    if p < lo || end > hi {
        return Err(fail(format!(
            "view of `{name}` at {p:#x}..{end:#x} is outside the map {lo:#x}..{hi:#x}: it was copied"
        )));
    }
    if p != bytes.as_ptr() as usize || len != bytes.len() {
        return Err(fail(format!(
            "view of `{name}` does not start at bytes(`{name}`)"
        )));
    }
    Ok(())
}

fn measure(path: &Path, ep: &Episode, file_bytes: u64) -> Result<Report> {
    let big = ep
        .channels
        .iter()
        .rev()
        .max_by_key(|c| c.data.len())
        .ok_or_else(|| fail("episode has no channels"))?;
    let small = ep
        .channels
        .iter()
        .find(|c| c.dtype == wshard::episode::DType::F32)
        .ok_or_else(|| fail("episode has no f32 channel"))?;
    let (name, f32_name) = (big.block_name(), small.block_name());

    let t = Instant::now();
    let shard = MappedShard::open(path)?;
    let open_us = micros(t.elapsed());

    let t = Instant::now();
    let view = shard.view::<u8>(&name)?;
    let view_first_us = micros(t.elapsed());
    let t = Instant::now();
    for _ in 0..VIEWS {
        black_box(shard.view::<u8>(black_box(&name))?);
    }
    let view_mean_us = micros(t.elapsed()) / f64::from(VIEWS);

    let map: &[u8] = shard.reader().source();
    check_inside(&name, view, map, shard.bytes(&name)?)?;
    if view.len() != big.data.len() {
        return Err(fail(format!(
            "view of `{name}` is {} bytes, the channel {}",
            view.len(),
            big.data.len()
        )));
    }
    // Spot-check the first and last 64 KiB (touches only those pages).
    let n = view.len().min(1 << 16);
    let tail = view.len() - n;
    if view[..n] != big.data[..n] || view[tail..] != big.data[tail..] {
        return Err(fail(format!("view of `{name}` differs from the episode")));
    }

    let floats = shard.view::<f32>(&f32_name)?;
    check_inside(&f32_name, floats, map, shard.bytes(&f32_name)?)?;
    let want: Vec<f32> = small
        .data
        .chunks_exact(4)
        .take(16)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if floats.len() * 4 != small.data.len() || floats[..want.len()] != want[..] {
        return Err(fail(format!(
            "f32 view of `{f32_name}` differs from the episode"
        )));
    }

    let t = Instant::now();
    black_box(shard.view_verified::<u8>(&name)?);
    let view_verified_us = micros(t.elapsed());
    let t = Instant::now();
    black_box(shard.reader().read_block(&name)?);
    let read_block_us = micros(t.elapsed());

    Ok(Report {
        block: name,
        block_bytes: big.data.len() as u64,
        file_bytes,
        open_us,
        view_first_us,
        view_mean_us,
        views: VIEWS,
        view_f32_len: floats.len(),
        view_f32_block: f32_name,
        view_verified_us,
        read_block_us,
    })
}

/// Write `ep` uncompressed as one file (untimed), map it, measure, delete it.
///
/// # Errors
/// Write, map and view errors, and a view that is not zero-copy.
pub fn run(scratch: &ScratchDir, ep: &Episode) -> Result<Report> {
    let path = scratch.file("mmap_view.wshard");
    let file = File::create(&path).map_err(|e| io_ctx("create", &path, e))?;
    let (file, _) = ep.write_to(file, &EpisodeWriteOptions::default())?;
    let file_bytes = file.metadata().map_err(|e| io_ctx("stat", &path, e))?.len();
    drop(file);
    let report = measure(&path, ep, file_bytes);
    std::fs::remove_file(&path).map_err(|e| io_ctx("remove", &path, e))?;
    report
}
