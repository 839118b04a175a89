//! Parsing and validating the header, index and string table: one parser for every source.

use std::collections::HashMap;

use super::limits::ReadLimits;
use super::source::ReadAt;
use crate::codec::StoredCodec;
use crate::consts::{header_flags, HEADER_LEN, INDEX_ENTRY_LEN, INDEX_ENTRY_LEN_U16};
use crate::entry::{IndexEntry, ENTRY_BYTES};
use crate::error::{FormatError, Result};
use crate::hash::name_hash;
use crate::header::{ShardHeader, HEADER_BYTES};

/// The validated table of contents of a shard: header, entries and names, with a hash lookup.
#[derive(Clone, Debug)]
pub struct ShardIndex {
    header: ShardHeader,
    entries: Vec<IndexEntry>,
    names: Vec<String>,
    by_hash: HashMap<u64, Vec<u32>>,
    file_len: u64,
}

/// Read `len` bytes at `offset`, mapping a short source to [`FormatError::Truncated`].
pub(crate) fn read_region<R: ReadAt + ?Sized>(
    src: &R,
    what: &str,
    offset: u64,
    len: u64,
    file_len: u64,
) -> Result<Vec<u8>> {
    let end = offset
        .checked_add(len)
        .filter(|&e| e <= file_len)
        .ok_or_else(|| FormatError::Truncated {
            what: what.to_owned(),
            offset,
            end: offset.saturating_add(len),
            len: file_len,
        })?;
    let n = usize::try_from(len).map_err(|_| FormatError::LimitExceeded {
        limit: "region size",
        value: len,
        max: usize::MAX as u64,
    })?;
    let mut buf = vec![0u8; n];
    src.read_exact_at(&mut buf, offset).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            FormatError::Truncated {
                what: what.to_owned(),
                offset,
                end,
                len: file_len,
            }
        } else {
            FormatError::io("read", e)
        }
    })?;
    Ok(buf)
}

impl ShardIndex {
    /// Read and validate the header, index and string table of `src`.
    ///
    /// # Errors
    /// A typed [`FormatError`] for every rule of spec 7.1 that the source breaks, naming the
    /// field or entry and the values involved.
    pub fn parse<R: ReadAt + ?Sized>(src: &R, limits: &ReadLimits) -> Result<Self> {
        let file_len = src.size().map_err(|e| FormatError::io("stat", e))?;
        let head = read_region(src, "header", 0, HEADER_LEN, file_len)?;
        let mut hb = [0u8; HEADER_BYTES];
        hb.copy_from_slice(&head);
        let header = ShardHeader::decode(&hb)?;
        Self::parse_with_header(src, header, file_len, limits)
    }

