//! Hostile and damaged input: the reader must answer every byte string with a typed
//! [`FormatError`] (never a panic), never allocate beyond the declared limits, and never report
//! a corrupted CRC-covered block as good.
//!
//! A tracking global allocator records the largest single allocation of each test thread, so
//! the tests can check that a hostile size field does not turn into an allocation.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::io::Cursor;

use serde_json::Map;
use wshard::codec::{Codec, CompressionPolicy, StoredCodec};
use wshard::consts::{role, MAX_DECOMPRESS_BYTES, MAX_STRING_TABLE_BYTES};
use wshard::episode::{AuxBlock, Channel, DType, Episode, EpisodeWriteOptions, Lane, Timebase};
use wshard::header::ShardHeader;
use wshard::manifest::{chunk_file_name, ChunkRef, Manifest};
use wshard::read::{ReadLimits, ShardReader};
use wshard::write::{BlockOptions, Reserve, ShardOptions, ShardWriter};
use wshard::FormatError;

// ---------------------------------------------------------------------------------------------
// Largest-allocation tracking (per thread: libtest runs every test on its own thread).

#[allow(unsafe_code)]
mod alloc_track {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static LARGEST: Cell<usize> = const { Cell::new(0) };
    }

    fn note(size: usize) {
        // `try_with`: the slot may be gone while the thread shuts down.
        let _ = LARGEST.try_with(|c| {
            if size > c.get() {
                c.set(size);
            }
        });
    }

    pub struct Tracking;

    // SAFETY: every call is forwarded unchanged to the system allocator; the bookkeeping
    // touches only a const-initialized thread-local `Cell`, which never allocates.
    unsafe impl GlobalAlloc for Tracking {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            note(layout.size());
            // SAFETY: same contract as the caller's.
            unsafe { System.alloc(layout) }
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            note(layout.size());
            // SAFETY: same contract as the caller's.
            unsafe { System.alloc_zeroed(layout) }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            note(new_size);
            // SAFETY: same contract as the caller's.
            unsafe { System.realloc(ptr, layout, new_size) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: same contract as the caller's.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    /// Run `f` and return its result with the largest single allocation it made.
    pub fn largest_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
        LARGEST.with(|c| c.set(0));
        let out = f();
        (out, LARGEST.with(Cell::get))
    }
}

#[global_allocator]
static GLOBAL: alloc_track::Tracking = alloc_track::Tracking;

use alloc_track::largest_during;

/// No hostile header in these tests may cause an allocation above this.
const SMALL: usize = 1 << 20;

// ---------------------------------------------------------------------------------------------
// Fixtures.

/// Three channels (zstd, LZ4, raw), T = 5, plus an omen block; compressed with the golden
/// generator's "any size, keep when smaller" policy so that the small blocks really are
/// stored compressed.
fn fixture_episode() -> Episode {
    let mut ep = Episode::new("ep<1>", "Sim&Env-v0", Timebase::ticks(50.0));
    ep.push_channel(
        Channel::from_f32("state", Lane::Signal, vec![3], &[1.0; 15])
            .unwrap()
            .with_codec(Codec::Zstd { level: 3 }),
    );
    ep.push_channel(
        Channel::from_f32("ctrl", Lane::Action, vec![4], &[0.5; 20])
            .unwrap()
            .with_codec(Codec::Lz4),
    );
    ep.push_channel(Channel::new(
        "cam",
        Lane::Signal,
        DType::U8,
        vec![2, 2],
        (0..20).collect(),
    ));
    ep.set_reward(vec![0.0, 0.5, 1.0, -1.0, 2.0]);
    ep.set_done(vec![false, false, false, false, true]);
    ep.aux
        .push(AuxBlock::omen("state", "m1", (0..60u8).collect()));
    ep
}

/// The fixture as a reader returns it: codecs are a write-side choice and are not restored.
fn fixture_read_back() -> Episode {
    let mut ep = fixture_episode();
    for ch in &mut ep.channels {
        ch.codec = None;
    }
    ep
}

fn write_opts() -> EpisodeWriteOptions {
    EpisodeWriteOptions {
        policy: CompressionPolicy::any_smaller(),
        ..EpisodeWriteOptions::default()
    }
}

fn fixture_manifest() -> Manifest {
    let mut m = Manifest::new("ep<1>", "Sim&Env-v0");
    for k in 0..2u64 {
        m.push_chunk(ChunkRef {
            chunk_index: k,
            uri: chunk_file_name("ep1", k),
            sha256: "ab".repeat(32),
            timestep_range: [k * 5, k * 5 + 4],
            length_t: 5,
            extra: Map::new(),
        });
    }
    m.status = Some("complete".into());
    m
}

/// One block of a pristine file: where its stored bytes are and what it decodes to.
#[derive(Clone, Debug)]
struct Block {
    name: String,
    start: usize,
    end: usize,
    codec: StoredCodec,
    data: Vec<u8>,
}

/// A pristine file and its layout.
struct Fixture {
    bytes: Vec<u8>,
    blocks: Vec<Block>,
    data_section_offset: usize,
    strings_end: usize,
}

impl Fixture {
    fn new(bytes: Vec<u8>) -> Self {
        let r = ShardReader::from_bytes(bytes.clone()).unwrap();
        let blocks = r
            .index()
            .entries()
            .iter()
            .enumerate()
            .map(|(i, e)| Block {
                name: r.index().name(i).unwrap().to_owned(),
                start: usize::try_from(e.data_offset).unwrap(),
                end: usize::try_from(e.data_offset + e.disk_size).unwrap(),
                codec: r.index().stored_codec(i).unwrap(),
                data: r.read_entry(i).unwrap(),
            })
            .collect();
        let h = r.header();
        let names_len: u64 = r
            .index()
            .entries()
            .iter()
            .map(|e| u64::from(e.name_len))
            .sum();
        Self {
            blocks,
            data_section_offset: usize::try_from(h.data_section_offset).unwrap(),
            strings_end: usize::try_from(h.string_table_offset + names_len).unwrap(),
            bytes,
        }
    }

    fn episode() -> Self {
        Self::new(fixture_episode().to_bytes(&write_opts()).unwrap())
    }

    fn manifest() -> Self {
        Self::new(fixture_manifest().to_bytes().unwrap())
    }

