//! Reading blocks: positioned reads of only the blocks asked for, decompression, CRC checks.

use std::fs::File;
use std::path::Path;

use super::index::{read_region, ShardIndex};
use super::limits::ReadLimits;
use super::source::ReadAt;
use crate::codec::{decompress, BlockLocation, Codec, StoredCodec};
use crate::entry::IndexEntry;
use crate::error::{FormatError, Result};
use crate::hash::crc32c;
use crate::header::ShardHeader;
use crate::write::{Precompressed, PreparedBlock};

/// A shard opened for reading over any [`ReadAt`] source.
///
/// Opening reads the header, index and string table only; each block is read with one
/// positioned read when asked for.
#[derive(Debug)]
pub struct ShardReader<R> {
    src: R,
    index: ShardIndex,
    limits: ReadLimits,
}

/// What checking one block found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockCheck {
    pub entry: usize,
    pub name: String,
    pub codec: Option<StoredCodec>,
    pub disk_size: u64,
    pub orig_size: u64,
    pub stored_crc: u32,
    /// `None` when the block could not be decoded at all.
    pub computed_crc: Option<u32>,
    /// `None` when the block is good.
    pub error: Option<String>,
}

impl BlockCheck {
    /// True when the block decoded to `orig_size` bytes and its CRC (if checked) matched.
    #[must_use]
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }
}

impl ShardReader<File> {
    /// Open a file with the default (Go) limits.
    ///
    /// # Errors
    /// I/O errors carry the path; content errors are those of [`ShardIndex::parse`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with_limits(path, ReadLimits::default())
    }

    /// Open a file with explicit limits.
    ///
    /// # Errors
    /// As [`ShardReader::open`].
    pub fn open_with_limits(path: impl AsRef<Path>, limits: ReadLimits) -> Result<Self> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| FormatError::io_at("open", path, e))?;
        Self::new(file, limits)
    }
}

impl ShardReader<Vec<u8>> {
    /// Read a shard held in memory.
    ///
    /// # Errors
    /// As [`ShardIndex::parse`].
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self> {
        Self::new(bytes, ReadLimits::default())
    }
}

impl<R: ReadAt> ShardReader<R> {
    /// Parse the index of `src`.
    ///
    /// # Errors
    /// As [`ShardIndex::parse`].
    pub fn new(src: R, limits: ReadLimits) -> Result<Self> {
        let index = ShardIndex::parse(&src, &limits)?;
        Ok(Self { src, index, limits })
    }

    /// The validated index.
    #[must_use]
    pub fn index(&self) -> &ShardIndex {
        &self.index
    }

    /// The header.
    #[must_use]
    pub fn header(&self) -> &ShardHeader {
        self.index.header()
    }

    /// The source.
    #[must_use]
    pub fn source(&self) -> &R {
        &self.src
    }

    /// Check that the role is `expected`.
    ///
    /// # Errors
    /// [`FormatError::WrongRole`].
    pub fn expect_role(&self, expected: u8) -> Result<()> {
        let found = self.header().role;
        if found == expected {
            Ok(())
        } else {
            Err(FormatError::WrongRole { found, expected })
        }
    }

    /// True when a block of that name exists.
    #[must_use]
    pub fn contains(&self, name: &str) -> bool {
        self.index.find(name).is_some()
    }

    /// The entry of block `name`.
    ///
    /// # Errors
    /// [`FormatError::BlockNotFound`].
    pub fn entry(&self, name: &str) -> Result<(usize, &IndexEntry)> {
        let i = self
            .index
            .find(name)
            .ok_or_else(|| FormatError::BlockNotFound {
                name: name.to_owned(),
            })?;
        Ok((i, &self.index.entries()[i]))
    }

    /// The stored (possibly compressed) bytes of entry `i`, without any check.
    ///
    /// # Errors
    /// I/O and truncation errors.
    pub fn read_stored(&self, i: usize) -> Result<Vec<u8>> {
        let (name, e) = self.entry_at(i)?;
        read_region(
            &self.src,
            &format!("block `{name}`"),
            e.data_offset,
            e.disk_size,
            self.index.file_len(),
        )
    }

