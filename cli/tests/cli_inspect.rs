//! `wshard inspect`, run as the real binary.

mod common;

use common::{block_offset, copy_flipped, upstream_dir, write_chunked, wshard};
use serde_json::Value;

/// A header or summary line as text output prints it.
fn field(key: &str, value: &str) -> String {
    format!("{key:<20} {value}\n")
}

/// The table row of block `name` in text output.
fn row<'a>(stdout: &'a str, name: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(name))
        .unwrap_or_else(|| panic!("no row for {name} in:\n{stdout}"))
}

#[test]
fn cli_inspect_golden_shows_blocks_and_zstd() {
    let Some(dir) = upstream_dir() else { return };
    let run = wshard([
        "inspect".as_ref(),
        dir.join("per_block_compressed.wshard").as_os_str(),
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let out = &run.stdout;
    for needle in [
        field("role", "0x05 wshard"),
        field("flags", "0x00a2 (little-endian, checksums, content-types)"),
        field("compression_default", "1 (zstd)"),
        field("entry_count", "6"),
        field("total_file_size", "1060"),
        field("episode_id", "golden_compressed"),
        field("length_T", "100"),
    ] {
        assert!(out.contains(&needle), "missing {needle:?} in:\n{out}");
    }
    for name in ["meta/wshard", "meta/episode", "meta/channels", "done"] {
        assert!(row(out, name).contains("none"), "{name}: {out}");
    }
    let obs = row(out, "signal/obs");
    for needle in ["f32", "[100, 8]", "zstd", "26", "3200", "0x4c547284", "ok"] {
        assert!(
            obs.contains(needle),
            "signal/obs row lacks {needle:?}: {obs}"
        );
    }
    let reward = row(out, "reward");
    assert!(reward.contains("zstd") && reward.contains("f32") && reward.contains("[100]"));
    assert!(row(out, "meta/channels").contains("json"));
}

#[test]
fn cli_inspect_golden_dtypes_and_shapes() {
    let Some(dir) = upstream_dir() else { return };
    let run = wshard([
        "inspect".as_ref(),
        dir.join("multimodal.wshard").as_os_str(),
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let out = &run.stdout;
    assert!(
        row(out, "signal/obs/rgb").contains("u8     [5, 8, 8, 3]"),
        "{out}"
    );
    assert!(
        row(out, "signal/obs/depth").contains("f32    [5, 8, 8]"),
        "{out}"
    );
    assert!(row(out, "action/ctrl").contains("[5, 3]"), "{out}");
    assert!(row(out, "done").contains("u8     [5]"), "{out}");

    let run = wshard([
        "inspect".as_ref(),
        dir.join("omen_uncert.wshard").as_os_str(),
    ]);
    // Blocks that nothing describes show "-" for dtype and shape.
    let omen = row(&run.stdout, "omen/joint_pos/dreamer");
    assert!(omen.contains("  -  "), "{omen}");
}

#[test]
fn cli_inspect_verbose_prints_meta_json() {
    let Some(dir) = upstream_dir() else { return };
    let run = wshard([
        "inspect".as_ref(),
        "--verbose".as_ref(),
        dir.join("simple_episode.wshard").as_os_str(),
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("meta/episode:\n{"), "{}", run.stdout);
    assert!(run.stdout.contains("\"episode_id\": \"golden_simple\""));
    assert!(run.stdout.contains("\"signal_block\": \"action/ctrl\""));
}

#[test]
fn cli_inspect_json_parses() {
    let Some(dir) = upstream_dir() else { return };
    let path = dir.join("per_block_compressed.wshard");
    let run = wshard(["inspect".as_ref(), "--json".as_ref(), path.as_os_str()]);
    assert_eq!(run.code, 0, "{run:?}");
    let v: Value = serde_json::from_str(&run.stdout).expect("inspect --json is JSON");
    assert_eq!(v["ok"], true);
    assert_eq!(v["header"]["role"], 5);
    assert_eq!(v["header"]["role_name"], "wshard");
    assert_eq!(v["header"]["flags_hex"], "0x00a2");
    assert_eq!(v["header"]["compression_default"], 1);
    assert_eq!(v["header"]["entry_count"], 6);
    assert_eq!(v["episode"]["length_T"], 100);
    let blocks = v["blocks"].as_array().unwrap();
    assert_eq!(blocks.len(), 6);
    assert_eq!(blocks[3]["name"], "signal/obs");
    assert_eq!(blocks[3]["codec"], "zstd");
    assert_eq!(blocks[3]["dtype"], "f32");
    assert_eq!(blocks[3]["shape"], serde_json::json!([100, 8]));
    assert_eq!(blocks[3]["crc32c"], "0x4c547284");
    assert!(blocks.iter().all(|b| b["crc_ok"] == true));
    assert!(v.get("meta").is_none());

    let run = wshard([
        "inspect".as_ref(),
        "--json".as_ref(),
        "--verbose".as_ref(),
        path.as_os_str(),
    ]);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["meta"]["meta/episode"]["episode_id"], "golden_compressed");
}

#[test]
fn cli_inspect_manifest_shows_manifest_json() {
    let tmp = tempfile::tempdir().unwrap();
    write_chunked(tmp.path(), "ep1");
    let manifest = tmp.path().join("ep1_manifest.wshard");
    let run = wshard(["inspect".as_ref(), "-v".as_ref(), manifest.as_os_str()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("0x04 manifest"), "{}", run.stdout);
    assert!(row(&run.stdout, "meta/manifest").contains("json"));
    assert!(run.stdout.contains(&field("chunks", "3")), "{}", run.stdout);
    assert!(
        run.stdout.contains("\"total_timesteps\": 20"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("\"uri\": \"ep1_chunk_0002.wshard\""));

    let chunk = tmp.path().join("ep1_chunk_0002.wshard");
    let run = wshard(["inspect".as_ref(), chunk.as_os_str()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains(&field("chunk", "2 of 3")),
        "{}",
        run.stdout
    );
    assert!(
        row(&run.stdout, "signal/obs").contains("[4, 3]"),
        "{}",
        run.stdout
    );
}

#[test]
fn cli_inspect_bad_block_is_marked_and_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    write_chunked(tmp.path(), "ep1");
    let src = tmp.path().join("ep1_chunk_0000.wshard");
    let bad = tmp.path().join("bad.wshard");
    copy_flipped(&src, &bad, block_offset(&src, "signal/obs") + 5);
    let run = wshard(["inspect".as_ref(), bad.as_os_str()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        row(&run.stdout, "signal/obs").ends_with("BAD"),
        "{}",
        run.stdout
    );
    assert!(run
        .stdout
        .contains("error: block `signal/obs` (#3): crc32c stored"));
}

#[test]
fn cli_inspect_missing_file_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope.wshard");
    let run = wshard(["inspect".as_ref(), missing.as_os_str()]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("nope.wshard"), "{}", run.stderr);
    assert!(run.stderr.contains("No such file"), "{}", run.stderr);
}

#[test]
fn cli_inspect_not_a_shard_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    let junk = tmp.path().join("junk.wshard");
    std::fs::write(&junk, vec![b'x'; 100]).unwrap();
    let run = wshard(["inspect".as_ref(), junk.as_os_str()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("junk.wshard") && run.stderr.contains("magic"));
}

#[test]
fn cli_inspect_usage_error_exits_2() {
    assert_eq!(wshard(["inspect"]).code, 2);
    assert_eq!(wshard(["frobnicate"]).code, 2);
    assert_eq!(wshard(["--help"]).code, 0);
}
