//! The reserve-write-finalize writer and the memory-mapped views, including failure paths.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::io::{Cursor, Seek, SeekFrom, Write};

use wshard::codec::{Codec, CompressionPolicy};
use wshard::hash::crc32c;
use wshard::read::{MappedShard, ShardReader};
use wshard::write::{BlockOptions, Precompressed, Reserve, ShardOptions, ShardWriter};
use wshard::FormatError;

fn new_writer(reserve: &Reserve) -> ShardWriter<Cursor<Vec<u8>>> {
    ShardWriter::new(Cursor::new(Vec::new()), ShardOptions::wshard(), reserve).unwrap()
}

#[test]
fn writer_capacity_reserve_leaves_room_and_stays_readable() {
    let mut w = new_writer(&Reserve::Capacity {
        entries: 100,
        name_bytes: 4096,
    });
    let ds = w.data_section_offset();
    assert_eq!(ds, (64 + 48 * 100 + 4096u64).div_ceil(64) * 64);
    w.write_block("a", b"hello", BlockOptions::default())
        .unwrap();
    w.write_block("b/c", &[7u8; 1000], BlockOptions::codec(Codec::zstd()))
        .unwrap();
    let (out, blocks) = w.finish().unwrap();
    assert_eq!(blocks.len(), 2);
    let bytes = out.into_inner();
    let r = ShardReader::from_bytes(bytes.clone()).unwrap();
    let h = r.header();
    assert_eq!(h.string_table_offset, 64 + 48 * 2);
    assert_eq!(h.data_section_offset, ds);
    assert_eq!(h.total_file_size, bytes.len() as u64);
    assert_eq!(r.read_block("a").unwrap(), b"hello");
    assert_eq!(r.read_block("b/c").unwrap(), vec![7u8; 1000]);
    assert_eq!(r.index().entries()[1].flags, 0x0003);
    assert_eq!(r.index().entries()[0].data_offset % 64, 0);
}

#[test]
fn writer_rejects_reserve_overflow_duplicates_and_bad_names() {
    let mut w = new_writer(&Reserve::Capacity {
        entries: 2,
        name_bytes: 8,
    });
    w.write_block("abc", b"x", BlockOptions::default()).unwrap();
    let e = w
        .write_block("abc", b"y", BlockOptions::default())
        .unwrap_err();
    assert!(
        matches!(e, FormatError::DuplicateName { ref name } if name == "abc"),
        "{e}"
    );
    let e = w
        .write_block("toolongname", b"y", BlockOptions::default())
        .unwrap_err();
    assert!(matches!(e, FormatError::ReserveExceeded { .. }), "{e}");
    assert!(e.to_string().contains("toolongname"));
    for bad in ["", "a\0b"] {
        assert!(matches!(
            w.write_block(bad, b"", BlockOptions::default()),
            Err(FormatError::BadName { .. })
        ));
    }
    w.write_block("de", b"z", BlockOptions::default()).unwrap();
    let e = w
        .write_block("f", b"z", BlockOptions::default())
        .unwrap_err();
    assert!(e.to_string().contains("reserve for 2"), "{e}");
    // The writer is still usable after refused (non-I/O) calls.
    let bytes = w.finish().unwrap().0.into_inner();
    assert_eq!(ShardReader::from_bytes(bytes).unwrap().index().len(), 2);
}