    /// The block whose stored bytes contain `offset`.
    fn block_at(&self, offset: usize) -> Option<usize> {
        self.blocks
            .iter()
            .position(|b| (b.start..b.end).contains(&offset))
    }

    /// Bytes nobody reads: reserved header bytes, string-table padding, padding between blocks.
    fn inert(&self, offset: usize) -> bool {
        (48..64).contains(&offset)
            || (self.strings_end..self.data_section_offset).contains(&offset)
            || (offset >= self.data_section_offset && self.block_at(offset).is_none())
    }

    fn entry(&self, name: &str) -> usize {
        self.blocks.iter().position(|b| b.name == name).unwrap()
    }
}

#[test]
fn malformed_fixture_has_a_zstd_and_an_lz4_block() {
    let f = Fixture::episode();
    let codecs: Vec<(&str, StoredCodec)> = f
        .blocks
        .iter()
        .map(|b| (b.name.as_str(), b.codec))
        .collect();
    assert!(
        codecs.contains(&("signal/state", StoredCodec::Zstd)),
        "{codecs:?}"
    );
    assert!(
        codecs.contains(&("action/ctrl", StoredCodec::Lz4)),
        "{codecs:?}"
    );
    assert!(
        codecs.contains(&("signal/cam", StoredCodec::Raw)),
        "{codecs:?}"
    );
    assert_eq!(
        Episode::from_bytes(f.bytes.clone()).unwrap(),
        fixture_read_back()
    );
    let r = ShardReader::from_bytes(Fixture::manifest().bytes).unwrap();
    assert_eq!(Manifest::read(&r).unwrap(), fixture_manifest());
}

// ---------------------------------------------------------------------------------------------
// Helpers.

/// Everything a reader can do with a WShard file; the first error.
fn read_episode_all(bytes: Vec<u8>, limits: ReadLimits) -> Result<Episode, FormatError> {
    let r = ShardReader::new(bytes, limits)?;
    for i in 0..r.index().len() {
        r.read_entry(i)?;
    }
    let _ = r.check_all();
    Episode::read(&r)
}

/// Everything a reader can do with a manifest file; the first error.
fn read_manifest_all(bytes: Vec<u8>, limits: ReadLimits) -> Result<Manifest, FormatError> {
    let r = ShardReader::new(bytes, limits)?;
    for i in 0..r.index().len() {
        r.read_entry(i)?;
    }
    let _ = r.check_all();
    Manifest::read(&r)
}

fn lenient() -> ReadLimits {
    ReadLimits {
        require_exact_file_size: false,
        ..ReadLimits::default()
    }
}

fn put_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}

fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

fn get_u64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

/// Header field offsets.
const H_INDEX_ENTRY_SIZE: usize = 10;
const H_ENTRY_COUNT: usize = 12;
const H_STRING_TABLE_OFFSET: usize = 16;
const H_DATA_SECTION_OFFSET: usize = 24;
const H_TOTAL_FILE_SIZE: usize = 40;

/// Offset of field `field` of index entry `i`.
fn ent(i: usize, field: usize) -> usize {
    64 + 48 * i + field
}
const E_NAME_OFFSET: usize = 8;
const E_NAME_LEN: usize = 12;
const E_FLAGS: usize = 14;
const E_DATA_OFFSET: usize = 16;
const E_DISK_SIZE: usize = 24;
const E_ORIG_SIZE: usize = 32;

/// Assert that the error's message contains every one of `parts`.
fn says(err: &FormatError, parts: &[&str]) {
    let msg = err.to_string();
    for p in parts {
        assert!(msg.contains(p), "message {msg:?} does not mention {p:?}");
    }
}

/// A SplitMix64 generator: deterministic, no dependency.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap()
    }
}

// ---------------------------------------------------------------------------------------------
// (a) Truncation at every offset.

fn check_truncations(f: &Fixture, read: fn(Vec<u8>, ReadLimits) -> Result<(), FormatError>) {
    let full = f.bytes.len();
    read(f.bytes.clone(), ReadLimits::default()).unwrap();
    for len in 0..full {
        let prefix = f.bytes[..len].to_vec();
        // Go's rule: total_file_size must be the file length.
        let err = read(prefix.clone(), ReadLimits::default()).unwrap_err();
        if len < 64 {
            assert!(
                matches!(&err, FormatError::Truncated { what, offset: 0, end: 64, len: l }
                    if what == "header" && *l == len as u64),
                "len {len}: {err:?}"
            );
            says(&err, &["header", "0..64", &len.to_string()]);
            continue;
        }
        assert!(
            matches!(err, FormatError::FileSizeMismatch { header, actual }
                if header == full as u64 && actual == len as u64),
            "len {len}: {err:?}"
        );
        says(&err, &[&full.to_string(), &len.to_string()]);
        // Python's leniency: total_file_size may not exceed the file.
        let err = read(prefix.clone(), lenient()).unwrap_err();
        assert!(
            matches!(&err, FormatError::Truncated { end, len: l, .. }
                if *end == full as u64 && *l == len as u64),
            "lenient len {len}: {err:?}"
        );
        // A truncation that also fixed total_file_size up: the index checks must catch it.
        let mut fixed = prefix;
        put_u64(&mut fixed, H_TOTAL_FILE_SIZE, len as u64);
        let err = read(fixed, ReadLimits::default()).unwrap_err();
        match &err {
            FormatError::BadHeader { field, .. } => {
                assert_eq!(*field, "data_section_offset", "len {len}");
                assert!(len < f.data_section_offset, "len {len}: {err}");
                says(&err, &["data_section_offset", &len.to_string()]);
            }
            FormatError::BadEntry { entry, message, .. } => {
                let b = &f.blocks[*entry as usize];
                assert!(
                    message.contains("extends past file end"),
                    "len {len}: {err}"
                );
                assert!(b.end > len, "len {len}: {err}");
                says(&err, &[&b.name, &len.to_string()]);
            }
            other => panic!("len {len}: unexpected {other:?}"),
        }
    }
}

#[test]
fn malformed_truncated_episode_is_an_error_at_every_offset() {
    check_truncations(&Fixture::episode(), |b, l| read_episode_all(b, l).map(drop));
}

