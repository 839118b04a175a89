#![allow(clippy::unwrap_used)]

use super::*;
use crate::journal::format::{JournalWriter, BLOCK_LEN, HEADER_LEN};

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

fn data(s: &JournalScan) -> Vec<Vec<u8>> {
    s.records.iter().map(|r| r.data.clone()).collect()
}

#[test]
fn journal_round_trips_records_of_any_size() {
    let recs = sample();
    let bytes = write(&recs);
    let s = scan(&bytes);
    assert!(s.corruptions.is_empty(), "{:?}", s.corruptions);
    assert_eq!(data(&s), recs);
    assert_eq!(s.valid_end, bytes.len() as u64);
    assert_eq!(s.first_damage, None);
    assert_eq!(s.intact_end, bytes.len() as u64);
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
        assert_eq!(data(&s), recs[..complete].to_vec());
        if (s.valid_end as usize) < cut && bytes[s.valid_end as usize..cut].iter().any(|&b| b != 0)
        {
            assert!(
                !s.corruptions.is_empty(),
                "cut at {cut}: lost bytes must be reported"
            );
        }
        // A cut is a torn tail: nothing intact after the damage.
        assert!(!s.intact_after_damage(), "cut at {cut}: {s:?}");
    }
}

#[test]
fn journal_corrupt_fragment_costs_only_its_record() {
    let recs: Vec<Vec<u8>> = (0..200u8).map(|i| vec![i; 500]).collect();
    let clean = scan(&write(&recs));
    let mut bytes = write(&recs);
    bytes[BLOCK_LEN + 100] ^= 0x40;
    let s = scan(&bytes);
    // The damaged record alone is lost; reading resumed at the next record in the block.
    let hit = clean
        .records
        .iter()
        .position(|r| r.offset <= BLOCK_LEN as u64 + 100 && r.end > BLOCK_LEN as u64 + 100)
        .unwrap();
    let mut want = recs.clone();
    want.remove(hit);
    assert_eq!(data(&s), want);
    let crc = s
        .corruptions
        .iter()
        .find(|c| c.reason.contains("crc32c"))
        .unwrap();
    let damaged = &clean.records[hit];
    if damaged.offset >= BLOCK_LEN as u64 {
        // A record inside block 1: exactly its bytes.
        assert_eq!(
            (crc.offset, crc.offset + crc.len),
            (damaged.offset, damaged.end)
        );
        assert_eq!(s.corruptions.len(), 1, "{:?}", s.corruptions);
    } else {
        // The record crossing into block 1: its FIRST fragment is dropped with it.
        assert_eq!(crc.offset, BLOCK_LEN as u64);
        assert_eq!(crc.offset + crc.len, damaged.end);
        assert_eq!(s.corruptions.len(), 2, "{:?}", s.corruptions);
    }
    assert!(crc.reason.contains("the next record starts at"), "{crc:?}");
    assert_eq!(s.first_damage, Some(crc.offset));
    assert!(s.intact_after_damage());
}

/// The case independent testing found: damage in the block where the last record starts
/// cost that record too (the rest of the block was dropped, then its continuation as an
/// orphan). Every single-bit flip of every byte of the block before the last record's
/// start now costs only the record it hits.
#[test]
fn journal_damage_before_the_last_record_keeps_it() {
    // Records of 440 bytes until one crosses the first block boundary; it is the last.
    let mut recs: Vec<Vec<u8>> = Vec::new();
    let mut w = JournalWriter::new(Vec::new(), 0);
    loop {
        let i = recs.len();
        let r: Vec<u8> = (0..440).map(|j| (i * 7 + j * 13) as u8).collect();
        let start = w.offset();
        w.append(&[&r]).unwrap();
        recs.push(r);
        if w.offset() > BLOCK_LEN as u64 {
            assert!(start + HEADER_LEN as u64 <= BLOCK_LEN as u64);
            break;
        }
    }
    let bytes = w.into_inner();
    let clean = scan(&bytes);
    let last = clean.records.last().unwrap().clone();
    let step = 7;
    for at in (0..last.offset as usize).step_by(step) {
        let mut bad = bytes.clone();
        bad[at] ^= 1 << (at % 8);
        let s = scan(&bad);
        let hit = clean
            .records
            .iter()
            .position(|r| r.offset as usize <= at && (r.end as usize) > at)
            .unwrap();
        let mut want = recs.clone();
        want.remove(hit);
        assert_eq!(data(&s), want, "flip at {at}");
        assert_eq!(s.records.last(), Some(&last), "flip at {at}");
        assert!(s.intact_after_damage(), "flip at {at}");
    }
}

