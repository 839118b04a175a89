//! The 48-byte index entry (spec 3) and content types (spec 3.2).

use crate::consts::{entry_flags, entry_off as off};
use crate::le::{put_u16, put_u32, put_u64, u16_at, u32_at, u64_at};

/// Entry length as a `usize` for buffers.
pub const ENTRY_BYTES: usize = 48;

/// Content type codes stored in entry bytes 44-45 (`shard_format.go:124-146`).
pub mod content_type {
    pub const UNKNOWN: u16 = 0;
    pub const TENSOR: u16 = 1;
    pub const JSON: u16 = 2;
    pub const COWRIE: u16 = 3;
    pub const GLYPH: u16 = 4;
    pub const TEXT: u16 = 5;
    pub const IMAGE: u16 = 6;
    pub const AUDIO: u16 = 7;
    pub const VIDEO: u16 = 8;
    pub const PROTOBUF: u16 = 9;
    pub const BLOB: u16 = 10;
    pub const QMLN: u16 = 11;
    pub const TENSOR_V3: u16 = 12;
    pub const ANCHOR_SHARED: u16 = 13;
    pub const DELTA_EXPERT: u16 = 14;
    pub const CODEBOOK_SHARED: u16 = 15;
    pub const EXPERT_INDICES: u16 = 16;
    pub const COLUMN: u16 = 17;
    /// Codes from here up are user-defined.
    pub const USER_BASE: u16 = 0x8000;

    /// A short name for display.
    #[must_use]
    pub fn name(code: u16) -> &'static str {
        match code {
            UNKNOWN => "-",
            TENSOR => "tensor",
            JSON => "json",
            COWRIE => "cowrie",
            GLYPH => "glyph",
            TEXT => "text",
            IMAGE => "image",
            AUDIO => "audio",
            VIDEO => "video",
            PROTOBUF => "protobuf",
            BLOB => "blob",
            QMLN => "qmln",
            TENSOR_V3 => "tensor-v3",
            ANCHOR_SHARED => "anchor-shared",
            DELTA_EXPERT => "delta-expert",
            CODEBOOK_SHARED => "codebook-shared",
            EXPERT_INDICES => "expert-indices",
            COLUMN => "column",
            c if c >= USER_BASE => "user",
            _ => "reserved",
        }
    }
}

/// One decoded index entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct IndexEntry {
    pub name_hash: u64,
    pub name_offset: u32,
    pub name_len: u16,
    pub flags: u16,
    pub data_offset: u64,
    pub disk_size: u64,
    pub orig_size: u64,
    pub checksum: u32,
    pub content_type: u16,
    pub tag_bits: u16,
}

impl IndexEntry {
    /// Decode one entry from its 48 bytes.
    #[must_use]
    pub fn decode(b: &[u8; ENTRY_BYTES]) -> Self {
        Self {
            name_hash: u64_at(b, off::NAME_HASH),
            name_offset: u32_at(b, off::NAME_OFFSET),
            name_len: u16_at(b, off::NAME_LEN),
            flags: u16_at(b, off::FLAGS),
            data_offset: u64_at(b, off::DATA_OFFSET),
            disk_size: u64_at(b, off::DISK_SIZE),
            orig_size: u64_at(b, off::ORIG_SIZE),
            checksum: u32_at(b, off::CHECKSUM),
            content_type: u16_at(b, off::CONTENT_TYPE),
            tag_bits: u16_at(b, off::TAG_BITS),
        }
    }

    /// Encode to the 48 on-disk bytes.
    #[must_use]
    pub fn encode(&self) -> [u8; ENTRY_BYTES] {
        let mut b = [0u8; ENTRY_BYTES];
        put_u64(&mut b, off::NAME_HASH, self.name_hash);
        put_u32(&mut b, off::NAME_OFFSET, self.name_offset);
        put_u16(&mut b, off::NAME_LEN, self.name_len);
        put_u16(&mut b, off::FLAGS, self.flags);
        put_u64(&mut b, off::DATA_OFFSET, self.data_offset);
        put_u64(&mut b, off::DISK_SIZE, self.disk_size);
        put_u64(&mut b, off::ORIG_SIZE, self.orig_size);
        put_u32(&mut b, off::CHECKSUM, self.checksum);
        put_u16(&mut b, off::CONTENT_TYPE, self.content_type);
        put_u16(&mut b, off::TAG_BITS, self.tag_bits);
        b
    }

    /// True when the compressed bit is set.
    #[must_use]
    pub fn is_compressed(&self) -> bool {
        self.flags & entry_flags::COMPRESSED != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_round_trips() {
        let e = IndexEntry {
            name_hash: 0x86f8_c841_3116_a0ae,
            name_offset: 48,
            name_len: 10,
            flags: 3,
            data_offset: 832,
            disk_size: 26,
            orig_size: 3200,
            checksum: 0x4c54_7284,
            content_type: content_type::JSON,
            tag_bits: 0,
        };
        let b = e.encode();
        assert_eq!(IndexEntry::decode(&b), e);
        assert_eq!(b[44], 2);
        assert!(e.is_compressed());
    }
}
