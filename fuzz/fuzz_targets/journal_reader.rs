//! The daemon's journal reader (`journal::scan::scan`, `journal::segment::read_segment`).
//!
//! The first byte picks the mode:
//!
//! - even: **raw**. The rest of the input is scanned as a journal, twice: as is, and placed
//!   so that it straddles the first 32 KiB block boundary (behind one valid filler record),
//!   which reaches the block-trailer and resynchronisation paths with small inputs. Nothing
//!   may panic; `valid_end <= len`, every record and corruption lies within the file, records
//!   are in order and do not overlap, and `valid_end` is the end of the last record.
//! - odd: **structured**. The input describes records (sizes from tiny to several blocks,
//!   each appended in 1-3 parts) written with `JournalWriter`, then corruptions of the file
//!   (bit flips, zeroed ranges, whole zeroed blocks, PRNG garbage, truncation). The clean
//!   file must scan back exactly; the damaged one must report only records that were
//!   written, byte for byte at their original offsets (no damaged record reported as good),
//!   and must still report every record whose own bytes are untouched (reading resumes at
//!   the next record inside a damaged block), and report intact bytes after the first
//!   damage when such a record follows it.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use wshard_recorder::journal::format::{JournalWriter, BLOCK_LEN, HEADER_LEN};
use wshard_recorder::journal::scan::{scan, JournalScan};
use wshard_recorder::journal::segment::read_segment;

/// Upper bound on the bytes the structured mode writes, to keep executions fast.
const MAX_JOURNAL: usize = 4 * BLOCK_LEN + BLOCK_LEN / 2;

fn check_scan(bytes: &[u8], s: &JournalScan) {
    let len = bytes.len() as u64;
    assert_eq!(s.len, len);
    assert!(s.valid_end <= len, "valid_end {} > len {len}", s.valid_end);
    let mut prev_end = 0u64;
    for r in &s.records {
        assert!(r.offset >= prev_end, "records overlap or are out of order");
        assert!(
            r.offset < r.end && r.end <= len,
            "record {}..{} of {len}",
            r.offset,
            r.end
        );
        // At least one header per fragment, and the data fits in what the record spans.
        assert!(r.data.len() as u64 + HEADER_LEN as u64 <= r.end - r.offset);
        prev_end = r.end;
    }
    assert_eq!(s.valid_end, s.records.last().map_or(0, |r| r.end));
    for c in &s.corruptions {
        assert!(
            c.offset.checked_add(c.len).is_some_and(|e| e <= len),
            "corruption {}+{} beyond {len}",
            c.offset,
            c.len
        );
    }
    // Records and reported losses never overlap: no byte is both kept and discarded, and
    // no loss is counted twice.
    let mut spans: Vec<(u64, u64)> = s.records.iter().map(|r| (r.offset, r.end)).collect();
    spans.extend(s.corruptions.iter().map(|c| (c.offset, c.offset + c.len)));
    spans.sort_unstable();
    for pair in spans.windows(2) {
        assert!(
            pair[0].1 <= pair[1].0,
            "overlapping spans {:?} and {:?}",
            pair[0],
            pair[1]
        );
    }
    assert!(s.discarded_bytes() <= len);
}

fn raw(bytes: &[u8]) {
    let s = scan(bytes);
    check_scan(bytes, &s);
    let seg = read_segment(bytes);
    assert_eq!(seg.scan, s, "read_segment scans differently");
    for (off, _) in &seg.problems {
        assert!(*off < bytes.len() as u64);
    }
}

/// Tiny deterministic PRNG (SplitMix64) for garbage, so it cannot be steered into valid
/// CRCs.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Reads the fuzz input as a stream of small integers (zeros once it runs out).
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

struct Written {
    offset: u64,
    end: u64,
    data: Vec<u8>,
}

fn record_len(inp: &mut Input<'_>) -> usize {
    let c = inp.u8();
    match c % 5 {
        0 => usize::from(inp.u8() % 64),
        1 => usize::from(inp.u16() % 4096),
        // Up to four blocks.
        2 => usize::from(inp.u16()) * 2,
        // Exactly filling what is left of a block, or a few bytes around it.
        3 => BLOCK_LEN - 2 * HEADER_LEN - usize::from(inp.u8() % 16),
        _ => BLOCK_LEN - HEADER_LEN + usize::from(inp.u8() % 16),
    }
}

