//! Preallocating a chunk `.partial` (`disk.preallocate`): its blocks are compressed before
//! the file is created, so its final length is known exactly and reserved at once. A full
//! disk then fails the chunk at its first step (`ENOSPC` from `fallocate`, reported like
//! any write error) instead of in the middle of it, and the file is laid out in one piece.
//! The reservation keeps the file's size (`FALLOC_FL_KEEP_SIZE`), so the finished file is
//! byte for byte what the writer wrote, and a torn one holds no zeros beyond what was written.

use std::path::Path;

use wshard::consts::{align_up, HEADER_LEN, INDEX_ENTRY_LEN};
use wshard::write::PreparedBlock;

use crate::error::StorageError;
use wshard_storage::fsio::DurableFile;

/// The length of the shard the reserve-write-finalize writer produces from `blocks` (in
/// order, with an exact reserve for their names) at `alignment`; `None` on overflow.
#[must_use]
pub(crate) fn shard_len(blocks: &[PreparedBlock<'_>], alignment: u8) -> Option<u64> {
    let names: u64 = blocks.iter().map(|b| b.name.len() as u64).sum();
    let tight = HEADER_LEN
        .checked_add((blocks.len() as u64).checked_mul(INDEX_ENTRY_LEN)?)?
        .checked_add(names)?;
    let mut pos = align_up(tight, alignment)?;
    for b in blocks {
        pos = align_up(pos, alignment)?.checked_add(b.stored.len() as u64)?;
    }
    Some(pos)
}

/// When `enabled`, reserve the exact length of the chunk about to be written to `file`.
///
/// # Errors
/// [`StorageError`] `preallocate chunk` naming `path` (e.g. `ENOSPC`).
pub(crate) fn reserve_chunk(
    file: &mut dyn DurableFile,
    path: &Path,
    blocks: &[PreparedBlock<'_>],
    alignment: u8,
    enabled: bool,
) -> Result<(), StorageError> {
    if !enabled {
        return Ok(());
    }
    let Some(len) = shard_len(blocks, alignment) else {
        return Ok(());
    };
    file.preallocate(len)
        .map_err(|e| StorageError::io("preallocate chunk", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::chunk_file::write_and_finalize_chunk;
    use crate::chunk::compress::prepare_blocks;
    use std::io::Write;
    use wshard::episode::{Channel, Episode, EpisodeWriteOptions, Lane, Timebase};
    use wshard_storage::fsio::sim::{FaultKind, OpKind, SimFs};
    use wshard_storage::fsio::{Fs, RealFs};
    use wshard_storage::layout::EpisodeLayout;

    fn episode(steps: usize) -> Episode {
        let mut ep = Episode::new("prealloc", "env", Timebase::ticks(10.0));
        let ramp: Vec<f32> = (0..steps * 12).map(|i| (i % 251) as f32).collect();
        ep.push_channel(
            Channel::from_f32("signal/ramp", Lane::Signal, vec![12], &ramp)
                .unwrap()
                .with_codec(wshard::codec::Codec::zstd()),
        );
        ep.set_reward((0..steps).map(|i| i as f32).collect());
        ep.set_done((0..steps).map(|i| i + 1 == steps).collect());
        ep
    }

    fn opts() -> EpisodeWriteOptions {
        EpisodeWriteOptions {
            default_codec: wshard::codec::Codec::zstd(),
            compression_default: Some(0),
            ..EpisodeWriteOptions::default()
        }
    }

    #[test]
    fn prealloc_shard_len_is_the_written_length() {
        for steps in [1, 7, 64, 1000] {
            let ep = episode(steps);
            let o = opts();
            let plan = ep.plan(&o);
            let blocks = prepare_blocks(
                &plan,
                &o.policy,
                2,
                &crate::chunk::columns::BlockCrcs::none(),
            )
            .unwrap();
            let want = shard_len(&blocks, o.shard_options().alignment).unwrap();
            let dir = tempfile::tempdir().unwrap();
            let layout = EpisodeLayout::new(dir.path(), "prealloc");
            RealFs.create_dir_all(&layout.dir).unwrap();
            for prealloc in [false, true] {
                let r =
                    write_and_finalize_chunk(&RealFs, &layout, &mut ep.clone(), &o, 2, prealloc)
                        .unwrap();
                let len = std::fs::metadata(layout.chunk(0)).unwrap().len();
                assert_eq!(len, want, "{steps} steps, preallocate {prealloc}");
                assert!(!r.sha256.is_empty());
                std::fs::remove_file(layout.chunk(0)).unwrap();
            }
        }
    }

    #[test]
    fn prealloc_reserves_the_exact_length_in_the_sim() {
        let fs = SimFs::new();
        let layout = EpisodeLayout::new(Path::new("/d"), "prealloc");
        fs.create_dir_all(&layout.dir).unwrap();
        let mut ep = episode(50);
        write_and_finalize_chunk(&fs, &layout, &mut ep, &opts(), 1, true).unwrap();
        let len = fs.read(&layout.chunk(0)).unwrap().len() as u64;
        assert_eq!(fs.preallocated(&layout.chunk(0)), len);
        assert_eq!(fs.attempts(OpKind::Preallocate, &layout.partial(0)), 1);
        let off = SimFs::new();
        off.create_dir_all(&layout.dir).unwrap();
        write_and_finalize_chunk(&off, &layout, &mut ep, &opts(), 1, false).unwrap();
        assert_eq!(off.attempts(OpKind::Preallocate, &layout.partial(0)), 0);
    }

    #[test]
    fn prealloc_enospc_fails_the_chunk_naming_the_file_before_any_write() {
        let fs = SimFs::new();
        let layout = EpisodeLayout::new(Path::new("/d"), "prealloc");
        fs.create_dir_all(&layout.dir).unwrap();
        fs.inject(OpKind::Preallocate, 1, FaultKind::Enospc);
        let e = write_and_finalize_chunk(&fs, &layout, &mut episode(10), &opts(), 1, true)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("preallocate chunk"), "{e}");
        assert!(e.contains(&layout.partial(0).display().to_string()), "{e}");
        assert!(e.contains("No space left on device"), "{e}");
        assert_eq!(fs.attempts(OpKind::Write, &layout.partial(0)), 0);
        assert!(!fs.exists(&layout.chunk(0)));
    }

    #[test]
    fn prealloc_real_fs_keeps_the_size() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let mut f = RealFs.create(&p).unwrap();
        f.preallocate(1 << 20).unwrap();
        f.write_all(b"abc").unwrap();
        f.sync_all().unwrap();
        drop(f);
        assert_eq!(std::fs::read(&p).unwrap(), b"abc");
    }
}
