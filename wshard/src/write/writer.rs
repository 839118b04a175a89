//! The reserve-write-finalize container writer.
//!
//! 1. [`ShardWriter::new`] reserves the header, index and string-table region with zeros.
//! 2. Blocks are appended one after another at aligned offsets, each compressed on its own
//!    ([`ShardWriter::write_block`]), handed in already compressed with its CRC
//!    ([`ShardWriter::write_precompressed`]), or streamed ([`ShardWriter::stream_block`]).
//! 3. [`ShardWriter::finish`] writes the header, index and string table into the reserve.
//!
//! Until `finish` returns, the first 64 bytes are zeros, so no reader mistakes an unfinished
//! file for a valid one. The writer never fsyncs: durability belongs to the caller.

use std::collections::HashSet;
use std::io::{Seek, SeekFrom, Write};

use super::options::{Reserve, ShardOptions};
use crate::codec::{compress_into, Codec};
use crate::consts::{
    align_up, header_flags, ALLOWED_ALIGNMENTS, HEADER_LEN, INDEX_ENTRY_LEN, MAX_STRING_TABLE_BYTES,
};
use crate::entry::IndexEntry;
use crate::error::{FormatError, Result};
use crate::hash::{crc32c, crc32c_append, name_hash};
use crate::header::ShardHeader;

const ZEROS: [u8; 4096] = [0; 4096];

/// How to store one block handed in as bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockOptions {
    pub codec: Codec,
    pub content_type: u16,
}

impl BlockOptions {
    /// Raw storage with a content type.
    #[must_use]
    pub fn raw(content_type: u16) -> Self {
        Self {
            codec: Codec::None,
            content_type,
        }
    }

    /// Try `codec` (subject to the writer's policy), no content type.
    #[must_use]
    pub fn codec(codec: Codec) -> Self {
        Self {
            codec,
            content_type: 0,
        }
    }
}

/// A block that was compressed elsewhere (e.g. on a worker pool).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Precompressed {
    /// The codec of the stored bytes; `Codec::None` for raw bytes.
    pub codec: Codec,
    pub orig_size: u64,
    /// CRC32C of the uncompressed bytes.
    pub crc32c: u32,
    pub content_type: u16,
}

/// One written block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WrittenBlock {
    pub name: String,
    pub entry: IndexEntry,
}

/// The reserve-write-finalize writer. See the module docs.
#[derive(Debug)]
pub struct ShardWriter<W: Write + Seek> {
    out: W,
    opts: ShardOptions,
    data_section_offset: u64,
    max_entries: u64,
    max_name_bytes: u64,
    pos: u64,
    entries: Vec<IndexEntry>,
    names: Vec<String>,
    seen: HashSet<String>,
    strings_len: u64,
    scratch: Vec<u8>,
    failed: bool,
}

impl<W: Write + Seek> ShardWriter<W> {
    /// Start a shard at the current start of `out` (it is rewound to offset 0) and write the
    /// zero-filled reserve.
    ///
    /// # Errors
    /// [`FormatError::BadHeader`] for an alignment other than 0/16/32/64,
    /// [`FormatError::ReserveExceeded`] for a reserve beyond the format's limits, I/O errors.
    pub fn new(mut out: W, opts: ShardOptions, reserve: &Reserve) -> Result<Self> {
        if !ALLOWED_ALIGNMENTS.contains(&opts.alignment) {
            return Err(FormatError::BadHeader {
                field: "alignment",
                offset: 8,
                message: format!("{} is not one of 0, 16, 32, 64", opts.alignment),
            });
        }
        let (max_entries, max_name_bytes) = reserve.limits();
        if max_name_bytes > MAX_STRING_TABLE_BYTES
            || max_entries > u64::from(crate::consts::MAX_ENTRY_COUNT)
        {
            return Err(FormatError::ReserveExceeded {
                message: format!("{max_entries} entries / {max_name_bytes} name bytes is beyond the reader limits"),
            });
        }
        let tight = HEADER_LEN + max_entries * INDEX_ENTRY_LEN + max_name_bytes;
        let data_section_offset =
            align_up(tight, opts.alignment).ok_or_else(|| FormatError::ReserveExceeded {
                message: "reserve overflows".into(),
            })?;
        out.seek(SeekFrom::Start(0))
            .map_err(|e| FormatError::io("seek", e))?;
        let mut w = Self {
            out,
            opts,
            data_section_offset,
            max_entries,
            max_name_bytes,
            pos: 0,
            entries: Vec::new(),
            names: Vec::new(),
            seen: HashSet::new(),
            strings_len: 0,
            scratch: Vec::new(),
            failed: false,
        };
        w.pad_to(data_section_offset)?;
        Ok(w)
    }

    /// Offset where the data section starts.
    #[must_use]
    pub fn data_section_offset(&self) -> u64 {
        self.data_section_offset
    }

    /// Bytes written so far (the end of the last block).
    #[must_use]
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Blocks written so far.
    #[must_use]
    pub fn entry_count(&self) -> usize {
        self.entries.len()
    }

