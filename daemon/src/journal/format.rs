//! Journal framing, in the style of the LevelDB log format: the file is a sequence of
//! 32 KiB blocks; a logical record is split into fragments that never cross a block
//! boundary, each with a 7-byte header `crc32c u32 | len u16 | kind u8`. The CRC covers the
//! kind byte and the fragment bytes. A block tail shorter than a header is zero-filled.
//!
//! What the writer guarantees, and the reader ([`super::scan`]) relies on:
//!
//! - a record is one FULL fragment, or FIRST, MIDDLE..., LAST;
//! - a FIRST or MIDDLE fragment always ends exactly at its block's end (a record is split
//!   only where it does not fit), so a MIDDLE or LAST fragment always starts a block;
//! - fragments follow each other without gaps; only a block tail shorter than a header is
//!   padding (zeros); a zero header is never written.

use std::io::{self, Write};

/// Journal block size.
pub const BLOCK_LEN: usize = 32 * 1024;
/// Fragment header: crc32c (4) + length (2) + kind (1).
pub const HEADER_LEN: usize = 7;

/// Fragment kinds.
pub(crate) mod kind {
    /// Zero-filled space (a block tail, or preallocated space never written).
    pub(crate) const ZERO: u8 = 0;
    pub(crate) const FULL: u8 = 1;
    pub(crate) const FIRST: u8 = 2;
    pub(crate) const MIDDLE: u8 = 3;
    pub(crate) const LAST: u8 = 4;
}

const ZEROS: [u8; HEADER_LEN] = [0; HEADER_LEN];

/// The CRC32C a fragment header stores: over the kind byte, then the fragment's bytes.
#[must_use]
pub(crate) fn fragment_crc(kind: u8, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&[kind]), data)
}

/// Offset just past the block that holds offset `pos`.
#[must_use]
pub(crate) fn block_end(pos: usize) -> usize {
    (pos / BLOCK_LEN + 1) * BLOCK_LEN
}

/// A fragment header as it reads, not yet checked against anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FragmentHeader {
    pub(crate) crc: u32,
    /// Fragment bytes after the header.
    pub(crate) len: usize,
    pub(crate) kind: u8,
}

impl FragmentHeader {
    /// The header at `at`, `None` when fewer than [`HEADER_LEN`] bytes are left.
    #[must_use]
    pub(crate) fn read(bytes: &[u8], at: usize) -> Option<Self> {
        let h = bytes.get(at..at.checked_add(HEADER_LEN)?)?;
        Some(Self {
            crc: u32::from_le_bytes([h[0], h[1], h[2], h[3]]),
            len: usize::from(u16::from_le_bytes([h[4], h[5]])),
            kind: h[6],
        })
    }

    /// All seven bytes zero: space never written.
    #[must_use]
    pub(crate) fn is_zero(&self) -> bool {
        self.crc == 0 && self.len == 0 && self.kind == kind::ZERO
    }
}

/// Appends logical records to a journal. Generic over the sink: the daemon passes a
/// buffered [`wshard_storage::fsio::DurableFile`].
#[derive(Debug)]
pub struct JournalWriter<W: Write> {
    out: W,
    /// Offset of the next byte to write.
    offset: u64,
}

impl<W: Write> JournalWriter<W> {
    /// Start writing at `offset` (0 for a new file; the end of a file being continued).
    pub fn new(out: W, offset: u64) -> Self {
        Self { out, offset }
    }

    /// Offset of the next byte to write.
    #[must_use]
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The sink.
    pub(crate) fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// Consume the writer.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// Append one logical record made of `parts` concatenated (so a caller can write a
    /// header and a payload without joining them first). Returns the end offset.
    ///
    /// # Errors
    /// Write errors from the sink; after one, the journal must not be appended to again.
    pub fn append(&mut self, parts: &[&[u8]]) -> io::Result<u64> {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        let mut part = 0;
        let mut part_off = 0;
        let mut left = total;
        let mut first = true;
        loop {
            let in_block = (self.offset % BLOCK_LEN as u64) as usize;
            let avail = BLOCK_LEN - in_block;
            if avail < HEADER_LEN {
                self.out.write_all(&ZEROS[..avail])?;
                self.offset += avail as u64;
                continue;
            }
            let n = left.min(avail - HEADER_LEN);
            let last = n == left;
            let k = match (first, last) {
                (true, true) => kind::FULL,
                (true, false) => kind::FIRST,
                (false, true) => kind::LAST,
                (false, false) => kind::MIDDLE,
            };
            // Gather the fragment's slices without copying the payload.
            let mut crc = crc32c::crc32c(&[k]);
            let mut slices: Vec<&[u8]> = Vec::with_capacity(2);
            let mut need = n;
            let (mut p, mut po) = (part, part_off);
            while need > 0 {
                let cur = parts[p];
                let take = (cur.len() - po).min(need);
                let s = &cur[po..po + take];
                crc = crc32c::crc32c_append(crc, s);
                slices.push(s);
                need -= take;
                po += take;
                if po == cur.len() {
                    p += 1;
                    po = 0;
                }
            }
            // Skip empty parts so the cursor stays on real data.
            while p < parts.len() && parts[p].len() == po {
                p += 1;
                po = 0;
            }
            let mut header = [0u8; HEADER_LEN];
            header[0..4].copy_from_slice(&crc.to_le_bytes());
            // n <= BLOCK_LEN - HEADER_LEN < u16::MAX
            header[4..6].copy_from_slice(&u16::try_from(n).unwrap_or(u16::MAX).to_le_bytes());
            header[6] = k;
            self.out.write_all(&header)?;
            for s in slices {
                self.out.write_all(s)?;
            }
            self.offset += (HEADER_LEN + n) as u64;
            part = p;
            part_off = po;
            left -= n;
            first = false;
            if last {
                return Ok(self.offset);
            }
        }
    }

    /// Flush the sink.
    ///
    /// # Errors
    /// The sink's error.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
