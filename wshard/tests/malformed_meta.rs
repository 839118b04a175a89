//! Damaged input, part 3: hostile meta JSON inside a valid container (CRCs right).

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

#[path = "support/malformed.rs"]
mod support;

#[allow(clippy::wildcard_imports)]
use support::*;

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