#[test]
fn malformed_truncated_manifest_is_an_error_at_every_offset() {
    check_truncations(&Fixture::manifest(), |b, l| {
        read_manifest_all(b, l).map(drop)
    });
}

// ---------------------------------------------------------------------------------------------
// (b) Bit flips.

/// What one damaged file produced, for the summary assertions.
#[derive(Default, Debug)]
struct FlipStats {
    cases: usize,
    data_hits_caught: usize,
    /// A flip inside a compressed block that still decoded to the original bytes (e.g. an LZ4
    /// match offset moved onto an identical run): harmless, nothing wrong is returned.
    compressed_benign: usize,
    index_hits_opened: usize,
}

/// Check one damaged episode file against the pristine fixture.
fn check_episode_mutant(
    f: &Fixture,
    want: &Episode,
    bytes: Vec<u8>,
    flips: &[usize],
    s: &mut FlipStats,
) {
    s.cases += 1;
    // Flips in padding change nothing; classify by the others.
    let live: Vec<usize> = flips.iter().copied().filter(|&o| !f.inert(o)).collect();
    let hits: Vec<Option<usize>> = live.iter().map(|&o| f.block_at(o)).collect();
    let reader = ShardReader::from_bytes(bytes);
    if live.is_empty() {
        let r = reader.unwrap();
        assert_eq!(
            &Episode::read(&r).unwrap(),
            want,
            "flips {flips:?} in padding"
        );
        return;
    }
    if hits.iter().all(Option::is_some) {
        // Only stored block bytes changed: the index is intact.
        let r = reader.unwrap();
        let mut any_raw_hit = false;
        let mut all_same = true;
        for (j, b) in f.blocks.iter().enumerate() {
            let hit = hits.contains(&Some(j));
            match (hit, r.read_entry(j)) {
                (false, got) => assert_eq!(got.unwrap(), b.data, "untouched `{}`", b.name),
                (true, Ok(got)) => {
                    assert_ne!(
                        b.codec,
                        StoredCodec::Raw,
                        "flips {flips:?} in raw `{}` reported good",
                        b.name
                    );
                    assert_eq!(
                        got, b.data,
                        "flips {flips:?}: corrupted `{}` reported good",
                        b.name
                    );
                    s.compressed_benign += 1;
                }
                (true, Err(e)) => {
                    any_raw_hit |= b.codec == StoredCodec::Raw;
                    all_same = false;
                    s.data_hits_caught += 1;
                    match &e {
                        FormatError::BlockCrc { name, .. } => assert_eq!(name, &b.name),
                        FormatError::Decompress { name, codec, .. } => {
                            assert_eq!(name, &b.name);
                            assert_eq!(*codec, b.codec.name());
                        }
                        other => panic!("flips {flips:?} in `{}`: {other:?}", b.name),
                    }
                    says(&e, &[&b.name]);
                }
            }
        }
        match Episode::read(&r) {
            Ok(ep) => {
                assert!(
                    !any_raw_hit,
                    "flips {flips:?}: damaged episode read as good"
                );
                assert!(all_same);
                assert_eq!(&ep, want);
            }
            Err(e) => assert!(
                !all_same,
                "flips {flips:?}: every block decoded, but Episode::read failed: {e}"
            ),
        }
        return;
    }
    // Header, index or string table damaged: anything but a panic may happen, but whatever
    // reads as good must be genuine.
    let Ok(r) = reader else { return };
    s.index_hits_opened += 1;
    for i in 0..r.index().len() {
        if let Ok(d) = r.read_entry(i) {
            assert!(
                f.blocks.iter().any(|b| b.data == d),
                "flips {flips:?}: entry {i} decoded to bytes no block had"
            );
        }
    }
    if let Ok(ep) = Episode::read(&r) {
        // Names are not checksummed: an aux block may be renamed (or shadowed), nothing else.
        let strip = |e: &Episode| Episode {
            aux: Vec::new(),
            ..e.clone()
        };
        assert_eq!(strip(&ep), strip(want), "flips {flips:?}");
        for a in &ep.aux {
            assert!(want.aux.iter().any(|w| w.data == a.data), "flips {flips:?}");
        }
    }
}

#[test]
fn malformed_episode_every_single_bit_flip() {
    let f = Fixture::episode();
    let want = fixture_read_back();
    let mut s = FlipStats::default();
    for off in 0..f.bytes.len() {
        for bit in 0..8 {
            let mut b = f.bytes.clone();
            b[off] ^= 1 << bit;
            check_episode_mutant(&f, &want, b, &[off], &mut s);
        }
    }
    assert_eq!(s.cases, f.bytes.len() * 8);
    assert!(s.data_hits_caught > 0 && s.index_hits_opened > 0, "{s:?}");
    eprintln!("single-bit flips: {s:?}");
}

#[test]
fn malformed_episode_random_multi_bit_flips() {
    let f = Fixture::episode();
    let want = fixture_read_back();
    let mut rng = SplitMix(0x5eed_0001);
    let mut s = FlipStats::default();
    let data_start = f.data_section_offset;
    for case in 0..3000 {
        let mut b = f.bytes.clone();
        let n = 2 + rng.below(7);
        // Half the cases stay inside the data section, where the CRC rule applies.
        let lo = if case % 2 == 0 { data_start } else { 0 };
        let mut flips = Vec::new();
        for _ in 0..n {
            let off = lo + rng.below(b.len() - lo);
            b[off] ^= 1 << rng.below(8);
            flips.push(off);
        }
        // Two flips of the same bit cancel; re-check against the original bytes.
        flips.retain(|&o| b[o] != f.bytes[o]);
        flips.dedup();
        if flips.is_empty() {
            continue;
        }
        check_episode_mutant(&f, &want, b, &flips, &mut s);
    }
    assert!(s.cases > 2900, "{s:?}");
    eprintln!("multi-bit flips: {s:?}");
}

