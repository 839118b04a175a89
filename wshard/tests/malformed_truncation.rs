//! Damaged input, part 1: truncation at every byte offset and bit flips. The reader must
//! answer with a typed error (never a panic) and never report a corrupted CRC-covered block
//! as good.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

#[path = "support/malformed.rs"]
mod support;

#[allow(clippy::wildcard_imports)]
use support::*;

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
