//! Publishing a finished chunk, in this order (each step completes before the next):
//!
//! 1. compress its blocks on up to `workers` threads;
//! 2. write `{id}_chunk_{k}.wshard.partial` through the reserve-write-finalize writer;
//! 3. fsync it, and meanwhile compute its SHA-256 from the blocks still in memory
//!    ([`super::digest`]);
//! 4. rename it to `{id}_chunk_{k}.wshard` and fsync the directory;
//!
//! and committing the manifest (temp file, fsync, rename, fsync directory).

use std::io::{BufWriter, Read};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use sha2::{Digest, Sha256};
use wshard::codec::CompressionPolicy;
use wshard::episode::{Episode, EpisodeWriteOptions, PlannedBlock};
use wshard::manifest::{ChunkRef, Manifest};
use wshard::write::{prepare_block, PreparedBlock, Reserve, ShardWriter};

use super::{digest, prealloc};
use crate::episode::EpisodeLayout;
use crate::error::StorageError;
use crate::fsio::{replace_atomically, FailStop, Fs};

const WRITE_BUFFER: usize = 1 << 20;

/// Compress every planned block on up to `workers` threads, keeping the block order. Raw
/// blocks stay borrowed from the plan.
///
/// # Errors
/// The first compression error, naming the block.
pub fn prepare_blocks<'a>(
    plan: &'a [PlannedBlock<'a>],
    policy: &CompressionPolicy,
    workers: usize,
) -> Result<Vec<PreparedBlock<'a>>, StorageError> {
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<wshard::Result<PreparedBlock<'a>>>>> =
        plan.iter().map(|_| Mutex::new(None)).collect();
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(p) = plan.get(i) else { break };
        let r = prepare_block(&p.name, &p.data, p.opts, policy);
        if let Ok(mut slot) = slots[i].lock() {
            *slot = Some(r);
        }
    };
    let threads = workers.clamp(1, plan.len().max(1));
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(work);
        }
        work();
    });
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

/// SHA-256 of a file, streamed.
///
/// # Errors
/// Read errors.
pub fn sha256_of(fs: &dyn Fs, path: &Path) -> Result<String, StorageError> {
    let mut f = fs
        .open_read(path)
        .map_err(|e| StorageError::io("open for hashing", path, e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; WRITE_BUFFER];
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| StorageError::io("read for hashing", path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Publish chunk `ep` (its `chunk` info says which) durably and describe it for the manifest.
/// With `preallocate`, the `.partial`'s exact length is reserved before it is written.
///
/// # Errors
/// The failing step, naming the file.
pub fn publish_chunk(
    fs: &dyn Fs,
    layout: &EpisodeLayout,
    ep: &Episode,
    opts: &EpisodeWriteOptions,
    workers: usize,
    preallocate: bool,
) -> Result<ChunkRef, StorageError> {
    let k = ep.chunk.map_or(0, |c| c.chunk_index);
    ep.validate()
        .map_err(|e| StorageError::format(format!("chunk {k}"), e))?;
    let plan = ep.plan(opts);
    let blocks = prepare_blocks(&plan, &opts.policy, workers)?;
    let partial = layout.partial(k);
    let mut file = fs
        .create(&partial)
        .map_err(|e| StorageError::io("create chunk", &partial, e))?;
    let alignment = opts.shard_options().alignment;
    prealloc::reserve_chunk(&mut *file, &partial, &blocks, alignment, preallocate)?;
    // Dropping the writer after a failure must not write its buffered rest.
    let file = FailStop::wrap(file);
    let names = Reserve::names(blocks.iter().map(|b| b.name.clone()));
    let ctx = |e| StorageError::format(format!("write {}", partial.display()), e);
    let mut w = ShardWriter::new(
        BufWriter::with_capacity(WRITE_BUFFER, file),
        opts.shard_options(),
        &names,
    )
    .map_err(ctx)?;
    for b in &blocks {
        w.write_precompressed(&b.name, &b.stored, b.meta)
            .map_err(ctx)?;
    }
    let total_len = w.position();
    let (buf, written, region) = w.finish_with_region().map_err(ctx)?;
    let mut file = buf
        .into_inner()
        .map_err(|e| StorageError::io("write chunk", &partial, e.into_error()))?;
    // The digest is computed from the blocks still in memory while the fsync runs (no file
    // system call: the order of the durability steps is unchanged).
    let stored = digest::pair(&written, blocks.iter().map(|b| &*b.stored))?;
    let (sha256, synced) = std::thread::scope(|s| {
        let hashing = s.spawn(|| digest::file_sha256(&region, &stored, total_len));
        let synced = file.sync_all();
        let sha = hashing.join().unwrap_or_else(|_| {
            Err(StorageError::Internal(
                "chunk digest thread panicked".into(),
            ))
        });
        (sha, synced)
    });
    synced.map_err(|e| StorageError::io("fsync chunk", &partial, e))?;
    let sha256 = sha256?;
    drop(file);
    drop(stored);
    drop(blocks);
    drop(plan);
    let done = layout.chunk(k);
    fs.rename(&partial, &done)
        .map_err(|e| StorageError::io("rename chunk", &partial, e))?;
    fs.sync_dir(&layout.dir)
        .map_err(|e| StorageError::io("fsync directory", &layout.dir, e))?;
    let start = ep.timestep_range.map_or(0, |r| r[0]);
    Ok(ChunkRef {
        chunk_index: k,
        uri: done
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned(),
        sha256,
        timestep_range: [start, (start + ep.length).saturating_sub(1)],
        length_t: ep.length,
        extra: serde_json::Map::new(),
    })
}

/// Replace the episode's manifest atomically and durably.
///
/// # Errors
/// The failing step, naming the file.
pub fn commit_manifest(
    fs: &dyn Fs,
    layout: &EpisodeLayout,
    manifest: &Manifest,
) -> Result<(), StorageError> {
    let path = layout.manifest();
    let bytes = manifest
        .to_bytes()
        .map_err(|e| StorageError::format("encode manifest", e))?;
    replace_atomically(fs, &path, &bytes).map_err(|(op, e)| StorageError::io(op, &path, e))
}
