//! Byte-level constants of the Shard v2 container (spec sections 2, 3, 7.1, 8.5).

/// File magic, ASCII `SHRD`.
pub const MAGIC: [u8; 4] = *b"SHRD";
/// The only container version both reference readers accept.
pub const VERSION: u8 = 2;
/// Length of the fixed header at offset 0.
pub const HEADER_LEN: u64 = 64;
/// Length of one index entry; the index always starts at [`HEADER_LEN`].
pub const INDEX_ENTRY_LEN: u64 = 48;
/// The `index_entry_size` header value (same number, header field width).
pub const INDEX_ENTRY_LEN_U16: u16 = 48;

/// Header flag bits (spec 2.1).
pub mod header_flags {
    /// Defined by the reference, never set or read.
    pub const COMPRESSED: u16 = 0x0001;
    /// Set by Go writers; never read.
    pub const LITTLE_ENDIAN: u16 = 0x0002;
    /// Defined, never set or read.
    pub const BIG_ENDIAN: u16 = 0x0004;
    /// A schema section is present.
    pub const HAS_SCHEMA: u16 = 0x0010;
    /// Every entry's CRC is checked on read, even a zero one.
    pub const HAS_CHECKSUMS: u16 = 0x0020;
    /// Set by the generic Go stream writer.
    pub const STREAMING: u16 = 0x0040;
    /// At least one entry carries a non-zero content type.
    pub const HAS_CONTENT_TYPES: u16 = 0x0080;
    /// What Go writers and the golden generator put in a WShard file.
    pub const GO_WSHARD: u16 = LITTLE_ENDIAN | HAS_CHECKSUMS | HAS_CONTENT_TYPES;
}

/// Index entry flag bits (spec 3.1).
pub mod entry_flags {
    /// Block bytes on disk are compressed.
    pub const COMPRESSED: u16 = 0x0001;
    /// Codec is zstd (always together with [`COMPRESSED`]).
    pub const ZSTD: u16 = 0x0002;
    /// Codec is LZ4 raw block (always together with [`COMPRESSED`]).
    pub const LZ4: u16 = 0x0004;
    /// Defined by the reference; no writer sets it and no reader acts on it.
    pub const CHUNKED: u16 = 0x0008;
}

/// Container roles (spec 2, `shard.go:109-118`).
pub mod role {
    pub const MOSH: u8 = 0x01;
    pub const SAMPLE: u8 = 0x02;
    pub const GEMM_PANEL: u8 = 0x03;
    /// Chunked-episode manifest.
    pub const MANIFEST: u8 = 0x04;
    /// WShard episode.
    pub const WSHARD: u8 = 0x05;
    pub const UMSH: u8 = 0x06;
    pub const ROLE_07: u8 = 0x07;
    pub const COLUMN: u8 = 0x08;
}

/// Header `compression_default` codes (spec 2).
pub mod codec_code {
    pub const NONE: u8 = 0;
    pub const ZSTD: u8 = 1;
    pub const LZ4: u8 = 2;
}

/// Alignment values the header byte may hold.
pub const ALLOWED_ALIGNMENTS: [u8; 4] = [0, 16, 32, 64];
/// The alignment Go writers and the goldens use.
pub const DEFAULT_ALIGNMENT: u8 = 64;

/// Read limits of the Go reader (spec 7.1).
pub const MAX_ENTRY_COUNT: u32 = 10_000_000;
pub const MAX_INDEX_BYTES: u64 = 1 << 30;
pub const MAX_STRING_TABLE_BYTES: u64 = 104_857_600;
pub const MAX_DECOMPRESS_BYTES: u64 = 1 << 30;
/// Python refuses to inflate LZ4 blocks larger than this (spec 8.5).
pub const MAX_LZ4_BLOCK_BYTES: u64 = 256 << 20;

/// Go-lib compression thresholds (spec 8.3): try only above 256 bytes, keep only below 90 %.
pub const GO_MIN_COMPRESS_LEN: u64 = 256;
pub const GO_KEEP_RATIO_NUM: u64 = 9;
pub const GO_KEEP_RATIO_DEN: u64 = 10;

/// Byte offsets of the header fields.
pub(crate) mod header_off {
    pub const MAGIC: usize = 0;
    pub const VERSION: usize = 4;
    pub const ROLE: usize = 5;
    pub const FLAGS: usize = 6;
    pub const ALIGNMENT: usize = 8;
    pub const COMPRESSION_DEFAULT: usize = 9;
    pub const INDEX_ENTRY_SIZE: usize = 10;
    pub const ENTRY_COUNT: usize = 12;
    pub const STRING_TABLE_OFFSET: usize = 16;
    pub const DATA_SECTION_OFFSET: usize = 24;
    pub const SCHEMA_OFFSET: usize = 32;
    pub const TOTAL_FILE_SIZE: usize = 40;
}

/// Byte offsets of the index entry fields.
pub(crate) mod entry_off {
    pub const NAME_HASH: usize = 0;
    pub const NAME_OFFSET: usize = 8;
    pub const NAME_LEN: usize = 12;
    pub const FLAGS: usize = 14;
    pub const DATA_OFFSET: usize = 16;
    pub const DISK_SIZE: usize = 24;
    pub const ORIG_SIZE: usize = 32;
    pub const CHECKSUM: usize = 40;
    pub const CONTENT_TYPE: usize = 44;
    pub const TAG_BITS: usize = 46;
}

/// `align_up(x, a)` for the alignments of the format; `a == 0` means no rounding.
/// Returns `None` on overflow.
#[must_use]
pub fn align_up(x: u64, alignment: u8) -> Option<u64> {
    if alignment <= 1 {
        return Some(x);
    }
    let a = u64::from(alignment);
    Some(x.checked_add(a - 1)? & !(a - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn align_up_rounds_to_power_of_two() {
        assert_eq!(align_up(0, 64), Some(0));
        assert_eq!(align_up(1, 64), Some(64));
        assert_eq!(align_up(400, 64), Some(448));
        assert_eq!(align_up(401, 0), Some(401));
        assert_eq!(align_up(u64::MAX, 64), None);
    }
}