    fn guard<T>(&mut self, r: std::io::Result<T>, op: &'static str) -> Result<T> {
        r.map_err(|e| {
            self.failed = true;
            FormatError::io(op, e)
        })
    }

    fn pad_to(&mut self, target: u64) -> Result<()> {
        while self.pos < target {
            let n =
                usize::try_from((target - self.pos).min(ZEROS.len() as u64)).unwrap_or(ZEROS.len());
            let r = self.out.write_all(&ZEROS[..n]);
            self.guard(r, "write padding")?;
            self.pos += n as u64;
        }
        Ok(())
    }

    fn admit(&mut self, name: &str) -> Result<()> {
        if self.failed {
            return Err(FormatError::WriterFailed);
        }
        if name.is_empty() || name.len() > usize::from(u16::MAX) || name.contains('\0') {
            return Err(FormatError::BadName {
                name: name.to_owned(),
                message: "must be 1..65535 bytes of UTF-8 without NUL".into(),
            });
        }
        if self.seen.contains(name) {
            return Err(FormatError::DuplicateName {
                name: name.to_owned(),
            });
        }
        if self.entries.len() as u64 >= self.max_entries {
            return Err(FormatError::ReserveExceeded {
                message: format!(
                    "block `{name}` would be entry {} of a reserve for {}",
                    self.entries.len() + 1,
                    self.max_entries
                ),
            });
        }
        if self.strings_len + name.len() as u64 > self.max_name_bytes {
            return Err(FormatError::ReserveExceeded {
                message: format!(
                    "block `{name}` needs {} name bytes, {} of {} left",
                    name.len(),
                    self.max_name_bytes - self.strings_len,
                    self.max_name_bytes
                ),
            });
        }
        Ok(())
    }

    fn begin_data(&mut self) -> Result<u64> {
        let start =
            align_up(self.pos, self.opts.alignment).ok_or(FormatError::ReserveExceeded {
                message: "file offset overflows".into(),
            })?;
        self.pad_to(start)?;
        Ok(start)
    }

    fn record(&mut self, name: &str, entry: IndexEntry) -> WrittenBlock {
        let entry = IndexEntry {
            name_hash: name_hash(name),
            // Bounded by max_name_bytes <= MAX_STRING_TABLE_BYTES < u32::MAX.
            name_offset: u32::try_from(self.strings_len).unwrap_or(u32::MAX),
            name_len: u16::try_from(name.len()).unwrap_or(u16::MAX),
            ..entry
        };
        self.strings_len += name.len() as u64;
        self.entries.push(entry);
        self.names.push(name.to_owned());
        self.seen.insert(name.to_owned());
        WrittenBlock {
            name: name.to_owned(),
            entry,
        }
    }

    /// Write one block from bytes: compress it with `opts.codec` when the writer's policy says
    /// so and the result is smaller, compute the CRC32C of the original bytes, and append it.
    ///
    /// # Errors
    /// Name errors ([`FormatError::BadName`], [`FormatError::DuplicateName`],
    /// [`FormatError::ReserveExceeded`]), compression and I/O errors. After an I/O error the
    /// writer is failed and refuses further writes.
    pub fn write_block(
        &mut self,
        name: &str,
        data: &[u8],
        opts: BlockOptions,
    ) -> Result<WrittenBlock> {
        self.admit(name)?;
        let crc = crc32c(data);
        let orig = data.len() as u64;
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut codec = Codec::None;
        if self.opts.policy.should_try(opts.codec, orig) {
            compress_into(opts.codec, data, &mut scratch, name)?;
            if self.opts.policy.keep(orig, scratch.len() as u64) {
                codec = opts.codec;
            }
        }
        let stored: &[u8] = if codec == Codec::None { data } else { &scratch };
        let result = self.append(
            name,
            stored,
            Precompressed {
                codec,
                orig_size: orig,
                crc32c: crc,
                content_type: opts.content_type,
            },
        );
        self.scratch = scratch;
        result
    }

    /// Write a block whose stored bytes, codec and CRC were prepared elsewhere. The bytes are
    /// written as they are.
    ///
    /// # Errors
    /// As [`ShardWriter::write_block`]; [`FormatError::BadEntry`]-style misuse (raw bytes whose
    /// length differs from `orig_size`) is reported as [`FormatError::BadEpisode`].
    pub fn write_precompressed(
        &mut self,
        name: &str,
        stored: &[u8],
        block: Precompressed,
    ) -> Result<WrittenBlock> {
        self.admit(name)?;
        if block.codec == Codec::None && stored.len() as u64 != block.orig_size {
            return Err(FormatError::BadEpisode {
                message: format!(
                    "block `{name}`: raw bytes are {} long but orig_size is {}",
                    stored.len(),
                    block.orig_size
                ),
            });
        }
        self.append(name, stored, block)
    }

    fn append(&mut self, name: &str, stored: &[u8], block: Precompressed) -> Result<WrittenBlock> {
        let start = self.begin_data()?;
        let r = self.out.write_all(stored);
        self.guard(r, "write block")?;
        self.pos += stored.len() as u64;
        Ok(self.record(
            name,
            IndexEntry {
                flags: block.codec.entry_flags(),
                data_offset: start,
                disk_size: stored.len() as u64,
                orig_size: block.orig_size,
                checksum: block.crc32c,
                content_type: block.content_type,
                ..IndexEntry::default()
            },
        ))
    }

