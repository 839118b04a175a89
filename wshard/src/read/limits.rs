//! Read limits (spec 7.1). The defaults are the Go reader's.

use crate::consts::{
    MAX_DECOMPRESS_BYTES, MAX_ENTRY_COUNT, MAX_INDEX_BYTES, MAX_STRING_TABLE_BYTES,
};

/// Upper bounds a reader enforces before it allocates anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadLimits {
    pub max_entry_count: u32,
    pub max_index_bytes: u64,
    pub max_string_table_bytes: u64,
    pub max_decompressed_block: u64,
    /// Require `total_file_size` to equal the real length (Go does; Python does not).
    pub require_exact_file_size: bool,
}

impl Default for ReadLimits {
    fn default() -> Self {
        Self {
            max_entry_count: MAX_ENTRY_COUNT,
            max_index_bytes: MAX_INDEX_BYTES,
            max_string_table_bytes: MAX_STRING_TABLE_BYTES,
            max_decompressed_block: MAX_DECOMPRESS_BYTES,
            require_exact_file_size: true,
        }
    }
}
