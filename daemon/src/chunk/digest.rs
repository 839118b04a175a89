//! The SHA-256 of a chunk file computed from the bytes still in memory, so that it can run
//! while the file is fsynced instead of reading the file back afterwards.
//!
//! A reserve-write-finalize file is `region || data section`: the region (header, index,
//! string table, zero padding up to `data_section_offset`) is written last at offset 0, and
//! the data section holds each block's stored bytes at its index entry's `data_offset`, with
//! zero padding between blocks for alignment. Hashing the region, then every block in offset
//! order with the zero gaps, gives exactly the file's digest. It is pure computation: no file
//! system call, so the order of the durability steps stays what it was. The same [`Image`]
//! is what the chunk writer writes, sequentially.
//!
//! Recovery, which has no bytes in memory, hashes a file on disk instead: [`sha256_of`].

use std::path::Path;

use sha2::{Digest, Sha256};
use wshard::digest::hex;
use wshard::write::WrittenBlock;

use crate::error::StorageError;
use wshard_storage::fsio::Fs;

const ZEROS: [u8; 4096] = [0; 4096];

/// Bytes written, then hashed while still in cache, at a time (well inside a core's L2).
pub(crate) const HASH_PIECE: usize = 256 << 10;

/// One block as written: its stored (possibly compressed) bytes and where they went.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StoredAt<'a> {
    pub(crate) offset: u64,
    pub(crate) stored: &'a [u8],
}

/// Pair each written block (from the writer's index) with its stored bytes. `stored` is in
/// the order the blocks were written.
///
/// # Errors
/// [`StorageError`] when the two lists disagree in length or size (a bug, never input).
pub(crate) fn pair<'a>(
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

/// The bytes of a chunk file, from memory: `region` at offset 0, then every block at its
/// offset, zero-filled between them, `total_len` bytes in all.
#[derive(Debug)]
pub(crate) struct Image<'a> {
    region: &'a [u8],
    /// Sorted by offset, checked not to overlap.
    blocks: Vec<StoredAt<'a>>,
    total_len: u64,
}

impl<'a> Image<'a> {
    /// Check the layout.
    ///
    /// # Errors
    /// [`StorageError::Internal`] when the blocks overlap the region or each other, or run
    /// past `total_len` (the writer never produces such a layout).
    pub(crate) fn new(
        region: &'a [u8],
        mut blocks: Vec<StoredAt<'a>>,
        total_len: u64,
    ) -> Result<Self, StorageError> {
        blocks.sort_by_key(|b| b.offset);
        let mut pos = region.len() as u64;
        for b in &blocks {
            if b.offset < pos {
                return Err(StorageError::Internal(format!(
                    "chunk image: block at offset {} overlaps the bytes before it (end {pos})",
                    b.offset
                )));
            }
            pos = b.offset + b.stored.len() as u64;
        }
        if pos > total_len {
            return Err(StorageError::Internal(format!(
                "chunk image: blocks end at {pos}, past the file length {total_len}"
            )));
        }
        Ok(Self {
            region,
            blocks,
            total_len,
        })
    }

    /// Feed the file's bytes, in order, to `f`.
    ///
    /// # Errors
    /// The first error of `f`.
    pub(crate) fn for_each<E>(&self, mut f: impl FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
        f(self.region)?;
        let mut pos = self.region.len() as u64;
        for b in &self.blocks {
            feed_zeros(&mut f, b.offset - pos)?;
            f(b.stored)?;
            pos = b.offset + b.stored.len() as u64;
        }
        feed_zeros(&mut f, self.total_len - pos)
    }

    /// SHA-256 of the file, lowercase hex (the tests' reference for [`Image::write_hashed`]).
    #[cfg(test)]
    #[must_use]
    pub(crate) fn sha256(&self) -> String {
        let mut h = Sha256::new();
        let fed: Result<(), std::convert::Infallible> = self.for_each(|b| {
            h.update(b);
            Ok(())
        });
        let _ = fed;
        hex(&h.finalize())
    }

    /// Write the file's bytes to `out`, sequentially, and return their SHA-256 (lowercase
    /// hex). Each piece of at most [`HASH_PIECE`] bytes is hashed right after it was copied
    /// out, while it is still in this core's cache: hashing the same bytes from main memory
    /// on another thread costs about half as much again (the hash, at ~1.7 GB/s from cache,
    /// is the largest CPU cost of an uncompressed chunk).
    ///
    /// # Errors
    /// The first write error.
    pub(crate) fn write_hashed(&self, out: &mut dyn std::io::Write) -> std::io::Result<String> {
        let mut h = Sha256::new();
        self.for_each(|b| -> std::io::Result<()> {
            for piece in b.chunks(HASH_PIECE) {
                out.write_all(piece)?;
                h.update(piece);
            }
            Ok(())
        })?;
        Ok(hex(&h.finalize()))
    }

    /// Write the file's bytes to `out`, sequentially (the tests' reference).
    #[cfg(test)]
    ///
    /// # Errors
    /// The first write error.
    pub(crate) fn write_to(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        self.for_each(|b| out.write_all(b))
    }
}

fn feed_zeros<E>(f: &mut impl FnMut(&[u8]) -> Result<(), E>, mut n: u64) -> Result<(), E> {
    while n > 0 {
        let k = n.min(ZEROS.len() as u64);
        // `k` is at most 4096.
        f(&ZEROS[..usize::try_from(k).unwrap_or(ZEROS.len())])?;
        n -= k;
    }
    Ok(())
}

/// SHA-256 of a file, streamed ([`wshard::digest::sha256_reader`]).
///
/// # Errors
/// Read errors.
pub(crate) fn sha256_of(fs: &dyn Fs, path: &Path) -> Result<String, StorageError> {
    let mut f = fs
        .open_read(path)
        .map_err(|e| StorageError::io("open for hashing", path, e))?;
    wshard::digest::sha256_reader(&mut f)
        .map(|(sha256, _)| sha256)
        .map_err(|e| StorageError::io("read for hashing", path, e))
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
    fn digest_and_image_from_memory_equal_the_file() {
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
            let mut rewritten = Vec::new();
            Image::new(&region, pairs.clone(), total)
                .unwrap()
                .write_to(&mut rewritten)
                .unwrap();
            assert_eq!(
                rewritten, file,
                "alignment {alignment}: the image is the file"
            );
            let from_memory = Image::new(&region, pairs.clone(), total).unwrap().sha256();
            let from_file = hex(&Sha256::digest(&file));
            assert_eq!(from_memory, from_file, "alignment {alignment}");
            let mut again = Vec::new();
            let hashed = Image::new(&region, pairs, total)
                .unwrap()
                .write_hashed(&mut again)
                .unwrap();
            assert_eq!(again, file, "alignment {alignment}: written while hashing");
            assert_eq!(
                hashed, from_file,
                "alignment {alignment}: hashed while writing"
            );
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
        let e = Image::new(&[0; 4], overlapping.to_vec(), 100).unwrap_err();
        assert!(e.to_string().contains("overlaps"), "{e}");
        let past = [StoredAt {
            offset: 4,
            stored: &data,
        }];
        let e = Image::new(&[0; 4], past.to_vec(), 10).unwrap_err();
        assert!(e.to_string().contains("past the file length"), "{e}");
    }
}
