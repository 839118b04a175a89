//! `wshard-bench format`: the format library on the shared workloads, all in one run.
//!
//! 1. Build a cameras and a joints episode of `--size-mib` payload each (untimed).
//! 2. Per codec: write (through fsync) and read back every block; plain `write_all` beside it.
//! 3. Open cost and single-block read cost for 100 / 1,000 / 10,000 blocks.
//! 4. Zero-copy `MappedShard::view` on the largest block of the cameras episode.

use std::time::Instant;

use wshard::manifest::split_episode;

use crate::block_count;
use crate::cli::FormatArgs;
use crate::error::Result;
use crate::mmap_view;
use crate::report::FormatReport;
use crate::scratch::ScratchDir;
use crate::throughput;
use crate::workload::{Kind, Workload};

/// Run the benchmark and print its report.
///
/// # Errors
/// Any write, read or verification failure; the scratch directory is removed either way.
pub fn run(args: &FormatArgs) -> Result<()> {
    let scratch = ScratchDir::new(args.dir.as_deref())?;
    let size = args.size_mib << 20;
    let chunk = args.chunk_mib << 20;
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let mut report = FormatReport::default();
    report.header.push(format!(
        "wshard-bench format: {} MiB payload per workload, chunk files of {} MiB, {} reps (median [min-max]), {cores} cores, scratch {}",
        args.size_mib,
        args.chunk_mib,
        args.reps,
        scratch.path().display()
    ));
    report.header.push(
        "MB/s = payload bytes (workload records: channels + 8 B timestamp per step) / wall time; \
         writes include sync_all of every file (plain writes the same raw block bytes); reads come from \
         the page cache, wshard reads decode + CRC-check every block, plain reads into a reused buffer"
            .to_owned(),
    );
    let total = Instant::now();
    for kind in [Kind::Cameras, Kind::Joints] {
        let t = Instant::now();
        let w = Workload::build(kind, kind.steps_for(size))?;
        let chunk_steps = kind.steps_for(chunk);
        let chunks = split_episode(&w.episode, chunk_steps)?;
        eprintln!(
            "{}: {} steps, {} payload bytes, {} chunks of {} steps, generated in {:.1} s",
            kind.name(),
            w.steps(),
            w.payload_bytes(),
            chunks.len(),
            chunk_steps,
            t.elapsed().as_secs_f64()
        );
        report.header.push(format!(
            "{}: {} timesteps, {} chunk files of <= {} steps",
            kind.name(),
            w.steps(),
            chunks.len(),
            chunk_steps
        ));
        report
            .throughput
            .extend(throughput::run(&scratch, &w, &chunks, args.reps)?);
        drop(chunks);
        if kind == Kind::Cameras {
            report.mmap = Some(mmap_view::run(&scratch, &w.episode)?);
        }
    }
    report.blocks = block_count::run(&scratch)?;
    eprintln!("total {:.1} s", total.elapsed().as_secs_f64());
    report.print();
    Ok(())
}
