//! Reading a shard through byte-range requests (an object store, HTTP) without ever holding
//! the whole file: [`RangedSource`] keeps the first bytes of the shard (header, index and
//! string table, fetched in at most two requests) and fetches every other range, i.e. each
//! block, when the reader asks for it. The layout is parsed by the one parser,
//! [`ShardIndex`](super::ShardIndex), through [`ReadAt`]: nothing here knows the layout
//! beyond the header's `data_section_offset` (where the metadata ends).

use std::io;

use super::limits::ReadLimits;
use super::reader::ShardReader;
use super::source::ReadAt;
use crate::error::Result;
use crate::header::{ShardHeader, HEADER_BYTES};

/// Bytes a remote reader asks for first: the header, and for most shards the whole index
/// and string table, in one request (a 1,000-block shard's index is 48,000 bytes).
pub const DEFAULT_PREFETCH_BYTES: u64 = 64 * 1024;

/// Fetches byte ranges of one object.
pub trait RangeFetch {
    /// The `len` bytes at `offset`. An error should name the object and the range.
    ///
    /// # Errors
    /// Whatever the transport fails with; `UnexpectedEof` when the object is shorter.
    fn fetch(&self, offset: u64, len: u64) -> io::Result<Vec<u8>>;
}

impl<F: Fn(u64, u64) -> io::Result<Vec<u8>>> RangeFetch for F {
    fn fetch(&self, offset: u64, len: u64) -> io::Result<Vec<u8>> {
        self(offset, len)
    }
}

/// A shard of `size` bytes whose first bytes (`head`) are held and whose other ranges are
/// fetched on demand.
#[derive(Debug)]
pub struct RangedSource<F> {
    fetch: F,
    size: u64,
    head: Vec<u8>,
}

impl<F: RangeFetch> RangedSource<F> {
    /// `head` is the object's first bytes (as many as the first request returned), `size`
    /// its length. Call [`RangedSource::complete_metadata`] (or open through
    /// [`ShardReader::open_ranged`]) so the index is read from `head`.
    #[must_use]
    pub fn new(fetch: F, size: u64, head: Vec<u8>) -> Self {
        Self { fetch, size, head }
    }

    /// Extend `head` up to the header's `data_section_offset` (the end of the index and the
    /// string table) with one more request, when the first did not reach it. A header that
    /// does not decode, or offsets beyond the object or the limits, are left for the parser
    /// to report: nothing is fetched for them.
    ///
    /// # Errors
    /// The fetch's I/O errors.
    pub fn complete_metadata(&mut self, limits: &ReadLimits) -> io::Result<()> {
        let Some(hb) = self.head.get(..HEADER_BYTES) else {
            return Ok(());
        };
        let mut b = [0u8; HEADER_BYTES];
        b.copy_from_slice(hb);
        let Ok(header) = ShardHeader::decode(&b) else {
            return Ok(());
        };
        let have = self.head.len() as u64;
        let want = header.data_section_offset;
        let budget = limits
            .max_index_bytes
            .saturating_add(limits.max_string_table_bytes)
            .saturating_add(HEADER_BYTES as u64);
        if want <= have || want > self.size || want > budget {
            return Ok(());
        }
        let rest = self.fetch.fetch(have, want - have)?;
        self.head.extend_from_slice(&rest);
        Ok(())
    }

    /// The bytes held (the object's first ones).
    #[must_use]
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// The fetcher.
    #[must_use]
    pub fn fetcher(&self) -> &F {
        &self.fetch
    }
}

impl<F: RangeFetch> ReadAt for RangedSource<F> {
    fn size(&self) -> io::Result<u64> {
        Ok(self.size)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let len = buf.len() as u64;
        let end = offset.checked_add(len).filter(|&e| e <= self.size);
        if end.is_none() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "range {offset}+{len} past the end of the {}-byte object",
                    self.size
                ),
            ));
        }
        if self.head.as_slice().read_exact_at(buf, offset).is_ok() {
            return Ok(());
        }
        if len == 0 {
            return Ok(());
        }
        let got = self.fetch.fetch(offset, len)?;
        if got.len() != buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "range {offset}+{len}: the source returned {} bytes",
                    got.len()
                ),
            ));
        }
        buf.copy_from_slice(&got);
        Ok(())
    }
}

