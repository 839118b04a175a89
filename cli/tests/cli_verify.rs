//! `wshard verify`, run as the real binary.

mod common;

use std::path::Path;

use common::{
    block_offset, copy_flipped, flip_in_place, upstream_dir, write_chunked, write_raw_episode,
    wshard, GOLDENS,
};
use serde_json::Value;

/// The output line that mentions `file`.
fn line_for<'a>(text: &'a str, file: &str) -> &'a str {
    text.lines()
        .find(|l| l.contains(file))
        .unwrap_or_else(|| panic!("no line for {file} in:\n{text}"))
}

#[test]
fn cli_verify_all_goldens_ok() {
    let Some(dir) = upstream_dir() else { return };
    let mut args: Vec<std::ffi::OsString> = vec!["verify".into()];
    args.extend(GOLDENS.iter().map(|g| dir.join(g).into_os_string()));
    let run = wshard(&args);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout.lines().count(), 6, "{}", run.stdout);
    assert!(run.stdout.lines().all(|l| l.starts_with("OK ")));
    assert!(line_for(&run.stdout, "simple_episode.wshard").ends_with("(7 blocks)"));

    // The directory itself: the same six files (golden_hashes.json etc. are skipped).
    let run = wshard(["verify".as_ref(), dir.as_os_str()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout.lines().filter(|l| l.starts_with("OK ")).count(),
        6
    );
}

#[test]
fn cli_verify_flipped_byte_names_block_and_crc() {
    let Some(dir) = upstream_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let src = dir.join("simple_episode.wshard");
    let bad = tmp.path().join("flipped.wshard");
    copy_flipped(&src, &bad, block_offset(&src, "signal/state") + 17);
    let run = wshard(["verify".as_ref(), bad.as_os_str()]);
    assert_eq!(run.code, 1, "{run:?}");
    let line = line_for(&run.stdout, "flipped.wshard");
    assert!(line.starts_with("CORRUPT "), "{line}");
    assert!(line.contains("block `signal/state` (#3)"), "{line}");
    assert!(
        line.contains("crc32c stored 0x22d325db, computed 0x"),
        "{line}"
    );
    // The structural read fails on the same block; it is not reported twice.
    assert_eq!(line.matches("signal/state").count(), 1, "{line}");
}

#[test]
fn cli_verify_flipped_bytes_in_two_blocks_are_both_listed() {
    let Some(dir) = upstream_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let src = dir.join("per_block_compressed.wshard");
    let bad = tmp.path().join("two.wshard");
    copy_flipped(&src, &bad, block_offset(&src, "signal/obs") + 10);
    flip_in_place(&bad, block_offset(&src, "done") + 3);
    let run = wshard(["verify".as_ref(), bad.as_os_str()]);
    assert_eq!(run.code, 1, "{run:?}");
    let line = line_for(&run.stdout, "two.wshard");
    assert!(line.contains("block `signal/obs` (#3)"), "{line}");
    assert!(line.contains("block `done` (#5): crc32c stored"), "{line}");
}

#[test]
fn cli_verify_truncated_copy_is_corrupt() {
    let Some(dir) = upstream_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(dir.join("multimodal.wshard")).unwrap();
    for (name, len) in [("short.wshard", bytes.len() - 100), ("tiny.wshard", 10)] {
        let path = tmp.path().join(name);
        std::fs::write(&path, &bytes[..len]).unwrap();
        let run = wshard(["verify".as_ref(), path.as_os_str()]);
        assert_eq!(run.code, 1, "{run:?}");
        assert!(
            line_for(&run.stdout, name).starts_with("CORRUPT "),
            "{run:?}"
        );
    }
}

#[test]
fn cli_verify_missing_file_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope.wshard");
    let run = wshard(["verify".as_ref(), missing.as_os_str()]);
    assert_eq!(run.code, 2, "{run:?}");
    let line = line_for(&run.stderr, "nope.wshard");
    assert!(
        line.starts_with("ERROR ") && line.contains("No such file"),
        "{line}"
    );
}

