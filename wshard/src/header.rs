//! The 64-byte container header (spec 2).

use crate::consts::{header_off as off, HEADER_LEN, INDEX_ENTRY_LEN_U16, MAGIC, VERSION};
use crate::error::{FormatError, Result};
use crate::le::{put_u16, put_u64, u16_at, u64_at};

/// Header length as a `usize` for buffers.
pub const HEADER_BYTES: usize = 64;

/// The decoded header. Field names follow the spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardHeader {
    pub version: u8,
    pub role: u8,
    pub flags: u16,
    pub alignment: u8,
    pub compression_default: u8,
    pub index_entry_size: u16,
    pub entry_count: u32,
    pub string_table_offset: u64,
    pub data_section_offset: u64,
    pub schema_offset: u64,
    pub total_file_size: u64,
    /// Bytes 48..64; zero on write, ignored on read.
    pub reserved: [u8; 16],
}

impl ShardHeader {
    /// Decode a header. Checks magic and version only: the layout checks that need the
    /// file length live in the reader.
    ///
    /// # Errors
    /// [`FormatError::BadMagic`] or [`FormatError::UnsupportedVersion`].
    pub fn decode(b: &[u8; HEADER_BYTES]) -> Result<Self> {
        let mut magic = [0u8; 4];
        magic.copy_from_slice(&b[off::MAGIC..off::MAGIC + 4]);
        if magic != MAGIC {
            return Err(FormatError::BadMagic { found: magic });
        }
        let version = b[off::VERSION];
        if version != VERSION {
            return Err(FormatError::UnsupportedVersion { found: version });
        }
        let mut reserved = [0u8; 16];
        reserved.copy_from_slice(&b[48..64]);
        Ok(Self {
            version,
            role: b[off::ROLE],
            flags: u16_at(b, off::FLAGS),
            alignment: b[off::ALIGNMENT],
            compression_default: b[off::COMPRESSION_DEFAULT],
            index_entry_size: u16_at(b, off::INDEX_ENTRY_SIZE),
            entry_count: crate::le::u32_at(b, off::ENTRY_COUNT),
            string_table_offset: u64_at(b, off::STRING_TABLE_OFFSET),
            data_section_offset: u64_at(b, off::DATA_SECTION_OFFSET),
            schema_offset: u64_at(b, off::SCHEMA_OFFSET),
            total_file_size: u64_at(b, off::TOTAL_FILE_SIZE),
            reserved,
        })
    }

    /// Encode to the 64 on-disk bytes.
    #[must_use]
    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[off::MAGIC..off::MAGIC + 4].copy_from_slice(&MAGIC);
        b[off::VERSION] = self.version;
        b[off::ROLE] = self.role;
        put_u16(&mut b, off::FLAGS, self.flags);
        b[off::ALIGNMENT] = self.alignment;
        b[off::COMPRESSION_DEFAULT] = self.compression_default;
        put_u16(&mut b, off::INDEX_ENTRY_SIZE, self.index_entry_size);
        crate::le::put_u32(&mut b, off::ENTRY_COUNT, self.entry_count);
        put_u64(&mut b, off::STRING_TABLE_OFFSET, self.string_table_offset);
        put_u64(&mut b, off::DATA_SECTION_OFFSET, self.data_section_offset);
        put_u64(&mut b, off::SCHEMA_OFFSET, self.schema_offset);
        put_u64(&mut b, off::TOTAL_FILE_SIZE, self.total_file_size);
        b[48..64].copy_from_slice(&self.reserved);
        b
    }

    /// A header with the version, entry size and string-table offset filled for `entry_count`.
    #[must_use]
    pub fn new(
        role: u8,
        flags: u16,
        alignment: u8,
        compression_default: u8,
        entry_count: u32,
    ) -> Self {
        Self {
            version: VERSION,
            role,
            flags,
            alignment,
            compression_default,
            index_entry_size: INDEX_ENTRY_LEN_U16,
            entry_count,
            string_table_offset: HEADER_LEN
                + u64::from(entry_count) * crate::consts::INDEX_ENTRY_LEN,
            data_section_offset: 0,
            schema_offset: 0,
            total_file_size: 0,
            reserved: [0; 16],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips() {
        let mut h = ShardHeader::new(5, 0xA2, 64, 1, 7);
        h.data_section_offset = 512;
        h.total_file_size = 1354;
        let b = h.encode();
        assert_eq!(&b[0..4], b"SHRD");
        assert_eq!(h.string_table_offset, 400);
        assert_eq!(ShardHeader::decode(&b).unwrap(), h);
    }

    #[test]
    fn header_rejects_bad_magic_and_version() {
        let mut b = ShardHeader::new(5, 0, 64, 0, 0).encode();
        b[4] = 3;
        assert!(matches!(
            ShardHeader::decode(&b),
            Err(FormatError::UnsupportedVersion { found: 3 })
        ));
        b[0] = b'X';
        assert!(matches!(
            ShardHeader::decode(&b),
            Err(FormatError::BadMagic { .. })
        ));
    }
}