    /// Start a block whose raw bytes are streamed in pieces (for blocks larger than memory).
    /// Streamed blocks are stored uncompressed. Dropping the stream without
    /// [`BlockStream::finish`] fails the writer.
    ///
    /// # Errors
    /// Name and I/O errors as for [`ShardWriter::write_block`].
    pub fn stream_block(&mut self, name: &str, content_type: u16) -> Result<BlockStream<'_, W>> {
        self.admit(name)?;
        let start = self.begin_data()?;
        Ok(BlockStream {
            writer: self,
            name: name.to_owned(),
            content_type,
            start,
            crc: 0,
            len: 0,
            finished: false,
        })
    }

    /// Write the header, index and string table into the reserve and return the output,
    /// positioned at the end of the file, flushed but not synced.
    ///
    /// # Errors
    /// [`FormatError::WriterFailed`] after an earlier I/O error, I/O errors.
    pub fn finish(self) -> Result<(W, Vec<WrittenBlock>)> {
        self.finish_with_region()
            .map(|(out, blocks, _)| (out, blocks))
    }

    /// [`ShardWriter::finish`], also returning the bytes written at offset 0 (header, index,
    /// string table and padding: the first [`ShardWriter::data_section_offset`] bytes of the
    /// file), so a caller that still holds the blocks can hash the whole file from memory.
    ///
    /// # Errors
    /// As [`ShardWriter::finish`].
    pub fn finish_with_region(mut self) -> Result<(W, Vec<WrittenBlock>, Vec<u8>)> {
        if self.failed {
            return Err(FormatError::WriterFailed);
        }
        let count =
            u32::try_from(self.entries.len()).map_err(|_| FormatError::ReserveExceeded {
                message: "too many entries".into(),
            })?;
        let mut flags = self.opts.flags;
        if self.entries.iter().any(|e| e.content_type != 0) {
            flags |= header_flags::HAS_CONTENT_TYPES;
        }
        let mut header = ShardHeader::new(
            self.opts.role,
            flags,
            self.opts.alignment,
            self.opts.compression_default,
            count,
        );
        header.data_section_offset = self.data_section_offset;
        header.total_file_size = self.pos;
        let region_len = usize::try_from(self.data_section_offset).map_err(|_| {
            FormatError::ReserveExceeded {
                message: "reserve does not fit in memory".into(),
            }
        })?;
        let mut region = Vec::with_capacity(region_len);
        region.extend_from_slice(&header.encode());
        for e in &self.entries {
            region.extend_from_slice(&e.encode());
        }
        for n in &self.names {
            region.extend_from_slice(n.as_bytes());
        }
        region.resize(region_len, 0);
        let r = self.out.seek(SeekFrom::Start(0));
        self.guard(r, "seek to header")?;
        let r = self.out.write_all(&region);
        self.guard(r, "write header and index")?;
        let end = self.pos;
        let r = self.out.seek(SeekFrom::Start(end));
        self.guard(r, "seek to end")?;
        let r = self.out.flush();
        self.guard(r, "flush")?;
        let blocks = self
            .names
            .iter()
            .zip(&self.entries)
            .map(|(n, e)| WrittenBlock {
                name: n.clone(),
                entry: *e,
            })
            .collect();
        Ok((self.out, blocks, region))
    }
}

/// A block being streamed; see [`ShardWriter::stream_block`].
#[derive(Debug)]
pub struct BlockStream<'a, W: Write + Seek> {
    writer: &'a mut ShardWriter<W>,
    name: String,
    content_type: u16,
    start: u64,
    crc: u32,
    len: u64,
    finished: bool,
}

impl<W: Write + Seek> BlockStream<'_, W> {
    /// Record the block in the index.
    ///
    /// # Errors
    /// [`FormatError::WriterFailed`] if a write failed meanwhile.
    pub fn finish(mut self) -> Result<WrittenBlock> {
        self.finished = true;
        if self.writer.failed {
            return Err(FormatError::WriterFailed);
        }
        let name = std::mem::take(&mut self.name);
        Ok(self.writer.record(
            &name,
            IndexEntry {
                flags: 0,
                data_offset: self.start,
                disk_size: self.len,
                orig_size: self.len,
                checksum: self.crc,
                content_type: self.content_type,
                ..IndexEntry::default()
            },
        ))
    }
}

impl<W: Write + Seek> Write for BlockStream<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.writer.failed {
            return Err(std::io::Error::other("shard writer failed earlier"));
        }
        match self.writer.out.write_all(buf) {
            Ok(()) => {
                self.crc = crc32c_append(self.crc, buf);
                self.len += buf.len() as u64;
                self.writer.pos += buf.len() as u64;
                Ok(buf.len())
            }
            Err(e) => {
                self.writer.failed = true;
                Err(e)
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.writer.out.flush()
    }
}

impl<W: Write + Seek> Drop for BlockStream<'_, W> {
    fn drop(&mut self) {
        if !self.finished {
            self.writer.failed = true;
        }
    }
}