#[test]
fn cli_verify_io_error_wins_over_corruption() {
    let tmp = tempfile::tempdir().unwrap();
    let junk = tmp.path().join("junk.wshard");
    std::fs::write(
        &junk,
        b"not a shard at all, but long enough to hold a header......",
    )
    .unwrap();
    let run = wshard([
        "verify".as_ref(),
        junk.as_os_str(),
        tmp.path().join("missing.wshard").as_os_str(),
    ]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(line_for(&run.stdout, "junk.wshard").starts_with("CORRUPT "));
}

#[test]
fn cli_verify_usage_error_exits_2() {
    let run = wshard(["verify"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("Usage"), "{}", run.stderr);
    assert_eq!(wshard(["verify", "--bogus", "x"]).code, 2);
}

fn chunk(dir: &Path, k: u32) -> std::path::PathBuf {
    dir.join(format!("ep1_chunk_{k:04}.wshard"))
}

#[test]
fn cli_verify_chunked_episode_directory() {
    let tmp = tempfile::tempdir().unwrap();
    // One directory per episode, as the recorder keeps them: verify recurses.
    let ep_dir = tmp.path().join("episodes").join("ep1");
    write_chunked(&ep_dir, "ep1");
    let run = wshard(["verify".as_ref(), tmp.path().as_os_str()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout.lines().count(), 4, "{}", run.stdout);
    assert!(line_for(&run.stdout, "ep1_manifest.wshard").ends_with("(1 block)"));
    assert!(line_for(&run.stdout, "ep1_chunk_0001.wshard").starts_with("OK "));

    // A flipped data byte in chunk 1: its own CRC and the manifest's SHA-256 both catch it.
    let c1 = chunk(&ep_dir, 1);
    flip_in_place(&c1, block_offset(&c1, "reward") + 2);
    let run = wshard(["verify".as_ref(), tmp.path().as_os_str()]);
    assert_eq!(run.code, 1, "{run:?}");
    let chunk_line = line_for(&run.stdout, "ep1_chunk_0001.wshard:");
    assert!(chunk_line.starts_with("CORRUPT "), "{chunk_line}");
    assert!(
        chunk_line.contains("block `reward` (#5): crc32c stored"),
        "{chunk_line}"
    );
    let manifest = line_for(&run.stdout, "ep1_manifest.wshard");
    assert!(manifest.starts_with("CORRUPT "), "{manifest}");
    assert!(
        manifest.contains("chunk 1 `ep1_chunk_0001.wshard`: sha256 stored"),
        "{manifest}"
    );
    assert!(manifest.contains("chunk 1 `ep1_chunk_0001.wshard`: not a valid episode"));

    // Remove chunk 2: the manifest names the missing file.
    std::fs::remove_file(chunk(&ep_dir, 2)).unwrap();
    let run = wshard(["verify".as_ref(), ep_dir.as_os_str()]);
    assert_ne!(run.code, 0, "{run:?}");
    let manifest = line_for(&run.stdout, "ep1_manifest.wshard");
    assert!(
        manifest.contains("chunk 2 `ep1_chunk_0002.wshard`: file missing"),
        "{manifest}"
    );
}

#[test]
fn cli_verify_manifest_sha256_catches_what_crc_does_not() {
    let tmp = tempfile::tempdir().unwrap();
    write_chunked(tmp.path(), "ep1");
    // Header bytes 48..64 are reserved and covered by no CRC.
    flip_in_place(&chunk(tmp.path(), 0), 50);
    let manifest = tmp.path().join("ep1_manifest.wshard");
    let run = wshard(["verify".as_ref(), manifest.as_os_str()]);
    assert_eq!(run.code, 1, "{run:?}");
    // Chunks are checked first, each on its own line, then the manifest.
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", run.stdout);
    assert!(lines[0].starts_with("OK ") && lines[0].contains("ep1_chunk_0000.wshard"));
    assert!(lines[3].starts_with("CORRUPT ") && lines[3].contains("sha256 stored"));
}

#[test]
fn cli_verify_json_lines_parse() {
    let tmp = tempfile::tempdir().unwrap();
    write_chunked(tmp.path(), "ep1");
    let c1 = chunk(tmp.path(), 1);
    flip_in_place(&c1, block_offset(&c1, "signal/obs") + 1);
    let run = wshard(["verify".as_ref(), "--json".as_ref(), tmp.path().as_os_str()]);
    assert_eq!(run.code, 1, "{run:?}");
    let docs: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is one JSON object"))
        .collect();
    assert_eq!(docs.len(), 4);
    for d in &docs {
        for key in ["path", "ok", "kind", "blocks", "errors"] {
            assert!(d.get(key).is_some(), "{key} missing in {d}");
        }
    }
    let by_name = |n: &str| {
        docs.iter()
            .find(|d| d["path"].as_str().is_some_and(|p| p.ends_with(n)))
            .unwrap()
    };
    let good = by_name("ep1_chunk_0000.wshard");
    assert_eq!(
        (good["ok"].clone(), good["kind"].clone()),
        (true.into(), "episode".into())
    );
    assert_eq!(good["blocks"], 7);
    assert_eq!(good["errors"], serde_json::json!([]));
    let bad = by_name("ep1_chunk_0001.wshard");
    assert_eq!(bad["ok"], false);
    assert!(bad["errors"][0].as_str().unwrap().contains("signal/obs"));
    let m = by_name("ep1_manifest.wshard");
    assert_eq!(
        (m["kind"].clone(), m["blocks"].clone()),
        ("manifest".into(), 1.into())
    );
    assert!(m["errors"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e.as_str().unwrap().contains("sha256")));

    let missing = tmp.path().join("gone.wshard");
    let run = wshard(["verify".as_ref(), "--json".as_ref(), missing.as_os_str()]);
    assert_eq!(run.code, 2);
    let v: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(
        (v["ok"].clone(), v["io_error"].clone()),
        (false.into(), true.into())
    );
}

#[test]
fn cli_verify_structure_mismatch_is_corrupt() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("shape.wshard");
    let channels =
        br#"{"channels":[{"dtype":"f32","id":"obs","shape":[3],"signal_block":"signal/obs"}]}"#;
    write_raw_episode(
        &path,
        &[
            (
                "meta/wshard",
                br#"{"timebase":{"tick_hz":30,"type":"ticks"},"version":1}"#,
            ),
            ("meta/episode", br#"{"episode_id":"e","length_T":4}"#),
            ("meta/channels", channels),
            // 4 steps of f32 [3] need 48 bytes; this holds 32.
            ("signal/obs", &[0u8; 32]),
            ("reward", &[0u8; 16]),
            ("done", &[0u8; 4]),
        ],
    );
    let run = wshard(["verify".as_ref(), path.as_os_str()]);
    assert_eq!(run.code, 1, "{run:?}");
    let line = line_for(&run.stdout, "shape.wshard");
    assert!(line.starts_with("CORRUPT "), "{line}");
    assert!(
        line.contains("block `signal/obs`: 32 bytes, expected 48"),
        "{line}"
    );

    // The same file without its required `done` block.
    let path = tmp.path().join("nodone.wshard");
    write_raw_episode(
        &path,
        &[
            ("meta/wshard", br#"{"version":1}"#),
            ("meta/episode", br#"{"episode_id":"e","length_T":4}"#),
            ("meta/channels", br#"{"channels":[]}"#),
            ("reward", &[0u8; 16]),
        ],
    );
    let run = wshard(["verify".as_ref(), "--json".as_ref(), path.as_os_str()]);
    assert_eq!(run.code, 1, "{run:?}");
    let v: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(v["kind"], "episode");
    assert_eq!(v["errors"], serde_json::json!(["block `done` not found"]));
}

/// A wrong `name_hash` in an index entry: every byte of every block is intact, but readers
/// look blocks up by that hash, so verify names the entry and both hashes.
#[test]
fn cli_verify_wrong_name_hash_is_corrupt() {
    let Some(dir) = upstream_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let src = dir.join("simple_episode.wshard");
    let bad = tmp.path().join("hash.wshard");
    // Entry #3 (`signal/state`): the index starts after the 64-byte header, 48 bytes per
    // entry, `name_hash` first.
    copy_flipped(&src, &bad, 64 + 3 * 48);
    let run = wshard(["verify".as_ref(), bad.as_os_str()]);
    assert_eq!(run.code, 1, "{run:?}");
    let line = line_for(&run.stdout, "hash.wshard");
    assert!(line.starts_with("CORRUPT "), "{line}");
    assert!(
        line.contains("block `signal/state` (#3): name_hash 0x")
            && line.contains("is not the xxHash64 of the name"),
        "{line}"
    );
}
