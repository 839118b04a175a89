//! A sealed chunk's file, written and finalized in this order (each step completes before
//! the next):
//!
//! 1. compress its blocks on up to `workers` threads ([`super::compress`]);
//! 2. write `{id}_chunk_{k}.wshard.partial` through the reserve-write-finalize writer, and
//!    compute its SHA-256 from the same bytes as they are copied out ([`super::digest`]; a
//!    layout pass over a sink gives the header and offsets first) — [`write_partial_chunk`];
//! 3. fsync it, rename it to `{id}_chunk_{k}.wshard` and fsync the directory —
//!    [`finalize_chunk`], which the session's finisher thread runs while the next chunk is
//!    written.
//!
//! Listing the chunk in the manifest comes after, in [`super::manifest_commit`].

use std::borrow::Cow;
use std::path::PathBuf;

use wshard::episode::{Episode, EpisodeWriteOptions};
use wshard::manifest::ChunkRef;
use wshard::write::{PreparedBlock, Reserve, ShardWriter, WrittenBlock};

use super::columns::BlockCrcs;
use super::compress::prepare_blocks;
use super::{digest, prealloc};
use crate::error::StorageError;
use wshard_storage::fsio::{DurableFile, FailStop, Fs};
use wshard_storage::layout::EpisodeLayout;

/// A chunk written in full to its `.partial` and hashed, not yet durable: the first half of
/// [`write_and_finalize_chunk`]. [`finalize_chunk`] finishes it; dropping it leaves the
/// `.partial` for recovery.
pub(crate) struct PartialChunk {
    file: Box<dyn DurableFile>,
    partial: PathBuf,
    /// The manifest entry, `sha256` included.
    pub(crate) chunk: ChunkRef,
}

impl std::fmt::Debug for PartialChunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartialChunk")
            .field("partial", &self.partial)
            .field("chunk", &self.chunk)
            .finish_non_exhaustive()
    }
}

impl PartialChunk {
    /// The written file's length (0 when it cannot be told: the ring then counts it as
    /// nothing).
    pub(crate) fn file_len(&mut self) -> u64 {
        self.file.file_len().unwrap_or(0)
    }
}

/// A `Write + Seek` that keeps nothing: the writer runs over it once to learn the region
/// (header, index, names) and the block offsets before the real file is written.
#[derive(Debug, Default)]
struct Layout {
    pos: u64,
}

impl std::io::Write for Layout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pos += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl std::io::Seek for Layout {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        if let std::io::SeekFrom::Start(p) = to {
            self.pos = p;
            Ok(p)
        } else {
            Err(std::io::Error::other("layout pass: only absolute seeks"))
        }
    }
}

/// Write `blocks` with `opts` into `out`; returns the output, the written blocks and the
/// region, and the file length.
fn write_shard<W: std::io::Write + std::io::Seek>(
    out: W,
    opts: &EpisodeWriteOptions,
    blocks: &[PreparedBlock<'_>],
) -> wshard::Result<(W, Vec<WrittenBlock>, Vec<u8>, u64)> {
    let names = Reserve::names(blocks.iter().map(|b| b.name.clone()));
    let mut w = ShardWriter::new(out, opts.shard_options(), &names)?;
    for b in blocks {
        w.write_precompressed(&b.name, &b.stored, b.meta)?;
    }
    let len = w.position();
    let (out, written, region) = w.finish_with_region()?;
    Ok((out, written, region, len))
}

/// Where and how chunk files are written.
#[derive(Clone, Copy)]
pub(crate) struct ChunkTarget<'a> {
    pub(crate) fs: &'a dyn Fs,
    pub(crate) layout: &'a EpisodeLayout,
    pub(crate) opts: &'a EpisodeWriteOptions,
    /// Compression threads.
    pub(crate) workers: usize,
    /// Reserve each file's exact length before writing it.
    pub(crate) preallocate: bool,
}

/// Raw bytes at most copied so that a compressed chunk can give its channel buffers back
/// before it is written (the blocks stored uncompressed are copied; typically timestamps,
/// rewards and small channels).
pub(crate) const EARLY_RELEASE_MAX_COPY: usize = 1 << 20;

