//! Journal framing, in the style of the LevelDB log format: the file is a sequence of
//! 32 KiB blocks; a logical record is split into fragments that never cross a block
//! boundary, each with a 7-byte header `crc32c u32 | len u16 | kind u8`. The CRC covers the
//! kind byte and the fragment bytes. A block tail shorter than a header is zero-filled.
//!
//! Because fragments never cross blocks, a reader that meets a bad CRC, an impossible
//! length or a torn tail can drop the rest of that block, resynchronise at the next block
//! boundary and carry on, reporting exactly which bytes it discarded and why.

use std::io::{self, Write};

/// Journal block size.
pub const BLOCK_LEN: usize = 32 * 1024;
/// Fragment header: crc32c (4) + length (2) + kind (1).
pub const HEADER_LEN: usize = 7;

/// Fragment kinds.
pub mod kind {
    /// Zero-filled space (a block tail, or preallocated space never written).
    pub const ZERO: u8 = 0;
    pub const FULL: u8 = 1;
    pub const FIRST: u8 = 2;
    pub const MIDDLE: u8 = 3;
    pub const LAST: u8 = 4;
}

const ZEROS: [u8; HEADER_LEN] = [0; HEADER_LEN];

fn fragment_crc(kind: u8, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&[kind]), data)
}

/// Appends logical records to a journal. Generic over the sink: the daemon passes a
/// buffered [`crate::fsio::DurableFile`].
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
    pub fn get_mut(&mut self) -> &mut W {
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
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// One logical record found by the reader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalRecord {
    /// Offset of the record's first fragment header.
    pub offset: u64,
    /// Offset just past its last fragment.
    pub end: u64,
    pub data: Vec<u8>,
}

/// A region the reader could not use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Corruption {
    pub offset: u64,
    pub len: u64,
    pub reason: String,
}

/// Everything a scan of a journal found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JournalScan {
    pub records: Vec<JournalRecord>,
    pub corruptions: Vec<Corruption>,
    /// End of the last complete record: where a writer may continue.
    pub valid_end: u64,
    /// Bytes scanned.
    pub len: u64,
}

impl JournalScan {
    /// Total bytes discarded.
    #[must_use]
    pub fn discarded_bytes(&self) -> u64 {
        self.corruptions.iter().map(|c| c.len).sum()
    }
}