/// A flip in a fragment's length field: its data no longer verifies, and neither does
/// where the length points; the scan still finds the next record.
#[test]
fn journal_damaged_length_resynchronises() {
    let recs: Vec<Vec<u8>> = (0..20u8).map(|i| vec![i; 300]).collect();
    let bytes = write(&recs);
    let clean = scan(&bytes);
    let r = &clean.records[5];
    for bit in 0..16 {
        let mut bad = bytes.clone();
        bad[r.offset as usize + 4 + bit / 8] ^= 1 << (bit % 8);
        let s = scan(&bad);
        let mut want = recs.clone();
        want.remove(5);
        assert_eq!(data(&s), want, "length bit {bit}");
    }
    // At the end of the file, a length pointing past it with records after it.
    let mut bad = bytes.clone();
    bad[r.offset as usize + 5] ^= 0x80;
    let s = scan(&bad);
    assert_eq!(s.records.len(), recs.len() - 1);
    assert!(s.corruptions[0].reason.contains("next record starts at"));
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
    assert_eq!(data(&s), vec![recs[0].clone(), recs[2].clone()]);
    let lost = s
        .corruptions
        .iter()
        .find(|c| c.offset == big.offset)
        .unwrap();
    assert_eq!(lost.len, BLOCK_LEN as u64 - big.offset);
    assert!(lost.reason.contains("zero-filled"), "{lost:?}");
    // The orphaned fragments after the hole are reported too, and the hole is damage with
    // intact bytes after it.
    assert!(s
        .corruptions
        .iter()
        .any(|c| c.offset >= 2 * BLOCK_LEN as u64 && c.reason.contains("continuation")));
    assert_eq!(s.first_damage, Some(BLOCK_LEN as u64));
    assert!(s.intact_after_damage());
    // The same with the whole tail of the file zeroed (preallocated space): a torn tail.
    let mut bytes = write(&recs[..2]);
    let cut = BLOCK_LEN + 10;
    bytes[cut..].fill(0);
    let s = scan(&bytes);
    assert_eq!(s.records.len(), 1);
    assert_eq!(s.valid_end, clean.records[0].end);
    assert!(!s.intact_after_damage(), "{s:?}");
}

/// Zeros over part of a block (a lost sector) with records after them in the same block:
/// reading resumes at the first of them.
#[test]
fn journal_zeroed_sector_resynchronises() {
    let recs: Vec<Vec<u8>> = (1..40u8).map(|i| vec![i; 200]).collect();
    let mut bytes = write(&recs);
    let clean = scan(&bytes);
    let (from, to) = (
        clean.records[10].offset as usize,
        clean.records[12].offset as usize + 3,
    );
    bytes[from..to].fill(0);
    let s = scan(&bytes);
    let mut want = recs.clone();
    want.drain(10..13);
    assert_eq!(data(&s), want);
    assert_eq!(s.first_damage, Some(from as u64));
    assert!(s.intact_after_damage());
    // The non-zero bytes of the record cut by the zeros are reported.
    let region = &s.corruptions[0];
    assert_eq!(region.offset, from as u64);
    assert_eq!(region.offset + region.len, clean.records[13].offset);
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
        assert!(s.intact_end <= len as u64);
    }
}

/// The fuzz target's structured mode, deterministically: journals of records of many
/// sizes (many crossing blocks), damaged by flips, zeroed ranges and blocks, garbage and
/// truncation. Every record reported was written, byte for byte, where it is reported;
/// every record whose own bytes are untouched is reported; and when such a record lies
/// after the first damage, the scan says intact bytes follow the damage.
#[test]
fn journal_random_damage_keeps_every_untouched_record() {
    let mut x = 0x5EED_F00D_u64;
    let mut next = move |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    let mut checked = 0;
    for case in 0..600 {
        let mut w = JournalWriter::new(Vec::new(), 0);
        let mut written: Vec<(u64, u64, Vec<u8>)> = Vec::new();
        while w.offset() < 3 * BLOCK_LEN as u64 {
            let len = match next(4) {
                0 => next(64),
                1 => next(4096),
                2 => BLOCK_LEN - 2 * HEADER_LEN - next(16),
                _ => next(2 * BLOCK_LEN),
            };
            let salt = written.len() as u8;
            let data: Vec<u8> = (0..len)
                .map(|j| (j as u8).wrapping_mul(31) ^ salt)
                .collect();
            let left = BLOCK_LEN - w.offset() as usize % BLOCK_LEN;
            let offset = if left < HEADER_LEN {
                w.offset() + left as u64
            } else {
                w.offset()
            };
            let end = w.append(&[&data]).unwrap();
            written.push((offset, end, data));
        }
        let original = w.into_inner();
        let mut bytes = original.clone();
        for _ in 0..1 + next(3) {
            let at = next(bytes.len());
            match next(5) {
                0 => bytes[at] ^= 1 << next(8),
                1 => {
                    let to = (at + 1 + next(600)).min(bytes.len());
                    bytes[at..to].fill(0);
                }
                2 => {
                    let start = at / BLOCK_LEN * BLOCK_LEN;
                    let end = (start + BLOCK_LEN).min(bytes.len());
                    bytes[start..end].fill(0);
                }
                3 => {
                    let to = (at + 1 + next(64)).min(bytes.len());
                    for b in &mut bytes[at..to] {
                        *b = next(256) as u8;
                    }
                }
                _ => bytes.truncate(at.max(1)),
            }
        }
        let s = scan(&bytes);
        for r in &s.records {
            let w = written.iter().find(|w| w.0 == r.offset);
            let w =
                w.unwrap_or_else(|| panic!("case {case}: record at {} never written", r.offset));
            assert_eq!((r.end, &r.data), (w.1, &w.2), "case {case}");
        }
        for w in &written {
            let (from, to) = (w.0 as usize, w.1 as usize);
            if bytes.get(from..to) != Some(&original[from..to]) {
                continue;
            }
            checked += 1;
            assert!(
                s.records.iter().any(|r| r.offset == w.0),
                "case {case}: intact record {from}..{to} not reported: {:?}",
                s.corruptions
            );
            if s.first_damage.is_some_and(|d| d < w.0) {
                assert!(s.intact_after_damage(), "case {case}");
            }
        }
    }
    assert!(checked > 1000, "{checked}");
}