#[test]
fn writer_rejects_bad_alignment() {
    let opts = ShardOptions {
        alignment: 8,
        ..ShardOptions::wshard()
    };
    let e = ShardWriter::new(Cursor::new(Vec::new()), opts, &Reserve::names(["a"])).unwrap_err();
    assert!(
        matches!(
            e,
            FormatError::BadHeader {
                field: "alignment",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn writer_alignments_place_blocks_on_boundaries() {
    for align in [0u8, 16, 32, 64] {
        let opts = ShardOptions {
            alignment: align,
            ..ShardOptions::wshard()
        };
        let mut w = ShardWriter::new(
            Cursor::new(Vec::new()),
            opts,
            &Reserve::names(["x", "y", "z"]),
        )
        .unwrap();
        for (n, len) in [("x", 3usize), ("y", 17), ("z", 1)] {
            w.write_block(n, &vec![1u8; len], BlockOptions::default())
                .unwrap();
        }
        let bytes = w.finish().unwrap().0.into_inner();
        let r = ShardReader::from_bytes(bytes).unwrap();
        assert_eq!(r.header().alignment, align);
        for e in r.index().entries() {
            if align > 0 {
                assert_eq!(e.data_offset % u64::from(align), 0, "align {align}");
            }
        }
        if align == 0 {
            // Tight packing: each block right after the previous one.
            let offs: Vec<u64> = r.index().entries().iter().map(|e| e.data_offset).collect();
            assert_eq!(offs[1], offs[0] + 3);
        }
    }
}

#[test]
fn writer_keeps_blocks_raw_unless_smaller_under_policy() {
    let mut w = new_writer(&Reserve::names(["small", "noise", "big"]));
    // 256 bytes: Go policy does not try.
    w.write_block("small", &[0u8; 256], BlockOptions::codec(Codec::zstd()))
        .unwrap();
    let noise: Vec<u8> = (0..4096u64)
        .map(|i| {
            let z = (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            ((z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB) >> 32) as u8
        })
        .collect();
    w.write_block("noise", &noise, BlockOptions::codec(Codec::Lz4))
        .unwrap();
    w.write_block("big", &[0u8; 4096], BlockOptions::codec(Codec::Lz4))
        .unwrap();
    let r = ShardReader::from_bytes(w.finish().unwrap().0.into_inner()).unwrap();
    let flags: Vec<u16> = r.index().entries().iter().map(|e| e.flags).collect();
    assert_eq!(flags, [0, 0, 0x0005]);
    assert_eq!(r.read_block("big").unwrap(), vec![0u8; 4096]);

    let opts = ShardOptions {
        policy: CompressionPolicy::any_smaller(),
        ..ShardOptions::wshard()
    };
    let mut w =
        ShardWriter::new(Cursor::new(Vec::new()), opts, &Reserve::names(["small"])).unwrap();
    w.write_block("small", &[0u8; 100], BlockOptions::codec(Codec::zstd()))
        .unwrap();
    let r = ShardReader::from_bytes(w.finish().unwrap().0.into_inner()).unwrap();
    assert_eq!(r.index().entries()[0].flags, 0x0003);
}

#[test]
fn writer_streams_blocks_and_writes_precompressed_as_is() {
    let mut w = new_writer(&Reserve::names(["streamed", "pre"]));
    let mut s = w.stream_block("streamed", 0).unwrap();
    let mut all = Vec::new();
    for k in 0..100u8 {
        let piece = vec![k; 1000];
        s.write_all(&piece).unwrap();
        all.extend_from_slice(&piece);
    }
    let b = s.finish().unwrap();
    assert_eq!(b.entry.checksum, crc32c(&all));
    let raw = vec![9u8; 5000];
    let mut comp = Vec::new();
    wshard::codec::compress_into(Codec::Lz4, &raw, &mut comp, "pre").unwrap();
    let stored = comp.clone();
    w.write_precompressed(
        "pre",
        &stored,
        Precompressed {
            codec: Codec::Lz4,
            orig_size: 5000,
            crc32c: crc32c(&raw),
            content_type: 10,
        },
    )
    .unwrap();
    let r = ShardReader::from_bytes(w.finish().unwrap().0.into_inner()).unwrap();
    assert_eq!(r.read_block("streamed").unwrap(), all);
    assert_eq!(r.read_block("pre").unwrap(), raw);
    assert_eq!(r.read_stored(1).unwrap(), comp);
    assert_eq!(r.index().entries()[1].content_type, 10);
    assert_eq!(r.header().flags & 0x0080, 0x0080);
}

#[test]
fn writer_rejects_raw_precompressed_with_wrong_size() {
    let mut w = new_writer(&Reserve::names(["p"]));
    let e = w
        .write_precompressed(
            "p",
            b"abc",
            Precompressed {
                codec: Codec::None,
                orig_size: 4,
                crc32c: 0,
                content_type: 0,
            },
        )
        .unwrap_err();
    assert!(e.to_string().contains("orig_size is 4"), "{e}");
}

#[test]
fn writer_unfinished_file_is_never_mistaken_for_a_shard() {
    let mut w = new_writer(&Reserve::names(["a"]));
    w.write_block("a", b"data", BlockOptions::default())
        .unwrap();
    drop(w);
    let mut cur = Cursor::new(Vec::new());
    let mut w = ShardWriter::new(&mut cur, ShardOptions::wshard(), &Reserve::names(["a"])).unwrap();
    w.write_block("a", b"data", BlockOptions::default())
        .unwrap();
    drop(w);
    let bytes = cur.into_inner();
    assert_eq!(&bytes[..4], &[0, 0, 0, 0]);
    assert!(matches!(
        ShardReader::from_bytes(bytes),
        Err(FormatError::BadMagic { .. })
    ));
}

#[test]
fn writer_dropped_stream_fails_the_writer() {
    let mut w = new_writer(&Reserve::names(["a", "b"]));
    {
        let mut s = w.stream_block("a", 0).unwrap();
        s.write_all(b"partial").unwrap();
    }
    assert!(matches!(
        w.write_block("b", b"x", BlockOptions::default()),
        Err(FormatError::WriterFailed)
    ));
    assert!(matches!(w.finish(), Err(FormatError::WriterFailed)));
}

/// A sink that accepts `budget` bytes, then fails every write.
struct FailingSink {
    inner: Cursor<Vec<u8>>,
    budget: usize,
}

impl Write for FailingSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.len() > self.budget {
            return Err(std::io::Error::other("injected write failure (ENOSPC)"));
        }
        self.budget -= buf.len();
        self.inner.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Seek for FailingSink {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

#[test]
fn writer_io_failure_poisons_the_writer() {
    let sink = FailingSink {
        inner: Cursor::new(Vec::new()),
        budget: 200,
    };
    let mut w =
        ShardWriter::new(sink, ShardOptions::wshard(), &Reserve::names(["a", "b"])).unwrap();
    let e = w
        .write_block("a", &[1u8; 500], BlockOptions::default())
        .unwrap_err();
    assert!(e.is_io(), "{e}");
    assert!(e.to_string().contains("injected"), "{e}");
    assert!(matches!(
        w.write_block("b", b"x", BlockOptions::default()),
        Err(FormatError::WriterFailed)
    ));
    assert!(matches!(w.finish(), Err(FormatError::WriterFailed)));
}

fn write_file(dir: &std::path::Path, align: u8) -> std::path::PathBuf {
    let opts = ShardOptions {
        alignment: align,
        ..ShardOptions::wshard()
    };
    let path = dir.join(format!("m{align}.shard"));
    let file = std::fs::File::create(&path).unwrap();
    let mut w = ShardWriter::new(file, opts, &Reserve::names(["pad", "f32", "zstd"])).unwrap();
    w.write_block("pad", b"abc", BlockOptions::default())
        .unwrap();
    let vals: Vec<u8> = (0..64).flat_map(|i| (i as f32).to_le_bytes()).collect();
    w.write_block("f32", &vals, BlockOptions::default())
        .unwrap();
    w.write_block("zstd", &[0u8; 4096], BlockOptions::codec(Codec::zstd()))
        .unwrap();
    w.finish().unwrap();
    path
}

#[test]
fn writer_mmap_views_are_zero_copy_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let m = MappedShard::open(write_file(dir.path(), 64)).unwrap();
    let v: &[f32] = m.view("f32").unwrap();
    assert_eq!(v.len(), 64);
    assert_eq!(v[63], 63.0);
    let bytes = m.bytes("f32").unwrap();
    assert_eq!(
        v.as_ptr().cast::<u8>(),
        bytes.as_ptr(),
        "view must point into the map"
    );
    assert_eq!(m.view_verified::<f32>("f32").unwrap().len(), 64);
    let e = m.view::<u8>("zstd").unwrap_err();
    assert!(
        matches!(e, FormatError::View { .. }) && e.to_string().contains("compressed"),
        "{e}"
    );
    let e = m.view::<f32>("pad").unwrap_err();
    assert!(e.to_string().contains("3 bytes"), "{e}");
    assert!(matches!(
        m.view::<f32>("nope"),
        Err(FormatError::BlockNotFound { .. })
    ));

    // Alignment 0 packs blocks tightly: the f32 block starts at an odd address.
    let m = MappedShard::open(write_file(dir.path(), 0)).unwrap();
    let e = m.view::<f32>("f32").unwrap_err();
    assert!(matches!(e, FormatError::View { .. }), "{e}");
    assert!(e.to_string().contains("alignment"), "{e}");
    assert_eq!(m.view::<u8>("f32").unwrap().len(), 256);
}

#[test]
fn writer_open_missing_file_names_the_path() {
    let e = ShardReader::open("/nonexistent/dir/x.wshard").unwrap_err();
    assert!(e.is_io());
    assert!(e.to_string().contains("/nonexistent/dir/x.wshard"), "{e}");
}