    fn parse_with_header<R: ReadAt + ?Sized>(
        src: &R,
        header: ShardHeader,
        file_len: u64,
        limits: &ReadLimits,
    ) -> Result<Self> {
        if header.index_entry_size != INDEX_ENTRY_LEN_U16 {
            return Err(FormatError::BadHeader {
                field: "index_entry_size",
                offset: 10,
                message: format!("is {}, must be {INDEX_ENTRY_LEN}", header.index_entry_size),
            });
        }
        if header.entry_count > limits.max_entry_count {
            return Err(FormatError::LimitExceeded {
                limit: "entry_count",
                value: u64::from(header.entry_count),
                max: u64::from(limits.max_entry_count),
            });
        }
        let index_bytes = u64::from(header.entry_count) * INDEX_ENTRY_LEN;
        if index_bytes > limits.max_index_bytes {
            return Err(FormatError::LimitExceeded {
                limit: "index size",
                value: index_bytes,
                max: limits.max_index_bytes,
            });
        }
        if limits.require_exact_file_size && header.total_file_size != file_len {
            return Err(FormatError::FileSizeMismatch {
                header: header.total_file_size,
                actual: file_len,
            });
        }
        if header.total_file_size > file_len {
            return Err(FormatError::Truncated {
                what: "file (total_file_size)".into(),
                offset: 0,
                end: header.total_file_size,
                len: file_len,
            });
        }
        let index_end = HEADER_LEN + index_bytes;
        if header.string_table_offset < index_end {
            return Err(FormatError::BadHeader {
                field: "string_table_offset",
                offset: 16,
                message: format!(
                    "is {}, inside the index that ends at {index_end} ({} entries)",
                    header.string_table_offset, header.entry_count
                ),
            });
        }
        if header.data_section_offset < header.string_table_offset {
            return Err(FormatError::BadHeader {
                field: "data_section_offset",
                offset: 24,
                message: format!(
                    "is {}, before string_table_offset {}",
                    header.data_section_offset, header.string_table_offset
                ),
            });
        }
        if header.data_section_offset > header.total_file_size {
            return Err(FormatError::BadHeader {
                field: "data_section_offset",
                offset: 24,
                message: format!(
                    "is {}, past total_file_size {}",
                    header.data_section_offset, header.total_file_size
                ),
            });
        }
        let strings_len = header.data_section_offset - header.string_table_offset;
        if strings_len > limits.max_string_table_bytes {
            return Err(FormatError::LimitExceeded {
                limit: "string table size",
                value: strings_len,
                max: limits.max_string_table_bytes,
            });
        }
        let raw_index = read_region(src, "index", HEADER_LEN, index_bytes, file_len)?;
        let strings = read_region(
            src,
            "string table",
            header.string_table_offset,
            strings_len,
            file_len,
        )?;

        let count = header.entry_count as usize;
        let mut entries = Vec::with_capacity(count);
        let mut names = Vec::with_capacity(count);
        let mut by_hash: HashMap<u64, Vec<u32>> = HashMap::with_capacity(count);
        let mut prev_end = header.data_section_offset;
        for (i, chunk) in raw_index.chunks_exact(ENTRY_BYTES).enumerate() {
            let n = u32::try_from(i).unwrap_or(u32::MAX);
            let entry_offset = HEADER_LEN + i as u64 * INDEX_ENTRY_LEN;
            let mut eb = [0u8; ENTRY_BYTES];
            eb.copy_from_slice(chunk);
            let e = IndexEntry::decode(&eb);
            let bad = |message: String| FormatError::BadEntry {
                entry: n,
                offset: entry_offset,
                message,
            };
            let name_start = u64::from(e.name_offset);
            let name_end = name_start + u64::from(e.name_len);
            if name_end > strings_len {
                return Err(bad(format!(
                    "name {}..{} outside the {strings_len}-byte string table",
                    name_start, name_end
                )));
            }
            // Both bounds are below strings_len, which fits in memory.
            let name_bytes = &strings[name_start as usize..name_end as usize];
            let name = std::str::from_utf8(name_bytes)
                .map_err(|err| bad(format!("name is not UTF-8: {err}")))?
                .to_owned();
            if e.data_offset < header.data_section_offset {
                return Err(bad(format!(
                    "block `{name}` data_offset {} before data_section_offset {}",
                    e.data_offset, header.data_section_offset
                )));
            }
            let end = e
                .data_offset
                .checked_add(e.disk_size)
                .filter(|&x| x <= header.total_file_size)
                .ok_or_else(|| {
                    bad(format!(
                        "block `{name}` {}+{} extends past file end {}",
                        e.data_offset, e.disk_size, header.total_file_size
                    ))
                })?;
            if e.data_offset < prev_end {
                return Err(bad(format!(
                    "block `{name}` data_offset {} < previous block end {prev_end} (not monotonic)",
                    e.data_offset
                )));
            }
            prev_end = end;
            by_hash.entry(e.name_hash).or_default().push(n);
            entries.push(e);
            names.push(name);
        }
        Ok(Self {
            header,
            entries,
            names,
            by_hash,
            file_len,
        })
    }

    /// The header.
    #[must_use]
    pub fn header(&self) -> &ShardHeader {
        &self.header
    }

    /// The entries in index (= data) order.
    #[must_use]
    pub fn entries(&self) -> &[IndexEntry] {
        &self.entries
    }

    /// Number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the shard has no entries.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Name of entry `i`.
    #[must_use]
    pub fn name(&self, i: usize) -> Option<&str> {
        self.names.get(i).map(String::as_str)
    }

    /// All names in index order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    /// Length of the source the index was read from.
    #[must_use]
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// Find a block through its xxHash64, then compare the name (Go's lookup). The first
    /// match wins when a (malformed) file holds duplicates, as in Go.
    #[must_use]
    pub fn find(&self, name: &str) -> Option<usize> {
        self.by_hash
            .get(&name_hash(name))?
            .iter()
            .map(|&i| i as usize)
            .find(|&i| self.names[i] == name)
    }

    /// The codec entry `i` is stored with, or `None` when its flags name none (spec 8.4).
    #[must_use]
    pub fn stored_codec(&self, i: usize) -> Option<StoredCodec> {
        let e = self.entries.get(i)?;
        StoredCodec::from_flags(
            e.flags,
            self.header.compression_default,
            e.disk_size,
            e.orig_size,
        )
    }

    /// Whether entry `i`'s CRC must be checked: header flag 0x20 or a non-zero CRC (Go's rule).
    #[must_use]
    pub fn crc_checked(&self, i: usize) -> bool {
        self.header.flags & header_flags::HAS_CHECKSUMS != 0
            || self.entries.get(i).is_some_and(|e| e.checksum != 0)
    }
}