/// Compress chunk `ep` (its `chunk` info says which), write it to its `.partial` through
/// the reserve-write-finalize writer, and compute its SHA-256 from the bytes as they are
/// written. No fsync. With `preallocate`, the exact length is reserved first. `known` holds
/// CRC32C values of blocks computed as their bytes arrived.
///
/// `release` is called once with `ep` when its channel buffers are no longer needed: right
/// after compression when every block that stayed uncompressed is small (at most
/// [`EARLY_RELEASE_MAX_COPY`] bytes in all, copied), so the next chunk can fill them while
/// this one is written; otherwise, or on error, before returning.
///
/// # Errors
/// The failing step, naming the file.
pub(crate) fn write_partial_chunk(
    to: &ChunkTarget<'_>,
    ep: &mut Episode,
    known: &BlockCrcs,
    release: &mut dyn FnMut(&mut Episode),
) -> Result<PartialChunk, StorageError> {
    let mut released = false;
    let r = write_partial_chunk_inner(to, ep, known, &mut |ep: &mut Episode| {
        released = true;
        release(ep);
    });
    if !released {
        release(ep);
    }
    r
}

fn write_partial_chunk_inner(
    to: &ChunkTarget<'_>,
    ep: &mut Episode,
    known: &BlockCrcs,
    release: &mut dyn FnMut(&mut Episode),
) -> Result<PartialChunk, StorageError> {
    let ChunkTarget {
        fs,
        layout,
        opts,
        workers,
        preallocate,
    } = *to;
    let k = ep.chunk.map_or(0, |c| c.chunk_index);
    ep.validate()
        .map_err(|e| StorageError::format(format!("chunk {k}"), e))?;
    let start = ep.timestep_range.map_or(0, |r| r[0]);
    let range = [start, (start + ep.length).saturating_sub(1)];
    let length_t = ep.length;
    let plan = ep.plan(opts);
    let blocks = prepare_blocks(&plan, &opts.policy, workers, known)?;
    let borrowed: usize = blocks
        .iter()
        .filter(|b| matches!(b.stored, Cow::Borrowed(_)))
        .map(|b| b.stored.len())
        .sum();
    let (file, partial, sha256) = if borrowed <= EARLY_RELEASE_MAX_COPY {
        let owned: Vec<PreparedBlock<'static>> = blocks
            .into_iter()
            .map(|b| PreparedBlock {
                name: b.name,
                stored: Cow::Owned(b.stored.into_owned()),
                meta: b.meta,
            })
            .collect();
        drop(plan);
        release(ep);
        write_prepared(fs, layout, k, opts, &owned, preallocate)?
    } else {
        write_prepared(fs, layout, k, opts, &blocks, preallocate)?
    };
    Ok(PartialChunk {
        file,
        partial,
        chunk: chunk_ref(layout, k, sha256, range, length_t),
    })
}

/// The manifest entry of chunk `k` of `layout`.
fn chunk_ref(
    layout: &EpisodeLayout,
    k: u64,
    sha256: String,
    timestep_range: [u64; 2],
    length_t: u64,
) -> ChunkRef {
    ChunkRef {
        chunk_index: k,
        uri: layout
            .chunk(k)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned(),
        sha256,
        timestep_range,
        length_t,
        extra: serde_json::Map::new(),
    }
}