impl<F: RangeFetch> ShardReader<RangedSource<F>> {
    /// Open a shard of `size` bytes from its first bytes `head` and a fetcher for the rest:
    /// at most one more request for the index and string table, then one per block read.
    /// Blocks are decompressed and CRC32C-checked exactly as from a file.
    ///
    /// # Errors
    /// The fetch's I/O errors, and those of [`ShardIndex::parse`](super::ShardIndex::parse).
    pub fn open_ranged(fetch: F, size: u64, head: Vec<u8>, limits: ReadLimits) -> Result<Self> {
        let mut src = RangedSource::new(fetch, size, head);
        src.complete_metadata(&limits)
            .map_err(|e| crate::error::FormatError::io("read", e))?;
        Self::new(src, limits)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::entry::content_type;
    use crate::read::ShardReader;
    use crate::write::{BlockOptions, Reserve, ShardOptions, ShardWriter};

    /// A shard of `n` blocks of 100 bytes each, with CRCs.
    fn shard(n: usize) -> Vec<u8> {
        let names: Vec<String> = (0..n).map(|i| format!("b/{i:04}")).collect();
        let out = std::io::Cursor::new(Vec::new());
        let mut w = ShardWriter::new(out, ShardOptions::wshard(), &Reserve::names(names.clone()))
            .expect("writer");
        for (i, name) in names.iter().enumerate() {
            let fill = u8::try_from(i % 251).unwrap_or(0);
            w.write_block(name, &[fill; 100], BlockOptions::raw(content_type::UNKNOWN))
                .expect("add");
        }
        w.finish().expect("finish").0.into_inner()
    }

    #[test]
    fn ranged_reads_fetch_the_index_once_then_each_block() {
        let bytes = shard(1000);
        let calls = RefCell::new(Vec::new());
        let fetch = |offset: u64, len: u64| {
            calls.borrow_mut().push((offset, len));
            let (a, b) = (offset as usize, (offset + len) as usize);
            Ok(bytes[a..b].to_vec())
        };
        let head = bytes[..1024].to_vec();
        let r = ShardReader::open_ranged(&fetch, bytes.len() as u64, head, ReadLimits::default())
            .expect("open");
        assert_eq!(calls.borrow().len(), 1, "index in one more request");
        let local = ShardReader::from_bytes(bytes.clone()).expect("local");
        for name in ["b/0000", "b/0500", "b/0999"] {
            assert_eq!(
                r.read_block(name).expect("read"),
                local.read_block(name).expect("l")
            );
        }
        assert_eq!(calls.borrow().len(), 4);
        assert!(calls.borrow()[1..].iter().all(|&(_, len)| len == 100));
    }

    #[test]
    fn ranged_reads_check_crc_and_name_the_block() {
        let mut bytes = shard(3);
        let local = ShardReader::from_bytes(bytes.clone()).expect("local");
        let (_, e) = local.entry("b/0001").expect("entry");
        let at = usize::try_from(e.data_offset).expect("offset");
        bytes[at] ^= 0xff;
        let size = bytes.len() as u64;
        let head = bytes[..64].to_vec();
        let fetch =
            |offset: u64, len: u64| Ok(bytes[offset as usize..(offset + len) as usize].to_vec());
        let r = ShardReader::open_ranged(fetch, size, head, ReadLimits::default()).expect("open");
        let err = r.read_block("b/0001").expect_err("crc");
        assert!(
            matches!(err, crate::FormatError::BlockCrc { ref name, .. } if name == "b/0001"),
            "{err}"
        );
        assert!(r.read_block("b/0002").is_ok());
    }
}