#[test]
fn malformed_manifest_bit_flips() {
    let f = Fixture::manifest();
    let want = fixture_manifest();
    let block = &f.blocks[0];
    let mut rng = SplitMix(0x5eed_0002);
    let mut cases: Vec<Vec<(usize, u8)>> = (0..f.bytes.len())
        .flat_map(|o| (0..8).map(move |bit| vec![(o, 1u8 << bit)]))
        .collect();
    for _ in 0..2000 {
        let n = 2 + rng.below(7);
        cases.push(
            (0..n)
                .map(|_| (rng.below(f.bytes.len()), 1u8 << rng.below(8)))
                .collect(),
        );
    }
    for flips in cases {
        let mut b = f.bytes.clone();
        for &(o, m) in &flips {
            b[o] ^= m;
        }
        let changed: Vec<usize> = (0..b.len()).filter(|&o| b[o] != f.bytes[o]).collect();
        if changed.is_empty() {
            continue;
        }
        let in_data = changed.iter().any(|&o| f.block_at(o).is_some());
        let in_index = changed
            .iter()
            .any(|&o| o < f.data_section_offset && !f.inert(o));
        let got = read_manifest_all(b, ReadLimits::default());
        if in_data && !in_index {
            let err = got.unwrap_err();
            assert!(
                matches!(&err, FormatError::BlockCrc { name, .. } if *name == block.name),
                "{changed:?}: {err:?}"
            );
            says(&err, &["meta/manifest", "crc32c"]);
        } else if let Ok(m) = got {
            // The one block is CRC-checked JSON: whatever opens is the original manifest.
            assert_eq!(m, want, "{changed:?}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// (c) Targeted hostile headers.

/// The fixture with `patch` applied; returns the first error of a full read and the largest
/// allocation the read made.
fn hostile(patch: impl FnOnce(&mut Vec<u8>, &Fixture)) -> (FormatError, usize) {
    let f = Fixture::episode();
    let mut b = f.bytes.clone();
    patch(&mut b, &f);
    let (got, largest) = largest_during(|| read_episode_all(b, ReadLimits::default()));
    (got.unwrap_err(), largest)
}

#[test]
fn malformed_entry_count_u32_max() {
    let (err, largest) = hostile(|b, _| put_u32(b, H_ENTRY_COUNT, u32::MAX));
    assert!(
        matches!(err, FormatError::LimitExceeded { limit: "entry_count", value, max: 10_000_000 }
            if value == u64::from(u32::MAX)),
        "{err:?}"
    );
    says(&err, &["entry_count", "4294967295", "10000000"]);
    assert!(largest < SMALL, "{largest}");
}

#[test]
fn malformed_entry_count_one_over_the_limit() {
    let (err, largest) = hostile(|b, _| put_u32(b, H_ENTRY_COUNT, 10_000_001));
    assert!(
        matches!(
            err,
            FormatError::LimitExceeded {
                limit: "entry_count",
                value: 10_000_001,
                max: 10_000_000
            }
        ),
        "{err:?}"
    );
    says(&err, &["entry_count", "10000001", "10000000"]);
    assert!(largest < SMALL, "{largest}");
}

#[test]
fn malformed_entry_count_at_the_limit_does_not_allocate_the_index() {
    // 10,000,000 entries would be a 480 MB index; the file is a few hundred bytes.
    let (err, largest) = hostile(|b, _| put_u32(b, H_ENTRY_COUNT, 10_000_000));
    assert!(
        matches!(
            err,
            FormatError::BadHeader {
                field: "string_table_offset",
                offset: 16,
                ..
            }
        ),
        "{err:?}"
    );
    says(
        &err,
        &["string_table_offset", "480000064", "10000000 entries"],
    );
    assert!(largest < SMALL, "{largest}");
}

/// A real file whose string table is `strings` bytes, with no entries.
fn file_with_string_table(strings: u64) -> Vec<u8> {
    let mut h = ShardHeader::new(role::WSHARD, 0x00A2, 64, 0, 0);
    h.data_section_offset = 64 + strings;
    h.total_file_size = 64 + strings;
    let mut v = vec![0u8; usize::try_from(64 + strings).unwrap()];
    v[..64].copy_from_slice(&h.encode());
    v
}

#[test]
fn malformed_string_table_over_100_mib() {
    let over = file_with_string_table(MAX_STRING_TABLE_BYTES + 1);
    let (got, largest) = largest_during(|| ShardReader::from_bytes(over));
    let err = got.unwrap_err();
    assert!(
        matches!(err, FormatError::LimitExceeded { limit: "string table size", value, max }
            if value == MAX_STRING_TABLE_BYTES + 1 && max == MAX_STRING_TABLE_BYTES),
        "{err:?}"
    );
    says(&err, &["string table size", "104857601", "104857600"]);
    assert!(largest < SMALL, "{largest}");

    // Exactly at the limit is accepted, and costs no more than the limit.
    let at = file_with_string_table(MAX_STRING_TABLE_BYTES);
    let (got, largest) = largest_during(|| ShardReader::from_bytes(at));
    assert_eq!(got.unwrap().index().len(), 0);
    assert!(largest <= usize::try_from(MAX_STRING_TABLE_BYTES).unwrap() + SMALL);

    // A configured lower limit is honoured the same way.
    let f = Fixture::episode();
    let limits = ReadLimits {
        max_string_table_bytes: 10,
        ..ReadLimits::default()
    };
    let err = ShardReader::new(f.bytes.clone(), limits).unwrap_err();
    assert!(
        matches!(
            err,
            FormatError::LimitExceeded {
                limit: "string table size",
                max: 10,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn malformed_total_file_size_wrong() {
    let f = Fixture::episode();
    let len = f.bytes.len() as u64;
    for claimed in [len + 1, len - 1, 0, u64::MAX] {
        let mut b = f.bytes.clone();
        put_u64(&mut b, H_TOTAL_FILE_SIZE, claimed);
        let err = ShardReader::from_bytes(b.clone()).unwrap_err();
        assert!(
            matches!(err, FormatError::FileSizeMismatch { header, actual }
                if header == claimed && actual == len),
            "{err:?}"
        );
        says(
            &err,
            &["total_file_size", &claimed.to_string(), &len.to_string()],
        );
        // Lenient: larger than the file is truncation; smaller cuts the last block off.
        let err = ShardReader::new(b, lenient()).unwrap_err();
        if claimed > len {
            assert!(
                matches!(&err, FormatError::Truncated { end, len: l, .. } if *end == claimed && *l == len),
                "{err:?}"
            );
            says(&err, &["total_file_size", &claimed.to_string()]);
        } else {
            assert!(
                matches!(
                    &err,
                    FormatError::BadEntry { .. }
                        | FormatError::BadHeader {
                            field: "data_section_offset",
                            ..
                        }
                ),
                "{err:?}"
            );
        }
    }
}

#[test]
fn malformed_data_offset_plus_disk_size_overflows_u64() {
    let f = Fixture::episode();
    let i = f.entry("signal/cam");
    let (err, largest) = hostile(|b, _| {
        put_u64(b, ent(i, E_DATA_OFFSET), u64::MAX - 5);
        put_u64(b, ent(i, E_DISK_SIZE), 10);
    });
    assert!(
        matches!(&err, FormatError::BadEntry { entry, offset, message }
            if *entry as usize == i && *offset == ent(i, 0) as u64 && message.contains("extends past file end")),
        "{err:?}"
    );
    says(
        &err,
        &[
            &format!("index entry {i}"),
            "signal/cam",
            &(u64::MAX - 5).to_string(),
            "+10",
        ],
    );
    assert!(largest < SMALL, "{largest}");

    let (err, _) = hostile(|b, _| put_u64(b, ent(i, E_DISK_SIZE), u64::MAX));
    assert!(
        matches!(&err, FormatError::BadEntry { entry, .. } if *entry as usize == i),
        "{err:?}"
    );
    says(&err, &["signal/cam", &u64::MAX.to_string()]);
}

#[test]
fn malformed_non_monotonic_offsets() {
    let f = Fixture::episode();
    let i = f.entry("signal/cam");
    let prev_start = f.blocks[i - 1].start as u64;
    let (err, _) = hostile(|b, _| put_u64(b, ent(i, E_DATA_OFFSET), prev_start));
    assert!(
        matches!(&err, FormatError::BadEntry { entry, message, .. }
            if *entry as usize == i && message.contains("not monotonic")),
        "{err:?}"
    );
    says(
        &err,
        &["signal/cam", &prev_start.to_string(), "previous block end"],
    );

    // Before the data section.
    let (err, _) = hostile(|b, _| put_u64(b, ent(0, E_DATA_OFFSET), 64));
    assert!(
        matches!(&err, FormatError::BadEntry { entry: 0, .. }),
        "{err:?}"
    );
    says(
        &err,
        &["meta/wshard", "data_offset 64", "data_section_offset"],
    );
}

#[test]
fn malformed_name_offset_out_of_range() {
    let (err, largest) = hostile(|b, _| put_u32(b, ent(2, E_NAME_OFFSET), u32::MAX));
    assert!(
        matches!(&err, FormatError::BadEntry { entry: 2, message, .. } if message.contains("outside")),
        "{err:?}"
    );
    says(&err, &["index entry 2", "4294967295", "string table"]);
    assert!(largest < SMALL, "{largest}");

    let (err, _) = hostile(|b, _| put_u16(b, ent(1, E_NAME_LEN), u16::MAX));
    assert!(
        matches!(&err, FormatError::BadEntry { entry: 1, .. }),
        "{err:?}"
    );
    says(&err, &["index entry 1", "outside"]);
}

#[test]
fn malformed_non_utf8_name() {
    let (err, _) = hostile(|b, f| {
        let at = f.strings_end - 1; // last byte of the last name
        b[at] = 0xFF;
    });
    let last = Fixture::episode().blocks.len() - 1;
    assert!(
        matches!(&err, FormatError::BadEntry { entry, message, .. }
            if *entry as usize == last && message.contains("not UTF-8")),
        "{err:?}"
    );
    says(&err, &[&format!("index entry {last}"), "UTF-8"]);
}

#[test]
fn malformed_index_entry_size_not_48() {
    for size in [0u16, 40, 49, u16::MAX] {
        let (err, _) = hostile(|b, _| put_u16(b, H_INDEX_ENTRY_SIZE, size));
        assert!(
            matches!(
                err,
                FormatError::BadHeader {
                    field: "index_entry_size",
                    offset: 10,
                    ..
                }
            ),
            "{err:?}"
        );
        says(&err, &["index_entry_size", &format!("is {size}"), "48"]);
    }
}

#[test]
fn malformed_section_offsets() {
    let (err, _) = hostile(|b, _| put_u64(b, H_STRING_TABLE_OFFSET, 100));
    assert!(
        matches!(
            err,
            FormatError::BadHeader {
                field: "string_table_offset",
                ..
            }
        ),
        "{err:?}"
    );
    says(&err, &["string_table_offset", "is 100"]);

    let (err, _) = hostile(|b, _| {
        let st = get_u64(b, H_STRING_TABLE_OFFSET);
        put_u64(b, H_DATA_SECTION_OFFSET, st - 1);
    });
    assert!(
        matches!(
            err,
            FormatError::BadHeader {
                field: "data_section_offset",
                ..
            }
        ),
        "{err:?}"
    );
    says(&err, &["data_section_offset", "before string_table_offset"]);

    let (err, _) = hostile(|b, _| put_u64(b, H_DATA_SECTION_OFFSET, u64::MAX));
    assert!(
        matches!(
            err,
            FormatError::BadHeader {
                field: "data_section_offset",
                ..
            }
        ),
        "{err:?}"
    );
    says(
        &err,
        &[
            "data_section_offset",
            &u64::MAX.to_string(),
            "past total_file_size",
        ],
    );

    let (err, _) = hostile(|b, _| b[0] = b'X');
    assert!(
        matches!(err, FormatError::BadMagic { found } if &found == b"XHRD"),
        "{err:?}"
    );
    let (err, _) = hostile(|b, _| b[4] = 3);
    assert!(
        matches!(err, FormatError::UnsupportedVersion { found: 3 }),
        "{err:?}"
    );
    says(&err, &["version 3"]);
}

#[test]
fn malformed_compressed_orig_size_2_pow_40_is_a_limit_not_an_allocation() {
    let f = Fixture::episode();
    for name in ["signal/state", "action/ctrl"] {
        let i = f.entry(name);
        let (err, largest) = hostile(|b, _| put_u64(b, ent(i, E_ORIG_SIZE), 1 << 40));
        assert!(
            matches!(err, FormatError::LimitExceeded { limit: "decompressed block size", value, max }
                if value == 1 << 40 && max == MAX_DECOMPRESS_BYTES),
            "{name}: {err:?}"
        );
        says(
            &err,
            &["decompressed block size", "1099511627776", "1073741824"],
        );
        assert!(largest < SMALL, "{name}: {largest}");
    }
}

#[test]
fn malformed_tiny_block_claiming_up_to_the_limit_does_not_reserve_it() {
    // Within the 1 GiB limit, but far beyond what a few stored bytes can decode to: rejected
    // before the output buffer is reserved.
    let f = Fixture::episode();
    for (name, codec) in [("signal/state", "zstd"), ("action/ctrl", "lz4")] {
        let i = f.entry(name);
        for orig in [MAX_DECOMPRESS_BYTES, 1 << 24, 100_000] {
            let (err, largest) = hostile(|b, _| put_u64(b, ent(i, E_ORIG_SIZE), orig));
            assert!(
                matches!(&err, FormatError::Decompress { name: n, codec: c, orig_size, .. }
                    if n == name && *c == codec && *orig_size == orig),
                "{name} {orig}: {err:?}"
            );
            says(&err, &[name, codec, &orig.to_string()]);
            let msg = err.to_string();
            assert!(
                msg.contains("cannot decode") || msg.contains("records a content size of 60"),
                "{msg}"
            );
            assert!(largest < SMALL, "{name} {orig}: {largest}");
        }
        // A plausible but wrong size still fails in the decoder, naming the block.
        let disk = (f.blocks[i].end - f.blocks[i].start) as u64;
        let (err, _) = hostile(|b, _| put_u64(b, ent(i, E_ORIG_SIZE), disk + 1));
        assert!(
            matches!(&err, FormatError::Decompress { name: n, .. } if n == name),
            "{name}: {err:?}"
        );
    }
}

#[test]
fn malformed_zstd_flag_with_garbage_payload() {
    let f = Fixture::episode();
    let i = f.entry("signal/state");
    let blk = f.blocks[i].clone();
    for fill in [0x00u8, 0xFF, 0x28] {
        let (err, largest) = hostile(|b, _| b[blk.start..blk.end].fill(fill));
        assert!(
            matches!(&err, FormatError::Decompress { name, codec: "zstd", offset, disk_size, orig_size: 60, .. }
                if name == "signal/state" && *offset == blk.start as u64 && *disk_size == (blk.end - blk.start) as u64),
            "{err:?}"
        );
        says(
            &err,
            &[
                "signal/state",
                "zstd",
                &blk.start.to_string(),
                "60 expected",
            ],
        );
        assert!(largest < SMALL);
    }
    // A raw block flagged as zstd.
    let j = f.entry("signal/cam");
    let (err, _) = hostile(|b, _| put_u16(b, ent(j, E_FLAGS), 0x0003));
    assert!(
        matches!(&err, FormatError::Decompress { name, codec: "zstd", .. } if name == "signal/cam"),
        "{err:?}"
    );
}

#[test]
fn malformed_lz4_flag_with_garbage_payload() {
    let f = Fixture::episode();
    let i = f.entry("action/ctrl");
    let blk = f.blocks[i].clone();
    for fill in [0xFFu8, 0xF0, 0x1F] {
        let (err, largest) = hostile(|b, _| b[blk.start..blk.end].fill(fill));
        assert!(
            matches!(&err, FormatError::Decompress { name, codec: "lz4", orig_size: 80, .. }
                if name == "action/ctrl"),
            "{fill:#x}: {err:?}"
        );
        says(&err, &["action/ctrl", "lz4", "80 expected"]);
        assert!(largest < SMALL);
    }
    // A raw block flagged as LZ4 decodes to something else (or nothing): never good.
    let j = f.entry("signal/cam");
    let (err, _) = hostile(|b, _| put_u16(b, ent(j, E_FLAGS), 0x0005));
    assert!(
        matches!(&err, FormatError::Decompress { name, codec: "lz4", .. }
            | FormatError::BlockCrc { name, .. } if name == "signal/cam"),
        "{err:?}"
    );
}

#[test]
fn malformed_unknown_codec_and_raw_size_mismatch() {
    let f = Fixture::episode();
    // Compressed bit alone, header default 0, sizes differ: no codec can be chosen.
    let i = f.entry("signal/state");
    let (err, _) = hostile(|b, _| put_u16(b, ent(i, E_FLAGS), 0x0001));
    assert!(
        matches!(&err, FormatError::UnknownCodec { name, entry, flags: 1, default: 0 }
            if name == "signal/state" && *entry as usize == i),
        "{err:?}"
    );
    says(&err, &["signal/state", &format!("entry {i}"), "0x0001"]);
    // A raw block whose orig_size disagrees with disk_size.
    let j = f.entry("signal/cam");
    let (err, largest) = hostile(|b, _| put_u64(b, ent(j, E_ORIG_SIZE), 1 << 40));
    assert!(
        matches!(&err, FormatError::BadEntry { entry, message, .. }
            if *entry as usize == j && message.contains("stored raw")),
        "{err:?}"
    );
    says(
        &err,
        &["signal/cam", "disk_size 20", "orig_size 1099511627776"],
    );
    assert!(largest < SMALL);
}

#[test]
fn malformed_crc_mismatch_names_block_and_values() {
    let f = Fixture::episode();
    let i = f.entry("reward");
    let at = f.blocks[i].start;
    let (err, _) = hostile(|b, _| b[at] ^= 0x80);
    match &err {
        FormatError::BlockCrc {
            name,
            stored,
            computed,
        } => {
            assert_eq!(name, "reward");
            assert_ne!(stored, computed);
            says(
                &err,
                &[
                    "reward",
                    &format!("{stored:#010x}"),
                    &format!("{computed:#010x}"),
                ],
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn malformed_wrong_role() {
    let ep = Fixture::episode();
    let man = Fixture::manifest();
    let r = ShardReader::from_bytes(man.bytes).unwrap();
    let err = Episode::read(&r).unwrap_err();
    assert!(
        matches!(
            err,
            FormatError::WrongRole {
                found: 4,
                expected: 5
            }
        ),
        "{err:?}"
    );
    says(&err, &["0x04", "0x05", "offset 5"]);
    let r = ShardReader::from_bytes(ep.bytes.clone()).unwrap();
    let err = Manifest::read(&r).unwrap_err();
    assert!(
        matches!(
            err,
            FormatError::WrongRole {
                found: 5,
                expected: 4
            }
        ),
        "{err:?}"
    );
    says(&err, &["0x05", "0x04"]);
    let mut b = ep.bytes;
    b[5] = 0x01;
    let err = Episode::from_bytes(b).unwrap_err();
    assert!(
        matches!(
            err,
            FormatError::WrongRole {
                found: 1,
                expected: 5
            }
        ),
        "{err:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Hostile meta JSON (valid container, CRCs right).

fn wshard_with(blocks: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = ShardWriter::new(
        Cursor::new(Vec::new()),
        ShardOptions::wshard(),
        &Reserve::names(blocks.iter().map(|b| b.0)),
    )
    .unwrap();
    for (n, d) in blocks {
        w.write_block(n, d, BlockOptions::raw(0)).unwrap();
    }
    w.finish().unwrap().0.into_inner()
}

fn episode_with_meta(episode: &str, channels: &str, extra: &[(&str, &[u8])]) -> Vec<u8> {
    let mut blocks: Vec<(&str, &[u8])> = vec![
        ("meta/wshard", br#"{"version":1}"#),
        ("meta/episode", episode.as_bytes()),
        ("meta/channels", channels.as_bytes()),
        ("reward", &[0, 0, 0, 0]),
        ("done", &[1]),
    ];
    blocks.extend_from_slice(extra);
    wshard_with(&blocks)
}

#[test]
fn malformed_meta_numbers_out_of_u64_range() {
    // 2^64 written as a float used to saturate to u64::MAX.
    for text in ["18446744073709551616.0", "1e20", "-1", "1.5", "\"5\""] {
        let b = episode_with_meta(&format!(r#"{{"length_T":{text}}}"#), "{}", &[]);
        let err = Episode::from_bytes(b).unwrap_err();
        assert!(
            matches!(&err, FormatError::BadMeta { block, field, .. } if block == "meta/episode" && field == "length_T"),
            "{text}: {err:?}"
        );
        says(&err, &["meta/episode", "length_T", "non-negative integer"]);
    }
    // The largest float below 2^64 is still an integer the reader accepts (and then finds
    // that the blocks do not hold that many steps).
    let b = episode_with_meta(r#"{"length_T":18446744073709549568.0}"#, "{}", &[]);
    let err = Episode::from_bytes(b).unwrap_err();
    assert!(matches!(&err, FormatError::BadEpisode { .. }), "{err:?}");
    says(&err, &["reward", "18446744073709549568", "overflow"]);
}

#[test]
fn malformed_meta_sizes_that_would_overflow_or_allocate() {
    let huge_shape =
        r#"{"channels":[{"id":"x","dtype":"f64","shape":[4294967296,4294967296,4294967296]}]}"#;
    let b = episode_with_meta(r#"{"length_T":1}"#, huge_shape, &[("signal/x", &[0; 8])]);
    let (got, largest) = largest_during(|| Episode::from_bytes(b));
    let err = got.unwrap_err();
    assert!(matches!(&err, FormatError::BadEpisode { .. }), "{err:?}");
    says(&err, &["`x`", "overflows"]);
    assert!(largest < SMALL);

    let big = r#"{"channels":[{"id":"x","dtype":"u8","shape":[4611686018427387904]}]}"#;
    let b = episode_with_meta(r#"{"length_T":1}"#, big, &[("signal/x", &[0; 8])]);
    let (got, largest) = largest_during(|| Episode::from_bytes(b));
    let err = got.unwrap_err();
    assert!(matches!(&err, FormatError::BadEpisode { .. }), "{err:?}");
    says(&err, &["signal/x", "8 bytes", "4611686018427387904"]);
    assert!(largest < SMALL);

    let b = episode_with_meta(&format!(r#"{{"length_T":{}}}"#, u64::MAX), "{}", &[]);
    let err = Episode::from_bytes(b).unwrap_err();
    says(&err, &["reward", "overflow", &u64::MAX.to_string()]);
}

#[test]
fn malformed_meta_json_shapes() {
    // Deep nesting: serde_json's recursion limit, not a stack overflow.
    let deep = "[".repeat(100_000);
    let b = episode_with_meta(&deep, "{}", &[]);
    let err = Episode::from_bytes(b).unwrap_err();
    assert!(
        matches!(&err, FormatError::BadJson { block, .. } if block == "meta/episode"),
        "{err:?}"
    );
    says(&err, &["meta/episode", "recursion"]);

    let b = episode_with_meta("[1,2]", "{}", &[]);
    let err = Episode::from_bytes(b).unwrap_err();
    says(
        &err,
        &["meta/episode", "expected an object, found an array"],
    );

    let b = episode_with_meta(r#"{"timebase":7}"#, "{}", &[]);
    let err = Episode::from_bytes(b).unwrap_err();
    assert!(
        matches!(&err, FormatError::BadMeta { field, .. } if field == "timebase"),
        "{err:?}"
    );

    let bad_prefix = r#"{"channels":[{"id":"x","dtype":"u8","signal_block":"other/x"}]}"#;
    let b = episode_with_meta("{}", bad_prefix, &[("other/x", &[0])]);
    let err = Episode::from_bytes(b).unwrap_err();
    assert!(
        matches!(&err, FormatError::BadMeta { field, .. } if field == "signal_block"),
        "{err:?}"
    );
    says(&err, &["`x`", "other/x"]);

    let missing = r#"{"channels":[{"id":"x","dtype":"u8"}]}"#;
    let b = episode_with_meta("{}", missing, &[]);
    let err = Episode::from_bytes(b).unwrap_err();
    assert!(
        matches!(&err, FormatError::BlockNotFound { name } if name == "signal/x"),
        "{err:?}"
    );

    let dtype = r#"{"channels":[{"id":"x","dtype":"complex64"}]}"#;
    let b = episode_with_meta("{}", dtype, &[("signal/x", &[0])]);
    let err = Episode::from_bytes(b).unwrap_err();
    assert!(
        matches!(&err, FormatError::BadMeta { field, .. } if field == "x.dtype"),
        "{err:?}"
    );
    says(&err, &["complex64"]);

    let b = wshard_with(&[("meta/wshard", b"{}"), ("meta/episode", b"{}")]);
    let err = Episode::from_bytes(b).unwrap_err();
    assert!(
        matches!(&err, FormatError::BlockNotFound { name } if name == "meta/channels"),
        "{err:?}"
    );
}

#[test]
fn malformed_corrupt_timestamps_block_keeps_its_own_error() {
    // Used to be reported as "block `time/timestamps_ns` not found".
    let mut ep = Episode::new("ts", "env", Timebase::TimestampsNs { dt_ns: 10 });
    ep.set_reward(vec![0.0; 3]);
    ep.set_done(vec![false; 3]);
    ep.timestamps_ns = Some(vec![0, 10, 20]);
    let f = Fixture::new(ep.to_bytes(&EpisodeWriteOptions::default()).unwrap());
    assert_eq!(Episode::from_bytes(f.bytes.clone()).unwrap(), ep);
    let at = f.blocks[f.entry("time/timestamps_ns")].start;
    let mut b = f.bytes.clone();
    b[at] ^= 1;
    let err = Episode::from_bytes(b).unwrap_err();
    assert!(
        matches!(&err, FormatError::BlockCrc { name, .. } if name == "time/timestamps_ns"),
        "{err:?}"
    );
    // Truly missing is still BlockNotFound.
    let b = episode_with_meta(r#"{"timebase":{"type":"timestamps_ns"}}"#, "{}", &[]);
    let err = Episode::from_bytes(b).unwrap_err();
    assert!(
        matches!(&err, FormatError::BlockNotFound { name } if name == "time/timestamps_ns"),
        "{err:?}"
    );
}

#[test]
fn malformed_manifest_json() {
    let cases: &[(&str, &str)] = &[
        ("[]", "not a JSON object"),
        (r#"{"total_timesteps":1}"#, "missing `episode_id`"),
        (r#"{"episode_id":"e"}"#, "missing `total_timesteps`"),
        (
            r#"{"episode_id":"e","total_timesteps":0,"chunks":{}}"#,
            "`chunks`",
        ),
        (
            r#"{"episode_id":"e","total_timesteps":0,"chunks":[{"chunk_index":0}]}"#,
            "chunks[0].timestep_range",
        ),
        (
            r#"{"episode_id":"e","total_timesteps":0,"chunks":[{"timestep_range":[0,1],"uri":"a"}]}"#,
            "chunks[0].chunk_index missing",
        ),
    ];
    for (json, want) in cases {
        let mut w = ShardWriter::new(
            Cursor::new(Vec::new()),
            ShardOptions::manifest(),
            &Reserve::names(["meta/manifest"]),
        )
        .unwrap();
        w.write_block("meta/manifest", json.as_bytes(), BlockOptions::raw(2))
            .unwrap();
        let b = w.finish().unwrap().0.into_inner();
        let err = Manifest::read(&ShardReader::from_bytes(b).unwrap()).unwrap_err();
        assert!(
            matches!(err, FormatError::BadManifest { .. }),
            "{json}: {err:?}"
        );
        says(&err, &[want]);
    }
}

#[test]
fn malformed_manifest_range_overflow_is_an_error_not_a_panic() {
    // `end - start + 1` used to overflow (a panic in debug builds) for [0, u64::MAX].
    let mut m = fixture_manifest();
    m.chunks.truncate(1);
    m.chunks[0].timestep_range = [0, u64::MAX];
    m.total_timesteps = 5;
    let back = Manifest::read(&ShardReader::from_bytes(m.to_bytes().unwrap()).unwrap()).unwrap();
    let err = back.validate_continuity().unwrap_err();
    assert!(matches!(err, FormatError::BadManifest { .. }), "{err:?}");
    says(&err, &["chunk 0", &u64::MAX.to_string(), "length_T 5"]);

    // The adjacent-range rule with an end at u64::MAX.
    let mut m = fixture_manifest();
    m.chunks[0].timestep_range = [u64::MAX - 4, u64::MAX];
    let err = m.validate_continuity().unwrap_err();
    assert!(
        matches!(
            err,
            FormatError::TimestepGap {
                prev_end: u64::MAX,
                ..
            }
        ),
        "{err:?}"
    );
    // Lengths whose sum overflows.
    let mut m = fixture_manifest();
    m.chunks[0].length_t = u64::MAX;
    m.chunks[0].timestep_range = [0, u64::MAX - 1];
    m.chunks[1].timestep_range = [u64::MAX, u64::MAX];
    m.chunks[1].length_t = 1;
    let err = m.validate_continuity().unwrap_err();
    assert!(
        matches!(
            err,
            FormatError::LengthSum {
                sum: u64::MAX,
                total: 10
            }
        ),
        "{err:?}"
    );
}

#[test]
fn malformed_expansion_bounds_still_accept_the_most_compressible_blocks() {
    // The pre-allocation plausibility checks must not reject genuine extremes: all-zero
    // blocks compress about 250:1 with LZ4 and over 10,000:1 with zstd.
    let zeros = vec![0u8; 4 << 20];
    let mut w = ShardWriter::new(
        Cursor::new(Vec::new()),
        ShardOptions {
            policy: CompressionPolicy::any_smaller(),
            ..ShardOptions::wshard()
        },
        &Reserve::names(["z", "l", "e"]),
    )
    .unwrap();
    let z = w
        .write_block("z", &zeros, BlockOptions::codec(Codec::Zstd { level: 1 }))
        .unwrap();
    let l = w
        .write_block("l", &zeros, BlockOptions::codec(Codec::Lz4))
        .unwrap();
    w.write_block("e", &[], BlockOptions::codec(Codec::Lz4))
        .unwrap();
    let bytes = w.finish().unwrap().0.into_inner();
    assert!(
        z.entry.disk_size * 1000 < z.entry.orig_size,
        "{:?}",
        z.entry
    );
    assert!(l.entry.disk_size * 200 < l.entry.orig_size, "{:?}", l.entry);
    let r = ShardReader::from_bytes(bytes).unwrap();
    assert_eq!(r.read_block("z").unwrap(), zeros);
    assert_eq!(r.read_block("l").unwrap(), zeros);
    assert_eq!(r.read_block("e").unwrap(), Vec::<u8>::new());
}
