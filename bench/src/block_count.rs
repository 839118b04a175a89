//! Cost of opening a shard and of reading one block by name, against the number of blocks.
//!
//! Opening reads and validates the header, the whole index (48 bytes per entry) and the string
//! table, and builds the name-hash map, so it grows with the block count. Reading one block
//! afterwards is a hash lookup plus one positioned read of that block only, so it should not.

use std::fs::File;
use std::hint::black_box;
use std::io::BufWriter;
use std::path::Path;
use std::time::{Duration, Instant};

use teleop_workload::splitmix64;
use wshard::read::ShardReader;
use wshard::write::{BlockOptions, Reserve, ShardOptions, ShardWriter};

use crate::error::{fail, io_ctx, Result};
use crate::scratch::ScratchDir;
use crate::stats::micros;

/// Bytes per block.
pub const BLOCK_BYTES: usize = 4096;
/// The block counts measured.
pub const COUNTS: [usize; 3] = [100, 1_000, 10_000];
/// Single-block reads per file.
const READS: usize = 50_000;
/// Distinct blocks read in each file (at most the smallest block count).
const PICKS: usize = 100;
/// Time budget for the open measurement of one file.
const OPEN_BUDGET: Duration = Duration::from_millis(300);

/// Results for one file.
#[derive(Clone, Debug)]
pub struct Row {
    pub blocks: usize,
    pub file_bytes: u64,
    pub open_reps: usize,
    pub open_us_mean: f64,
    pub open_us_p50: f64,
    pub read_reps: usize,
    pub read_one_us_mean: f64,
    pub read_one_us_p50: f64,
}

fn block_name(i: usize) -> String {
    format!("signal/block_{i:05}")
}

fn write_file(path: &Path, blocks: usize) -> Result<u64> {
    let names: Vec<String> = (0..blocks).map(block_name).collect();
    let file = File::create(path).map_err(|e| io_ctx("create", path, e))?;
    let mut w = ShardWriter::new(
        BufWriter::new(file),
        ShardOptions::wshard(),
        &Reserve::names(names.iter().cloned()),
    )?;
    let mut data = vec![0u8; BLOCK_BYTES];
    for (i, name) in names.iter().enumerate() {
        for (k, word) in data.chunks_exact_mut(8).enumerate() {
            word.copy_from_slice(&splitmix64(i as u64, k as u64).to_le_bytes());
        }
        w.write_block(name, &data, BlockOptions::raw(0))?;
    }
    let (out, _) = w.finish()?;
    let file = out
        .into_inner()
        .map_err(|e| io_ctx("flush", path, e.into_error()))?;
    Ok(file.metadata().map_err(|e| io_ctx("stat", path, e))?.len())
}

fn p50(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn measure(path: &Path, blocks: usize, file_bytes: u64) -> Result<Row> {
    // Open: repeat within a time budget, at least 20 times.
    let mut open = Vec::new();
    let budget = Instant::now();
    while open.len() < 20 || (budget.elapsed() < OPEN_BUDGET && open.len() < 10_000) {
        let t = Instant::now();
        let r = ShardReader::open(path)?;
        open.push(micros(t.elapsed()));
        if r.index().len() != blocks {
            return Err(fail(format!(
                "{}: {} entries, expected {blocks}",
                path.display(),
                r.index().len()
            )));
        }
        black_box(r);
    }
    // One block by name: the same number of distinct blocks in every file (so the data read
    // fits the CPU caches equally), one from each of PICKS equal slices of the index at a
    // pseudo-random position, visited in a shuffled order.
    let r = ShardReader::open(path)?;
    let slice = blocks / PICKS;
    let mut picks: Vec<(u64, String)> = (0..PICKS)
        .map(|k| {
            let i = k * slice + (splitmix64(0xB10C, k as u64) % slice as u64) as usize;
            (splitmix64(0x5EED, k as u64), block_name(i))
        })
        .collect();
    picks.sort();
    let picks: Vec<String> = picks.into_iter().map(|(_, n)| n).collect();
    for name in &picks {
        if r.read_block(name)?.len() != BLOCK_BYTES {
            return Err(fail(format!("block `{name}` has the wrong size")));
        }
    }
    let mut each = Vec::with_capacity(READS);
    let all = Instant::now();
    for name in picks.iter().cycle().take(READS) {
        let t = Instant::now();
        black_box(r.read_block(black_box(name))?);
        each.push(micros(t.elapsed()));
    }
    let read_mean = micros(all.elapsed()) / READS as f64;
    let open_mean = open.iter().sum::<f64>() / open.len() as f64;
    Ok(Row {
        blocks,
        file_bytes,
        open_reps: open.len(),
        open_us_mean: open_mean,
        open_us_p50: p50(open),
        read_reps: READS,
        read_one_us_mean: read_mean,
        read_one_us_p50: p50(each),
    })
}

/// Write a file per block count, measure it, delete it.
///
/// # Errors
/// Write, read and I/O errors.
pub fn run(scratch: &ScratchDir) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for blocks in COUNTS {
        let path = scratch.file(&format!("blocks_{blocks}.wshard"));
        let file_bytes = write_file(&path, blocks)?;
        let row = measure(&path, blocks, file_bytes)?;
        std::fs::remove_file(&path).map_err(|e| io_ctx("remove", &path, e))?;
        eprintln!(
            "  [blocks {blocks:>6}] open {:.1} us, read one block {:.2} us",
            row.open_us_mean, row.read_one_us_mean
        );
        rows.push(row);
    }
    Ok(rows)
}