fn structured(mut inp: Input<'_>) {
    // Write.
    let mut w = JournalWriter::new(Vec::new(), 0);
    let mut written: Vec<Written> = Vec::new();
    let n = 1 + usize::from(inp.u8() % 24);
    for i in 0..n {
        let len = record_len(&mut inp);
        if w.offset() as usize + len > MAX_JOURNAL {
            break;
        }
        // Distinct bytes per record, built with memcpy (a per-byte loop is slow under the
        // fuzzer's comparison tracing).
        let salt = (i as u8).wrapping_mul(37) ^ 0xA5;
        let pattern: Vec<u8> = (0..=250u8).map(|j| j.wrapping_mul(31) ^ salt).collect();
        let mut data = Vec::with_capacity(len);
        while data.len() < len {
            let k = pattern.len().min(len - data.len());
            data.extend_from_slice(&pattern[..k]);
        }
        if let Some(tag) = data.get_mut(..4) {
            tag.copy_from_slice(&(i as u32).to_le_bytes());
        }
        let a = usize::from(inp.u16()) % (len + 1);
        let b = a + usize::from(inp.u16()) % (len - a + 1);
        // A record starts at the next block when fewer than a header's bytes are left.
        let offset = match BLOCK_LEN - w.offset() as usize % BLOCK_LEN {
            left if left < HEADER_LEN => w.offset() + left as u64,
            _ => w.offset(),
        };
        let end = match inp.u8() % 3 {
            0 => w.append(&[&data]),
            1 => w.append(&[&data[..a], &data[a..]]),
            _ => w.append(&[&data[..a], &[], &data[a..b], &data[b..]]),
        }
        .expect("writing to a Vec cannot fail");
        assert_eq!(end, w.offset());
        written.push(Written { offset, end, data });
    }
    let original = w.into_inner();

    // The clean file scans back exactly.
    let clean = scan(&original);
    check_scan(&original, &clean);
    assert!(
        clean.corruptions.is_empty(),
        "clean journal: {:?}",
        clean.corruptions
    );
    assert_eq!(clean.records.len(), written.len());
    for (r, w) in clean.records.iter().zip(&written) {
        assert_eq!((r.offset, r.end), (w.offset, w.end));
        assert!(
            r.data == w.data,
            "clean journal: record at {} differs",
            r.offset
        );
    }
    assert_eq!(clean.valid_end, original.len() as u64);

    // Damage it.
    let mut bytes = original.clone();
    let ops = inp.u8() % 6;
    let mut garbage = Mix(u64::from(inp.u32()));
    for _ in 0..ops {
        if bytes.is_empty() {
            break;
        }
        let kind = inp.u8() % 6;
        let at = inp.u32() as usize % bytes.len();
        let span = 1 + usize::from(inp.u16());
        let to = at.saturating_add(span).min(bytes.len());
        match kind {
            0 => bytes[at] ^= 1 << (inp.u8() % 8),
            1 => bytes[at..to].fill(0),
            2 => {
                // A whole block (or what the file has of it) reads back as zeros: a page
                // that never reached the disk before a crash.
                let start = at / BLOCK_LEN * BLOCK_LEN;
                let end = (start + BLOCK_LEN).min(bytes.len());
                bytes[start..end].fill(0);
            }
            3 => bytes[at..to]
                .iter_mut()
                .for_each(|b| *b = garbage.next() as u8),
            4 => bytes.truncate(at),
            _ => {
                // From a block start to the end of that block or beyond.
                let start = at / BLOCK_LEN * BLOCK_LEN;
                bytes[start..to.max(start)].fill(0);
            }
        }
    }
    let s = scan(&bytes);
    check_scan(&bytes, &s);
    let _ = read_segment(&bytes);

    // Bytes cut off by a truncation count as damaged.
    let intact = |from: usize, to: usize| bytes.get(from..to) == Some(&original[from..to]);
    let mut next = 0;
    for r in &s.records {
        // Records come in order, so walk the written ones alongside.
        while next < written.len() && written[next].offset < r.offset {
            next += 1;
        }
        let w = written.get(next).filter(|w| w.offset == r.offset);
        let Some(w) = w else {
            panic!(
                "record reported at {}..{} ({} bytes) was never written there",
                r.offset,
                r.end,
                r.data.len()
            );
        };
        assert_eq!(r.end, w.end, "record at {}: wrong end", r.offset);
        assert!(
            r.data == w.data,
            "record at {}: {} bytes reported as good, but they are not the {} bytes written",
            r.offset,
            r.data.len(),
            w.data.len()
        );
    }
    for w in &written {
        if intact(w.offset as usize, w.end as usize) {
            assert!(
                s.records.iter().any(|r| r.offset == w.offset),
                "intact record {}..{} not reported",
                w.offset,
                w.end
            );
            if s.first_damage.is_some_and(|d| d < w.offset) {
                assert!(
                    s.intact_after_damage(),
                    "intact record {}..{} after the damage at {:?} not counted",
                    w.offset,
                    w.end,
                    s.first_damage
                );
            }
        }
    }
    if bytes == original {
        assert_eq!(s, clean);
    }
}

/// For every `mode >> 1`: one valid record ending `7 + 4 * (mode >> 1)` bytes before the
/// first block boundary (built once).
static FILLERS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();

fn fillers() -> Vec<Vec<u8>> {
    (0..128)
        .map(|k| {
            let back = HEADER_LEN + k * 4;
            let mut w = JournalWriter::new(Vec::new(), 0);
            let filler = vec![0x5A; BLOCK_LEN - back - HEADER_LEN];
            w.append(&[&filler]).expect("writing to a Vec cannot fail");
            w.into_inner()
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        raw(data);
        return;
    };
    if mode & 1 == 0 {
        raw(rest);
        // Straddle the first block boundary: a filler record ends `back` bytes before it.
        let back = HEADER_LEN + usize::from(mode >> 1) * 4;
        let mut bytes = Vec::with_capacity(BLOCK_LEN + rest.len());
        bytes.extend_from_slice(&FILLERS.get_or_init(fillers)[usize::from(mode >> 1)]);
        debug_assert_eq!(bytes.len(), BLOCK_LEN - back);
        bytes.extend_from_slice(rest);
        raw(&bytes);
    } else {
        let inp = Input(rest);
        if !inp.is_empty() {
            structured(inp);
        }
    }
});
