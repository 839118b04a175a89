//! The SHA-256 of a chunk file computed from the bytes still in memory, so that it can run
//! while the file is fsynced instead of reading the file back afterwards.
//!
//! A reserve-write-finalize file is `region || data section`: the region (header, index,
//! string table, zero padding up to `data_section_offset`) is written last at offset 0, and
//! the data section holds each block's stored bytes at its index entry's `data_offset`, with
//! zero padding between blocks for alignment. Hashing the region, then every block in offset
//! order with the zero gaps, gives exactly the file's digest. It is pure computation: no file
//! system call, so the order of the durability steps stays what it was.

use sha2::{Digest, Sha256};
use wshard::write::WrittenBlock;

use crate::error::StorageError;

const ZEROS: [u8; 4096] = [0; 4096];

/// One block as written: its stored (possibly compressed) bytes and where they went.
#[derive(Clone, Copy, Debug)]
pub struct StoredAt<'a> {
    pub offset: u64,
    pub stored: &'a [u8],
}

fn feed_zeros(h: &mut Sha256, mut n: u64) {
    while n > 0 {
        let k = n.min(ZEROS.len() as u64);
        // `k` is at most 4096.
        h.update(&ZEROS[..usize::try_from(k).unwrap_or(ZEROS.len())]);
        n -= k;
    }
}

/// Lowercase hex of a digest.
#[must_use]
pub fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Pair each written block (from the writer's index) with its stored bytes. `stored` is in
/// the order the blocks were written.
///
/// # Errors
/// [`StorageError`] when the two lists disagree in length or size (a bug, never input).
pub fn pair<'a>(
    written: &[WrittenBlock],
    stored: impl ExactSizeIterator<Item = &'a [u8]>,
) -> Result<Vec<StoredAt<'a>>, StorageError> {
    if written.len() != stored.len() {
        return Err(StorageError::Internal(format!(
            "chunk digest: {} blocks written, {} held",
            written.len(),
            stored.len()
        )));
    }
    written
        .iter()
        .zip(stored)
        .map(|(w, s)| {
            if w.entry.disk_size == s.len() as u64 {
                Ok(StoredAt {
                    offset: w.entry.data_offset,
                    stored: s,
                })
            } else {
                Err(StorageError::Internal(format!(
                    "chunk digest: block `{}` is {} bytes on disk, {} held",
                    w.name,
                    w.entry.disk_size,
                    s.len()
                )))
            }
        })
        .collect()
}

/// SHA-256 (lowercase hex) of the file made of `region` followed by `blocks` at their
/// offsets, zero-filled between them, `total_len` bytes long.
///
/// # Errors
/// [`StorageError::Internal`] when the blocks overlap the region or each other, or run past
/// `total_len` (the writer never produces such a layout).
pub fn file_sha256(
    region: &[u8],
    blocks: &[StoredAt<'_>],
    total_len: u64,
) -> Result<String, StorageError> {
    let mut order: Vec<&StoredAt<'_>> = blocks.iter().collect();
    order.sort_by_key(|b| b.offset);
    let mut h = Sha256::new();
    h.update(region);
    let mut pos = region.len() as u64;
    for b in order {
        if b.offset < pos {
            return Err(StorageError::Internal(format!(
                "chunk digest: block at offset {} overlaps the bytes before it (end {pos})",
                b.offset
            )));
        }
        feed_zeros(&mut h, b.offset - pos);
        h.update(b.stored);
        pos = b.offset + b.stored.len() as u64;
    }
    if pos > total_len {
        return Err(StorageError::Internal(format!(
            "chunk digest: blocks end at {pos}, past the file length {total_len}"
        )));
    }
    feed_zeros(&mut h, total_len - pos);
    Ok(hex(&h.finalize()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::Cursor;

    use wshard::codec::Codec;
    use wshard::write::{BlockOptions, Reserve, ShardOptions, ShardWriter};

    use super::*;

    /// The digest from memory equals the digest of the file's bytes, for every alignment,
    /// raw and compressed blocks, and odd block sizes.
    #[test]
    fn digest_from_memory_equals_file_digest() {
        for alignment in [0u8, 16, 32, 64] {
            let blocks: Vec<(String, Vec<u8>, Codec)> = (0..7u8)
                .map(|i| {
                    let len = usize::from(i) * 997 + 3;
                    let data = (0..len).map(|j| (j % 13) as u8 ^ i).collect();
                    let codec = if i % 2 == 0 {
                        Codec::None
                    } else {
                        Codec::zstd()
                    };
                    (format!("signal/b{i}"), data, codec)
                })
                .collect();
            let opts = ShardOptions {
                alignment,
                ..ShardOptions::wshard()
            };
            let names = Reserve::names(blocks.iter().map(|b| b.0.clone()));
            let mut w = ShardWriter::new(Cursor::new(Vec::new()), opts, &names).unwrap();
            let mut stored = Vec::new();
            for (name, data, codec) in &blocks {
                let written = w
                    .write_block(name, data, BlockOptions::codec(*codec))
                    .unwrap();
                let e = written.entry;
                stored.push((e.data_offset, e.disk_size));
            }
            let total = w.position();
            let (out, written, region) = w.finish_with_region().unwrap();
            let file = out.into_inner();
            let held: Vec<&[u8]> = stored
                .iter()
                .map(|&(off, len)| &file[off as usize..(off + len) as usize])
                .collect();
            let pairs = pair(&written, held.into_iter()).unwrap();
            let from_memory = file_sha256(&region, &pairs, total).unwrap();
            let from_file = hex(&Sha256::digest(&file));
            assert_eq!(from_memory, from_file, "alignment {alignment}");
            assert_eq!(file.len() as u64, total);
        }
    }

    #[test]
    fn digest_refuses_inconsistent_layouts() {
        let data = [1u8; 10];
        let overlapping = [
            StoredAt {
                offset: 4,
                stored: &data,
            },
            StoredAt {
                offset: 8,
                stored: &data,
            },
        ];
        let e = file_sha256(&[0; 4], &overlapping, 100).unwrap_err();
        assert!(e.to_string().contains("overlaps"), "{e}");
        let past = [StoredAt {
            offset: 4,
            stored: &data,
        }];
        let e = file_sha256(&[0; 4], &past, 10).unwrap_err();
        assert!(e.to_string().contains("past the file length"), "{e}");
    }
}
