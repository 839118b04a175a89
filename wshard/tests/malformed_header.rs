//! Damaged input, part 2: hostile headers and index entries, each answered with the specific
//! typed error naming the field and values, without allocating what the field claims.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

#[path = "support/malformed.rs"]
mod support;

#[allow(clippy::wildcard_imports)]
use support::*;

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
