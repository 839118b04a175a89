//! Zero-copy typed views of uncompressed blocks over a memory map.

use std::fs::File;
use std::path::Path;

use bytemuck::Pod;
use memmap2::Mmap;

use super::limits::ReadLimits;
use super::reader::ShardReader;
use crate::codec::StoredCodec;
use crate::error::{FormatError, Result};
use crate::hash::crc32c;

/// A shard mapped into memory. Uncompressed blocks can be viewed in place as typed slices.
///
/// The file must not be modified while it is mapped (the recorder only maps finalized,
/// renamed files, which it never writes again).
#[derive(Debug)]
pub struct MappedShard {
    reader: ShardReader<Mmap>,
}

impl MappedShard {
    /// Map `path` read-only and parse its index.
    ///
    /// # Errors
    /// I/O errors with the path, then those of [`crate::read::ShardIndex::parse`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| FormatError::io_at("open", path, e))?;
        #[allow(unsafe_code)]
        // SAFETY: the map is read-only and private to this value. The caller contract above
        // (no concurrent modification of finalized files) is what memmap2 requires; a file
        // truncated underneath would raise SIGBUS, which is why the recorder never maps
        // `.partial` files.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| FormatError::io_at("mmap", path, e))?;
        Ok(Self {
            reader: ShardReader::new(map, ReadLimits::default())?,
        })
    }

    /// The reader over the map (for compressed blocks and metadata).
    #[must_use]
    pub fn reader(&self) -> &ShardReader<Mmap> {
        &self.reader
    }

    /// The stored bytes of an uncompressed block, in place, without a CRC check.
    ///
    /// # Errors
    /// [`FormatError::BlockNotFound`], or [`FormatError::View`] when the block is compressed.
    pub fn bytes(&self, name: &str) -> Result<&[u8]> {
        let (i, e) = self.reader.entry(name)?;
        if self.reader.index().stored_codec(i) != Some(StoredCodec::Raw)
            || e.disk_size != e.orig_size
        {
            return Err(FormatError::View {
                name: name.to_owned(),
                type_name: "bytes",
                message: format!(
                    "block is stored compressed (entry flags {:#06x}); read it with read_block",
                    e.flags
                ),
            });
        }
        // The index parser checked data_offset + disk_size <= file length.
        let start = usize::try_from(e.data_offset).map_err(|_| self.too_big(name))?;
        let end = usize::try_from(e.data_offset + e.disk_size).map_err(|_| self.too_big(name))?;
        self.reader
            .source()
            .get(start..end)
            .ok_or_else(|| self.too_big(name))
    }

    fn too_big(&self, name: &str) -> FormatError {
        FormatError::View {
            name: name.to_owned(),
            type_name: "bytes",
            message: "block lies outside the mapped file".into(),
        }
    }

    /// View an uncompressed block as `&[T]` without copying. Checks that the block's address is
    /// aligned for `T` and its length a multiple of `size_of::<T>()`. No CRC check: use
    /// [`MappedShard::view_verified`] for that.
    ///
    /// Values are little-endian on disk; this view is only offered on little-endian targets.
    ///
    /// # Errors
    /// [`FormatError::View`] naming the block, the type and the misalignment or length.
    pub fn view<T: Pod>(&self, name: &str) -> Result<&[T]> {
        let bytes = self.bytes(name)?;
        if cfg!(target_endian = "big") {
            return Err(FormatError::View {
                name: name.to_owned(),
                type_name: std::any::type_name::<T>(),
                message: "typed views need a little-endian host".into(),
            });
        }
        bytemuck::try_cast_slice(bytes).map_err(|err| FormatError::View {
            name: name.to_owned(),
            type_name: std::any::type_name::<T>(),
            message: format!(
                "{err:?}: {} bytes at address alignment {}, element size {} alignment {}",
                bytes.len(),
                1usize << (bytes.as_ptr() as usize).trailing_zeros().min(12),
                std::mem::size_of::<T>(),
                std::mem::align_of::<T>()
            ),
        })
    }

    /// As [`MappedShard::view`], after checking the block's CRC32C.
    ///
    /// # Errors
    /// Those of [`MappedShard::view`] and [`FormatError::BlockCrc`].
    pub fn view_verified<T: Pod>(&self, name: &str) -> Result<&[T]> {
        let bytes = self.bytes(name)?;
        let (i, e) = self.reader.entry(name)?;
        if self.reader.index().crc_checked(i) {
            let computed = crc32c(bytes);
            if computed != e.checksum {
                return Err(FormatError::BlockCrc {
                    name: name.to_owned(),
                    stored: e.checksum,
                    computed,
                });
            }
        }
        self.view(name)
    }
}