/// Scan a whole journal. Never panics, whatever the bytes.
#[must_use]
pub fn scan(bytes: &[u8]) -> JournalScan {
    let mut out = JournalScan {
        len: bytes.len() as u64,
        ..JournalScan::default()
    };
    let mut pending: Option<(u64, Vec<u8>)> = None;
    let mut pos = 0usize;
    let drop_pending =
        |pending: &mut Option<(u64, Vec<u8>)>, out: &mut JournalScan, at: usize, why: &str| {
            if let Some((start, data)) = pending.take() {
                out.corruptions.push(Corruption {
                    offset: start,
                    len: at as u64 - start,
                    reason: format!("record of {} bytes so far, {why}", data.len()),
                });
            }
        };
    while pos < bytes.len() {
        let block_end = ((pos / BLOCK_LEN) + 1) * BLOCK_LEN;
        let avail = block_end.min(bytes.len()) - pos;
        if block_end - pos < HEADER_LEN {
            // Block trailer: must be zeros, nothing to read.
            pos = block_end;
            continue;
        }
        if avail < HEADER_LEN {
            if bytes[pos..].iter().any(|&b| b != 0) {
                drop_pending(&mut pending, &mut out, pos, "cut by the end of the file");
                out.corruptions.push(Corruption {
                    offset: pos as u64,
                    len: avail as u64,
                    reason: "torn fragment header at the end of the file".into(),
                });
            }
            break;
        }
        let h = &bytes[pos..pos + HEADER_LEN];
        let crc = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let len = usize::from(u16::from_le_bytes([h[4], h[5]]));
        let k = h[6];
        if k == kind::ZERO && len == 0 && crc == 0 {
            // Zero-filled space: the rest of this block was never written. The writer never
            // leaves one inside a record, so a record in progress lost its next fragment (a
            // page that never reached the disk): joining what follows to it would report
            // bytes that were never written together.
            drop_pending(&mut pending, &mut out, pos, "followed by zero-filled space");
            if bytes[pos..block_end.min(bytes.len())]
                .iter()
                .any(|&b| b != 0)
            {
                out.corruptions.push(Corruption {
                    offset: pos as u64,
                    len: (block_end.min(bytes.len()) - pos) as u64,
                    reason: "non-zero bytes after a zero fragment header".into(),
                });
            }
            pos = block_end;
            continue;
        }
        let bad = |reason: String, out: &mut JournalScan, pending: &mut Option<(u64, Vec<u8>)>| {
            drop_pending(
                pending,
                out,
                pos,
                "dropped with a corrupt fragment after it",
            );
            let end = block_end.min(bytes.len());
            out.corruptions.push(Corruption {
                offset: pos as u64,
                len: (end - pos) as u64,
                reason,
            });
            end
        };
        if k > kind::LAST {
            pos = bad(format!("unknown fragment kind {k}"), &mut out, &mut pending);
            continue;
        }
        if HEADER_LEN + len > block_end - pos {
            pos = bad(
                format!("fragment length {len} crosses the block boundary"),
                &mut out,
                &mut pending,
            );
            continue;
        }
        if pos + HEADER_LEN + len > bytes.len() {
            drop_pending(&mut pending, &mut out, pos, "cut by the end of the file");
            out.corruptions.push(Corruption {
                offset: pos as u64,
                len: (bytes.len() - pos) as u64,
                reason: format!(
                    "torn fragment at the end of the file: header says {len} bytes, {} present",
                    bytes.len() - pos - HEADER_LEN
                ),
            });
            break;
        }
        let data = &bytes[pos + HEADER_LEN..pos + HEADER_LEN + len];
        let computed = fragment_crc(k, data);
        if computed != crc {
            pos = bad(
                format!("fragment crc32c stored {crc:#010x}, computed {computed:#010x}"),
                &mut out,
                &mut pending,
            );
            continue;
        }
        let next = pos + HEADER_LEN + len;
        match k {
            kind::FULL => {
                drop_pending(
                    &mut pending,
                    &mut out,
                    pos,
                    "not finished before a new record",
                );
                out.records.push(JournalRecord {
                    offset: pos as u64,
                    end: next as u64,
                    data: data.to_vec(),
                });
                out.valid_end = next as u64;
            }
            kind::FIRST => {
                drop_pending(
                    &mut pending,
                    &mut out,
                    pos,
                    "not finished before a new record",
                );
                pending = Some((pos as u64, data.to_vec()));
            }
            kind::MIDDLE | kind::LAST => match pending.as_mut() {
                Some((_, buf)) => {
                    buf.extend_from_slice(data);
                    if k == kind::LAST {
                        if let Some((start, data)) = pending.take() {
                            out.records.push(JournalRecord {
                                offset: start,
                                end: next as u64,
                                data,
                            });
                            out.valid_end = next as u64;
                        }
                    }
                }
                None => out.corruptions.push(Corruption {
                    offset: pos as u64,
                    len: (HEADER_LEN + len) as u64,
                    reason: "continuation fragment without a first fragment".into(),
                }),
            },
            _ => {}
        }
        pos = next;
    }
    drop_pending(
        &mut pending,
        &mut out,
        bytes.len(),
        "cut by the end of the file",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(records: &[Vec<u8>]) -> Vec<u8> {
        let mut w = JournalWriter::new(Vec::new(), 0);
        for r in records {
            let (a, b) = r.split_at(r.len() / 3);
            w.append(&[a, b]).unwrap();
        }
        w.into_inner()
    }

    fn sample() -> Vec<Vec<u8>> {
        vec![
            vec![1u8; 10],
            vec![2u8; 100_000],
            vec![],
            vec![3u8; BLOCK_LEN - 2 * HEADER_LEN - 10],
            vec![4u8; 77],
        ]
    }

    #[test]
    fn journal_round_trips_records_of_any_size() {
        let recs = sample();
        let bytes = write(&recs);
        let s = scan(&bytes);
        assert!(s.corruptions.is_empty(), "{:?}", s.corruptions);
        assert_eq!(
            s.records.iter().map(|r| r.data.clone()).collect::<Vec<_>>(),
            recs
        );
        assert_eq!(s.valid_end, bytes.len() as u64);
    }

    #[test]
    fn journal_truncation_at_every_offset_keeps_a_prefix() {
        let recs = sample();
        let bytes = write(&recs);
        let ends: Vec<u64> = scan(&bytes).records.iter().map(|r| r.end).collect();
        for cut in (0..bytes.len()).step_by(97).chain([bytes.len() - 1]) {
            let s = scan(&bytes[..cut]);
            let complete = ends.iter().filter(|&&e| e <= cut as u64).count();
            assert_eq!(s.records.len(), complete, "cut at {cut}");
            assert_eq!(
                s.records.iter().map(|r| r.data.clone()).collect::<Vec<_>>(),
                recs[..complete].to_vec()
            );
            if (s.valid_end as usize) < cut
                && bytes[s.valid_end as usize..cut].iter().any(|&b| b != 0)
            {
                assert!(
                    !s.corruptions.is_empty(),
                    "cut at {cut}: lost bytes must be reported"
                );
            }
        }
    }

    #[test]
    fn journal_corrupt_block_is_skipped_and_reported() {
        let recs: Vec<Vec<u8>> = (0..200u8).map(|i| vec![i; 500]).collect();
        let mut bytes = write(&recs);
        bytes[BLOCK_LEN + 100] ^= 0x40;
        let s = scan(&bytes);
        // The damaged block, plus the record that ran into it and the orphaned tail of the
        // record that ran out of it, are each reported.
        let crc = s
            .corruptions
            .iter()
            .find(|c| c.reason.contains("crc32c"))
            .unwrap();
        assert!(
            crc.offset >= BLOCK_LEN as u64 && crc.offset < BLOCK_LEN as u64 + 600,
            "{crc:?}"
        );
        assert!(s.corruptions.len() <= 3, "{:?}", s.corruptions);
        assert!(
            s.corruptions
                .iter()
                .all(|c| c.offset >= BLOCK_LEN as u64 - 1024
                    && c.offset < 2 * BLOCK_LEN as u64 + 1024)
        );
        // Every record outside the damaged block survives.
        let lost = recs.len() - s.records.len();
        assert!((1..=BLOCK_LEN / 507 + 2).contains(&lost), "lost {lost}");
        assert_eq!(s.records.last().unwrap().data, recs[199]);
    }

    /// Found by `fuzz/fuzz_targets/journal_reader.rs`: a record spanning three blocks whose
    /// middle block reads back as zeros (a page lost in a crash) was reported as a good
    /// record made of its first and last fragments, 32,761 bytes short.
    #[test]
    fn journal_zeroed_block_inside_a_record_is_not_spliced() {
        let recs = vec![vec![7u8; 100], vec![8u8; 3 * BLOCK_LEN], vec![9u8; 50]];
        let mut bytes = write(&recs);
        let clean = scan(&bytes);
        assert_eq!(clean.records.len(), 3);
        let big = clean.records[1].clone();
        assert!(big.offset < BLOCK_LEN as u64 && big.end > 3 * BLOCK_LEN as u64);
        bytes[BLOCK_LEN..2 * BLOCK_LEN].fill(0);
        let s = scan(&bytes);
        for r in &s.records {
            let original = clean.records.iter().find(|c| c.offset == r.offset).unwrap();
            assert_eq!(r, original, "a record not written as such is reported");
        }
        assert_eq!(
            s.records.iter().map(|r| &r.data).collect::<Vec<_>>(),
            vec![&recs[0], &recs[2]]
        );
        let lost = s
            .corruptions
            .iter()
            .find(|c| c.offset == big.offset)
            .unwrap();
        assert_eq!(lost.len, BLOCK_LEN as u64 - big.offset);
        assert!(lost.reason.contains("zero-filled"), "{lost:?}");
        // The orphaned fragments after the hole are reported too.
        assert!(s
            .corruptions
            .iter()
            .any(|c| c.offset >= 2 * BLOCK_LEN as u64 && c.reason.contains("continuation")));
        // The same with the whole tail of the file zeroed (preallocated space).
        let mut bytes = write(&recs[..2]);
        let cut = BLOCK_LEN + 10;
        bytes[cut..].fill(0);
        let s = scan(&bytes);
        assert_eq!(s.records.len(), 1);
        assert_eq!(s.valid_end, clean.records[0].end);
    }

    #[test]
    fn journal_garbage_never_panics() {
        let mut x = 0x1234_5678_9abc_def0u64;
        for len in [
            0usize,
            1,
            6,
            7,
            8,
            100,
            BLOCK_LEN,
            BLOCK_LEN + 9,
            3 * BLOCK_LEN,
        ] {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let s = scan(&bytes);
            assert!(s.valid_end <= len as u64);
        }
    }
}
