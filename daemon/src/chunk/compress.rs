//! Compressing a chunk's blocks before its file is written: every planned block on up to
//! `queues.compression_workers` threads of one process-wide pool, in block order, with the
//! CRC32C of the channel blocks the writer thread already computed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use wshard::codec::CompressionPolicy;
use wshard::episode::PlannedBlock;
use wshard::write::{prepare_block_with_crc, PreparedBlock};

use super::columns::BlockCrcs;
use crate::error::StorageError;

/// The compression threads, shared by every episode and kept for the life of the process:
/// zstd contexts (thread-local, reused per level) and malloc arenas stay warm, instead of
/// being rebuilt by fresh threads for every chunk. Named `compress-N` (for per-thread CPU
/// accounting).
fn compression_pool(workers: usize) -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = workers.max(
            std::thread::available_parallelism()
                .map(std::num::NonZeroUsize::get)
                .unwrap_or(2),
        );
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("compress-{i}"))
            .build()
            .map_err(|e| tracing::warn!("no compression thread pool, compressing inline: {e}"))
            .ok()
    })
    .as_ref()
}

/// Compress every planned block on up to `workers` threads of the compression pool, keeping
/// the block order. Raw blocks stay borrowed from the plan. The CRC32C of a block in `known`
/// is taken from there instead of being computed again.
///
/// # Errors
/// The first compression error, naming the block.
pub(crate) fn prepare_blocks<'a>(
    plan: &'a [PlannedBlock<'a>],
    policy: &CompressionPolicy,
    workers: usize,
    known: &BlockCrcs,
) -> Result<Vec<PreparedBlock<'a>>, StorageError> {
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<wshard::Result<PreparedBlock<'a>>>>> =
        plan.iter().map(|_| Mutex::new(None)).collect();
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(p) = plan.get(i) else { break };
        let r = match known.stored_block(&p.name, p.data.len()) {
            // Copied as stored elsewhere: not compressed again.
            Some(b) => Ok(b.clone()),
            None => prepare_block_with_crc(&p.name, &p.data, p.opts, policy, known.get(&p.name)),
        };
        if let Ok(mut slot) = slots[i].lock() {
            *slot = Some(r);
        }
    };
    let tasks = workers.clamp(1, plan.len().max(1));
    match compression_pool(workers) {
        Some(pool) if tasks > 1 => pool.scope(|s| {
            for _ in 0..tasks {
                s.spawn(|_| work());
            }
        }),
        _ => work(),
    }
    slots
        .into_iter()
        .zip(plan)
        .map(|(slot, p)| {
            let context = || format!("compress block `{}`", p.name);
            match slot.into_inner().ok().flatten() {
                Some(Ok(b)) => Ok(b),
                Some(Err(e)) => Err(StorageError::format(context(), e)),
                None => Err(StorageError::format(
                    context(),
                    wshard::FormatError::WriterFailed,
                )),
            }
        })
        .collect()
}
