//! A multipart upload in progress as its caller keeps it ([`MultipartUpload`]), and how a
//! blob is cut in parts ([`part_count`], [`part_len`]).

use std::collections::BTreeMap;

/// A multipart upload in progress: all a new process needs to go on with it (the daemon's
/// upload queue journals it as its `mpu` and `part` records).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultipartUpload {
    /// The blob's key.
    pub key: String,
    /// The store's upload id.
    pub upload_id: String,
    /// Bytes per part (every part but the last).
    pub part_size: u64,
    /// Stored parts: index (0-based) -> ETag.
    pub parts: BTreeMap<usize, String>,
}

impl MultipartUpload {
    /// A new upload with no part stored.
    #[must_use]
    pub fn new(key: &str, upload_id: String, part_size: u64) -> Self {
        Self {
            key: key.to_owned(),
            upload_id,
            part_size,
            parts: BTreeMap::new(),
        }
    }

    /// Bytes of a `size`-byte blob already stored by this upload.
    #[must_use]
    pub fn stored_bytes(&self, size: u64) -> u64 {
        self.parts
            .keys()
            .map(|&idx| part_len(size, self.part_size, idx))
            .sum()
    }
}

/// Bytes of part `idx` of a `size`-byte blob cut in `part_size` parts.
#[must_use]
pub fn part_len(size: u64, part_size: u64, idx: usize) -> u64 {
    let start = (idx as u64).saturating_mul(part_size);
    size.saturating_sub(start).min(part_size)
}

/// Parts of a `size`-byte blob (at least one).
#[must_use]
pub fn part_count(size: u64, part_size: u64) -> usize {
    let n = size.div_ceil(part_size.max(1)).max(1);
    usize::try_from(n).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upload_parts_cut_a_blob_in_part_size_pieces() {
        assert_eq!((part_count(250, 100), part_len(250, 100, 2)), (3, 50));
        assert_eq!(part_count(0, 100), 1);
        let mut m = MultipartUpload::new("k", "u".into(), 100);
        m.parts.insert(0, "e0".into());
        m.parts.insert(2, "e2".into());
        assert_eq!(m.stored_bytes(250), 150);
    }
}
