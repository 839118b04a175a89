//! `wshard inspect --peek` on journal segments, run as the real binary.

mod common;
mod live_episode;

use std::path::{Path, PathBuf};

use common::wshard;
use live_episode::{record_and_crash, EPISODE};
use serde_json::Value;
use wshard_recorder::journal::format::BLOCK_LEN;

/// A journal of 1000 timesteps in 20 STEPS records of 50 (about 53 KB: two 32 KiB blocks),
/// copied to `dir/journal_0000.wal`.
fn journal(dir: &Path) -> PathBuf {
    let live = tempfile::tempdir().expect("tempdir");
    let crashed = tempfile::tempdir().expect("tempdir");
    record_and_crash(live.path(), crashed.path(), 1_000_000, 1000, 50);
    let to = dir.join("journal_0000.wal");
    std::fs::copy(crashed.path().join(EPISODE).join("journal_0000.wal"), &to).expect("copy");
    to
}

/// The table row of the record at `offset`.
fn row(stdout: &str, offset: u64) -> &str {
    stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&offset.to_string()))
        .unwrap_or_else(|| panic!("no row at {offset} in:\n{stdout}"))
}

#[test]
fn cli_peek_lists_every_record_of_a_journal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let j = journal(dir.path());
    let run = wshard(["inspect".as_ref(), "--peek".as_ref(), j.as_os_str()]);
    assert_eq!(run.code, 0, "{run:?}");
    let out = &run.stdout;
    for needle in [
        "journal segment (wshardd-journal)",
        "2 blocks of 32768",
        "21: 1 SEGMENT, 20 STEPS (1000 timesteps)",
        "episode ep, chunk 0, first timestep 0, 32 bytes per step, channels: state signal f32 [8]",
        "0 bytes in 0 regions",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
    }
    let seg = row(out, 0);
    assert!(seg.contains("SEGMENT"), "{seg}");
    let steps: Vec<&str> = out
        .lines()
        .filter(|l| l.split_whitespace().nth(2) == Some("STEPS"))
        .collect();
    assert_eq!(steps.len(), 20, "{out}");
    assert!(
        steps[0].contains(" 50 ") && steps[0].contains("0..=49"),
        "{}",
        steps[0]
    );
    assert!(steps[19].contains("950..=999"), "{}", steps[19]);

    // Plain `inspect` of a .wal shows the same view.
    let plain = wshard(["inspect".as_ref(), j.as_os_str()]);
    assert_eq!(plain.code, 0, "{plain:?}");
    assert_eq!(plain.stdout, run.stdout);

    // --verbose adds the segment header JSON.
    let verbose = wshard(["inspect".as_ref(), "-v".as_ref(), j.as_os_str()]);
    assert!(
        verbose.stdout.contains("segment header at offset 0:"),
        "{verbose:?}"
    );
    assert!(
        verbose.stdout.contains("\"format\": \"wshardd-journal\""),
        "{verbose:?}"
    );
}

#[test]
fn cli_peek_reports_a_corrupt_record_and_keeps_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let j = journal(dir.path());
    let mut bytes = std::fs::read(&j).expect("read");
    bytes[5000] ^= 0x40;
    // Not a .wal name: found to be a journal by its content.
    let bad = dir.path().join("damaged.bin");
    std::fs::write(&bad, &bytes).expect("write");
    let run = wshard(["inspect".as_ref(), bad.as_os_str()]);
    assert_eq!(run.code, 1, "{run:?}");
    let out = &run.stdout;
    assert!(out.contains("corrupt regions:"), "{out}");
    let crc = out
        .lines()
        .find(|l| l.contains("fragment crc32c stored"))
        .unwrap_or_else(|| panic!("no crc region in:\n{out}"));
    let cells: Vec<&str> = crc.split_whitespace().collect();
    assert_eq!(cells[0], "0", "block: {crc}");
    let offset: u64 = cells[1].parse().expect("offset");
    let len: u64 = cells[2].parse().expect("len");
    assert!(offset <= 5000 && offset + len > 5000, "{crc}");
    // Reading resumed at the next record inside the damaged block: the region ends where
    // that record starts, and the record is listed.
    let next = offset + len;
    assert!(
        next < BLOCK_LEN as u64,
        "only the damaged record is dropped: {crc}"
    );
    assert!(
        crc.contains(&format!("the next record starts at offset {next}")),
        "{crc}"
    );
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with(&format!("{next} "))),
        "record at {next} not listed:\n{out}"
    );
    // Records after the damaged block survive.
    assert!(out.contains("950..=999"), "{out}");

    let run = wshard(["inspect".as_ref(), "--json".as_ref(), bad.as_os_str()]);
    assert_eq!(run.code, 1, "{run:?}");
    let v: Value = serde_json::from_str(run.stdout.trim()).expect("json");
    assert_eq!(v["kind"], "journal");
    assert_eq!(v["ok"], false);
    assert_eq!(v["records"][0]["kind"], "SEGMENT");
    assert_eq!(v["records"][0]["segment"]["episode_id"], EPISODE);
    assert_eq!(v["records"][0]["segment"]["channels"][0]["name"], "state");
    assert_eq!(v["records"][1]["kind"], "STEPS");
    assert_eq!(v["records"][1]["timesteps"], 50);
    assert_eq!(v["records"][1]["seq_first"], 0);
    assert_eq!(v["records"][1]["seq_last"], 49);
    assert_eq!(v["corrupt"][0]["block"], 0);
    assert_eq!(v["corrupt"][0]["offset"], offset);
    assert!(v["bytes_discarded"].as_u64().is_some_and(|b| b >= len));
}

#[test]
fn cli_peek_on_a_shard_is_the_normal_view() {
    let dir = tempfile::tempdir().expect("tempdir");
    common::write_chunked(dir.path(), "e");
    let chunk = dir.path().join("e_chunk_0000.wshard");
    let peek = wshard(["inspect".as_ref(), "--peek".as_ref(), chunk.as_os_str()]);
    let plain = wshard(["inspect".as_ref(), chunk.as_os_str()]);
    assert_eq!(peek.code, 0, "{peek:?}");
    assert_eq!(peek.stdout, plain.stdout);
    // Neither a shard nor a journal: the shard view's error.
    let junk = dir.path().join("junk.bin");
    std::fs::write(&junk, b"hello, not a shard").expect("write");
    let run = wshard(["inspect".as_ref(), junk.as_os_str()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("junk.bin"), "{run:?}");
}