    /// Entry `i` as stored, ready for [`crate::write::ShardWriter::write_precompressed`]
    /// into another shard: its stored (possibly compressed) bytes, codec, original size,
    /// CRC32C and content type, carried over without decompressing or checking the bytes.
    ///
    /// # Errors
    /// [`FormatError::UnknownCodec`]; [`FormatError::BadEntry`] when the block is stored raw
    /// with `disk_size != orig_size`, or carries no CRC32C to carry over (its CRC is not
    /// checked: header flag 0x20 unset and a zero CRC); I/O and truncation errors.
    pub fn read_prepared(&self, i: usize) -> Result<PreparedBlock<'static>> {
        let (name, e) = self.entry_at(i)?;
        let entry = u32::try_from(i).unwrap_or(u32::MAX);
        let bad = |message: String| FormatError::BadEntry {
            entry,
            offset: crate::consts::HEADER_LEN + i as u64 * crate::consts::INDEX_ENTRY_LEN,
            message,
        };
        let stored_codec = self
            .index
            .stored_codec(i)
            .ok_or_else(|| FormatError::UnknownCodec {
                name: name.to_owned(),
                entry,
                flags: e.flags,
                default: self.header().compression_default,
            })?;
        let codec = match stored_codec {
            StoredCodec::Raw if e.disk_size != e.orig_size => {
                return Err(bad(format!(
                    "block `{name}` is stored raw but disk_size {} != orig_size {}",
                    e.disk_size, e.orig_size
                )));
            }
            StoredCodec::Raw => Codec::None,
            StoredCodec::Zstd => Codec::zstd(),
            StoredCodec::Lz4 => Codec::Lz4,
        };
        if !self.index.crc_checked(i) {
            return Err(bad(format!(
                "block `{name}` carries no CRC32C to carry over"
            )));
        }
        Ok(PreparedBlock {
            name: name.to_owned(),
            stored: std::borrow::Cow::Owned(self.read_stored(i)?),
            meta: Precompressed {
                codec,
                orig_size: e.orig_size,
                crc32c: e.checksum,
                content_type: e.content_type,
            },
        })
    }

    fn entry_at(&self, i: usize) -> Result<(&str, &IndexEntry)> {
        match (self.index.name(i), self.index.entries().get(i)) {
            (Some(n), Some(e)) => Ok((n, e)),
            _ => Err(FormatError::BlockNotFound {
                name: format!("#{i}"),
            }),
        }
    }

    /// The uncompressed bytes of entry `i`, CRC-checked as Go does.
    ///
    /// # Errors
    /// [`FormatError::UnknownCodec`], [`FormatError::Decompress`], [`FormatError::LimitExceeded`],
    /// [`FormatError::BlockCrc`], or I/O errors.
    pub fn read_entry(&self, i: usize) -> Result<Vec<u8>> {
        let (name, e) = self.entry_at(i)?;
        let codec = self
            .index
            .stored_codec(i)
            .ok_or_else(|| FormatError::UnknownCodec {
                name: name.to_owned(),
                entry: u32::try_from(i).unwrap_or(u32::MAX),
                flags: e.flags,
                default: self.header().compression_default,
            })?;
        if codec == StoredCodec::Raw && e.disk_size != e.orig_size {
            return Err(FormatError::BadEntry {
                entry: u32::try_from(i).unwrap_or(u32::MAX),
                offset: crate::consts::HEADER_LEN + i as u64 * crate::consts::INDEX_ENTRY_LEN,
                message: format!(
                    "block `{name}` is stored raw but disk_size {} != orig_size {}",
                    e.disk_size, e.orig_size
                ),
            });
        }
        let stored = self.read_stored(i)?;
        let data = if codec == StoredCodec::Raw {
            stored
        } else {
            decompress(
                codec,
                &stored,
                e.orig_size,
                self.limits.max_decompressed_block,
                BlockLocation {
                    name,
                    offset: e.data_offset,
                },
            )?
        };
        if self.index.crc_checked(i) {
            let computed = crc32c(&data);
            if computed != e.checksum {
                return Err(FormatError::BlockCrc {
                    name: name.to_owned(),
                    stored: e.checksum,
                    computed,
                });
            }
        }
        Ok(data)
    }

    /// The uncompressed, CRC-checked bytes of block `name`.
    ///
    /// # Errors
    /// [`FormatError::BlockNotFound`] and those of [`ShardReader::read_entry`].
    pub fn read_block(&self, name: &str) -> Result<Vec<u8>> {
        let (i, _) = self.entry(name)?;
        self.read_entry(i)
    }

    /// Decode every block and report each one; never stops at the first bad block.
    #[must_use]
    pub fn check_all(&self) -> Vec<BlockCheck> {
        (0..self.index.len()).map(|i| self.check_entry(i)).collect()
    }

    /// Decode index entry `i` and report it (as [`ShardReader::check_all`] does for each
    /// entry). An `i` past the index is reported as a bad block.
    #[must_use]
    pub fn check_entry(&self, i: usize) -> BlockCheck {
        let e = self.index.entries().get(i).copied().unwrap_or_default();
        let name = self.index.name(i).unwrap_or_default().to_owned();
        let codec = self.index.stored_codec(i);
        let (computed_crc, error) = match self.read_entry(i) {
            Ok(data) => (Some(crc32c(&data)), None),
            Err(FormatError::BlockCrc { computed, .. }) => (
                Some(computed),
                Some(format!(
                    "crc32c stored {:#010x}, computed {computed:#010x}",
                    e.checksum
                )),
            ),
            Err(err) => (None, Some(err.to_string())),
        };
        BlockCheck {
            entry: i,
            name,
            codec,
            disk_size: e.disk_size,
            orig_size: e.orig_size,
            stored_crc: e.checksum,
            computed_crc,
            error,
        }
    }
}
