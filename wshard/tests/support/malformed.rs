//! Shared by the `malformed_*` test files: the fixtures, byte patching helpers, and a tracking
//! global allocator that records the largest single allocation of each test thread, so the
//! tests can check that a hostile size field does not turn into an allocation.

#![allow(dead_code, unused_imports, clippy::unwrap_used)]

pub use std::io::Cursor;

pub use serde_json::Map;
pub use wshard::codec::{Codec, CompressionPolicy, StoredCodec};
pub use wshard::consts::{role, MAX_DECOMPRESS_BYTES, MAX_STRING_TABLE_BYTES};
pub use wshard::episode::{AuxBlock, Channel, DType, Episode, EpisodeWriteOptions, Lane, Timebase};
pub use wshard::header::ShardHeader;
pub use wshard::manifest::{chunk_file_name, ChunkRef, Manifest};
pub use wshard::read::{ReadLimits, ShardReader};
pub use wshard::write::{BlockOptions, Reserve, ShardOptions, ShardWriter};
pub use wshard::FormatError;

// ---------------------------------------------------------------------------------------------
// Largest-allocation tracking (per thread: libtest runs every test on its own thread).

#[allow(unsafe_code)]
mod alloc_track {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static LARGEST: Cell<usize> = const { Cell::new(0) };
    }

    pub fn note(size: usize) {
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

pub use alloc_track::largest_during;

/// No hostile header in these tests may cause an allocation above this.
pub const SMALL: usize = 1 << 20;

// ---------------------------------------------------------------------------------------------
// Fixtures.

/// Three channels (zstd, LZ4, raw), T = 5, plus an omen block; compressed with the golden
/// generator's "any size, keep when smaller" policy so that the small blocks really are
/// stored compressed.
pub fn fixture_episode() -> Episode {
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
pub fn fixture_read_back() -> Episode {
    let mut ep = fixture_episode();
    for ch in &mut ep.channels {
        ch.codec = None;
    }
    ep
}

pub fn write_opts() -> EpisodeWriteOptions {
    EpisodeWriteOptions {
        policy: CompressionPolicy::any_smaller(),
        ..EpisodeWriteOptions::default()
    }
}

pub fn fixture_manifest() -> Manifest {
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
pub struct Block {
    pub name: String,
    pub start: usize,
    pub end: usize,
    pub codec: StoredCodec,
    pub data: Vec<u8>,
}

/// A pristine file and its layout.
pub struct Fixture {
    pub bytes: Vec<u8>,
    pub blocks: Vec<Block>,
    pub data_section_offset: usize,
    pub strings_end: usize,
}

impl Fixture {
    pub fn new(bytes: Vec<u8>) -> Self {
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

    pub fn episode() -> Self {
        Self::new(fixture_episode().to_bytes(&write_opts()).unwrap())
    }

    pub fn manifest() -> Self {
        Self::new(fixture_manifest().to_bytes().unwrap())
    }

    /// The block whose stored bytes contain `offset`.
    pub fn block_at(&self, offset: usize) -> Option<usize> {
        self.blocks
            .iter()
            .position(|b| (b.start..b.end).contains(&offset))
    }

    /// Bytes nobody reads: reserved header bytes, string-table padding, padding between blocks.
    pub fn inert(&self, offset: usize) -> bool {
        (48..64).contains(&offset)
            || (self.strings_end..self.data_section_offset).contains(&offset)
            || (offset >= self.data_section_offset && self.block_at(offset).is_none())
    }

    pub fn entry(&self, name: &str) -> usize {
        self.blocks.iter().position(|b| b.name == name).unwrap()
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers.

/// Everything a reader can do with a WShard file; the first error.
pub fn read_episode_all(bytes: Vec<u8>, limits: ReadLimits) -> Result<Episode, FormatError> {
    let r = ShardReader::new(bytes, limits)?;
    for i in 0..r.index().len() {
        r.read_entry(i)?;
    }
    let _ = r.check_all();
    Episode::read(&r)
}

/// Everything a reader can do with a manifest file; the first error.
pub fn read_manifest_all(bytes: Vec<u8>, limits: ReadLimits) -> Result<Manifest, FormatError> {
    let r = ShardReader::new(bytes, limits)?;
    for i in 0..r.index().len() {
        r.read_entry(i)?;
    }
    let _ = r.check_all();
    Manifest::read(&r)
}

pub fn lenient() -> ReadLimits {
    ReadLimits {
        require_exact_file_size: false,
        ..ReadLimits::default()
    }
}

pub fn put_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}

pub fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

pub fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

pub fn get_u64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

/// Header field offsets.
pub const H_INDEX_ENTRY_SIZE: usize = 10;
pub const H_ENTRY_COUNT: usize = 12;
pub const H_STRING_TABLE_OFFSET: usize = 16;
pub const H_DATA_SECTION_OFFSET: usize = 24;
pub const H_TOTAL_FILE_SIZE: usize = 40;

/// Offset of field `field` of index entry `i`.
pub fn ent(i: usize, field: usize) -> usize {
    64 + 48 * i + field
}
pub const E_NAME_OFFSET: usize = 8;
pub const E_NAME_LEN: usize = 12;
pub const E_FLAGS: usize = 14;
pub const E_DATA_OFFSET: usize = 16;
pub const E_DISK_SIZE: usize = 24;
pub const E_ORIG_SIZE: usize = 32;

/// Assert that the error's message contains every one of `parts`.
pub fn says(err: &FormatError, parts: &[&str]) {
    let msg = err.to_string();
    for p in parts {
        assert!(msg.contains(p), "message {msg:?} does not mention {p:?}");
    }
}

/// A SplitMix64 generator: deterministic, no dependency.
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap()
    }
}