/// Write chunk `k` of `layout` from blocks already prepared, in file order (a chunk copied
/// without decoding: its meta blocks planned anew, its data blocks as stored elsewhere),
/// through the same path as [`write_and_finalize_chunk`] (`.partial`, SHA-256 as written,
/// fsync, rename, directory fsync). `timestep_range` and `length_t` describe it for the
/// manifest.
///
/// # Errors
/// The failing step, naming the file.
pub(crate) fn write_and_finalize_prepared_chunk(
    fs: &dyn Fs,
    layout: &EpisodeLayout,
    k: u64,
    timestep_range: [u64; 2],
    length_t: u64,
    opts: &EpisodeWriteOptions,
    blocks: &[PreparedBlock<'_>],
) -> Result<ChunkRef, StorageError> {
    let (file, partial, sha256) = write_prepared(fs, layout, k, opts, blocks, false)?;
    let chunk = chunk_ref(layout, k, sha256, timestep_range, length_t);
    finalize_chunk(
        fs,
        layout,
        PartialChunk {
            file,
            partial,
            chunk,
        },
    )
}

/// Lay out and write prepared blocks to chunk `k`'s `.partial`, hashing them as they are
/// copied out. Returns the open file, its path and the SHA-256.
fn write_prepared(
    fs: &dyn Fs,
    layout: &EpisodeLayout,
    k: u64,
    opts: &EpisodeWriteOptions,
    blocks: &[PreparedBlock<'_>],
    preallocate: bool,
) -> Result<(Box<dyn DurableFile>, PathBuf, String), StorageError> {
    // The layout pass: the file's region and block offsets, known before a byte is written.
    let (_, planned, planned_region, total_len) = write_shard(Layout::default(), opts, blocks)
        .map_err(|e| StorageError::format(format!("lay out chunk {k}"), e))?;
    let stored = digest::pair(&planned, blocks.iter().map(|b| &*b.stored))?;
    let image = digest::Image::new(&planned_region, stored, total_len)?;
    let partial = layout.partial(k);
    let file = fs
        .create_direct(&partial)
        .map_err(|e| StorageError::io("create chunk", &partial, e))?;
    // Dropping the file after a failure must not write its staged rest.
    let mut file = FailStop::wrap(file);
    let alignment = opts.shard_options().alignment;
    prealloc::reserve_chunk(&mut *file, &partial, blocks, alignment, preallocate)?;
    // The bytes the reserve-write-finalize writer produced in the layout pass, written
    // front to back (header and index first: the file is a `.partial` until it is synced
    // and renamed, so the order within it does not matter for crash safety) and hashed
    // piece by piece as they are copied out.
    let sha256 = image
        .write_hashed(&mut *file)
        .map_err(|e| StorageError::io("write chunk", &partial, e))?;
    Ok((file, partial, sha256))
}

/// Make a written chunk durable under its final name: fsync the `.partial`, rename it to
/// `{id}_chunk_{k}.wshard`, fsync the directory. Returns its manifest entry.
///
/// # Errors
/// The failing step, naming the file.
pub(crate) fn finalize_chunk(
    fs: &dyn Fs,
    layout: &EpisodeLayout,
    written: PartialChunk,
) -> Result<ChunkRef, StorageError> {
    let PartialChunk {
        mut file,
        partial,
        chunk,
    } = written;
    file.sync_all()
        .map_err(|e| StorageError::io("fsync chunk", &partial, e))?;
    drop(file);
    let done = layout.chunk(chunk.chunk_index);
    fs.rename(&partial, &done)
        .map_err(|e| StorageError::io("rename chunk", &partial, e))?;
    fs.sync_dir(&layout.dir)
        .map_err(|e| StorageError::io("fsync directory", &layout.dir, e))?;
    Ok(chunk)
}

/// Write chunk `ep`'s file and finalize it, and describe it for the manifest:
/// [`write_partial_chunk`], then [`finalize_chunk`].
///
/// # Errors
/// The failing step, naming the file.
pub(crate) fn write_and_finalize_chunk(
    fs: &dyn Fs,
    layout: &EpisodeLayout,
    ep: &mut Episode,
    opts: &EpisodeWriteOptions,
    workers: usize,
    preallocate: bool,
) -> Result<ChunkRef, StorageError> {
    write_and_finalize_chunk_known(
        fs,
        layout,
        ep,
        opts,
        workers,
        preallocate,
        &BlockCrcs::none(),
    )
}

/// [`write_and_finalize_chunk`] with blocks `known` already (their CRC, or their stored
/// bytes: a chunk copied block by block without compressing again).
///
/// # Errors
/// The failing step, naming the file.
pub(crate) fn write_and_finalize_chunk_known(
    fs: &dyn Fs,
    layout: &EpisodeLayout,
    ep: &mut Episode,
    opts: &EpisodeWriteOptions,
    workers: usize,
    preallocate: bool,
    known: &BlockCrcs,
) -> Result<ChunkRef, StorageError> {
    let to = ChunkTarget {
        fs,
        layout,
        opts,
        workers,
        preallocate,
    };
    let written = write_partial_chunk(&to, ep, known, &mut |_| {})?;
    finalize_chunk(fs, layout, written)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use wshard::codec::Codec;
    use wshard::episode::{Channel, Lane, Timebase};

    use super::*;
    use crate::chunk::digest::sha256_of;
    use wshard_storage::fsio::RealFs;

    fn episode(codec: Codec) -> Episode {
        let mut ep = Episode::new("early", "env", Timebase::ticks(10.0));
        // More raw bytes than `EARLY_RELEASE_MAX_COPY`; compresses well (long runs).
        let steps = 2 * EARLY_RELEASE_MAX_COPY / 4096;
        let data: Vec<u8> = (0..steps * 4096).map(|i| (i / 1000) as u8).collect();
        ep.push_channel(
            Channel::new(
                "cam",
                Lane::Signal,
                wshard::episode::DType::U8,
                vec![4096],
                data,
            )
            .with_codec(codec),
        );
        ep.set_reward(vec![0.5; steps]);
        ep.set_done((0..steps).map(|i| i + 1 == steps).collect());
        ep
    }

    /// A compressed chunk gives its channel buffers back before its file is created (so the
    /// next chunk fills them meanwhile); an uncompressed one only after it is written. The
    /// files are the same either way, and the buffers come back exactly once.
    #[test]
    fn compressed_chunk_releases_its_buffers_before_writing() {
        for (codec, early) in [
            (Codec::zstd(), true),
            (Codec::Lz4, true),
            (Codec::None, false),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let layout = EpisodeLayout::new(dir.path(), "early");
            RealFs.create_dir_all(&layout.dir).unwrap();
            let mut ep = episode(codec);
            let want = ep.channels[0].data.clone();
            let opts = EpisodeWriteOptions::default();
            let mut released = Vec::new();
            let to = ChunkTarget {
                fs: &RealFs,
                layout: &layout,
                opts: &opts,
                workers: 2,
                preallocate: false,
            };
            let written = write_partial_chunk(&to, &mut ep, &BlockCrcs::none(), &mut |ep| {
                released.push((
                    layout.partial(0).exists(),
                    std::mem::take(&mut ep.channels[0].data),
                ));
            })
            .unwrap();
            assert_eq!(released.len(), 1, "{codec:?}: released once");
            let (file_existed, buffer) = released.pop().unwrap();
            assert_eq!(file_existed, !early, "{codec:?}: released early: {early}");
            assert_eq!(
                buffer, want,
                "{codec:?}: the buffer handed back is the column"
            );
            let chunk = finalize_chunk(&RealFs, &layout, written).unwrap();
            let back = wshard::episode::Episode::read_file(layout.chunk(0)).unwrap();
            assert_eq!(back.channels[0].data, want, "{codec:?}");
            assert_eq!(chunk.sha256, sha256_of(&RealFs, &layout.chunk(0)).unwrap());
        }
    }

    /// A failing write still hands the buffers back (the writer waits for them).
    #[test]
    fn fault_failed_chunk_write_still_releases_its_buffers() {
        let dir = tempfile::tempdir().unwrap();
        // No episode directory: creating the `.partial` fails.
        let layout = EpisodeLayout::new(dir.path(), "missing");
        for codec in [Codec::zstd(), Codec::None] {
            let mut ep = episode(codec);
            let mut calls = 0;
            let opts = EpisodeWriteOptions::default();
            let to = ChunkTarget {
                fs: &RealFs,
                layout: &layout,
                opts: &opts,
                workers: 1,
                preallocate: false,
            };
            let e = write_partial_chunk(&to, &mut ep, &BlockCrcs::none(), &mut |_| calls += 1)
                .unwrap_err();
            assert!(e.to_string().contains("create chunk"), "{e}");
            assert_eq!(calls, 1, "{codec:?}");
        }
    }
}
