//! `wshard verify --deep`, run as the real binary.

mod common;

use std::path::Path;

use common::{small_episode, write_raw_episode, wshard};
use serde_json::Value;
use wshard::episode::EpisodeWriteOptions;
use wshard::manifest::{chunk_file_name, manifest_file_name, split_episode, ChunkRef, Manifest};

fn le<T: Copy, const N: usize>(vals: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
    vals.iter().flat_map(|&v| f(v)).collect()
}

/// An episode whose every CRC is right, but whose `meta/channels` says `signal/obs` is
/// f32 [4] while the block holds T x [3]; `done` holds a 2 at t=7 and the timestamps go
/// backwards at t=5.
fn lying_episode(path: &Path) {
    let t = 10usize;
    #[allow(clippy::cast_precision_loss)]
    let obs = le(
        &(0..t * 3).map(|i| i as f32).collect::<Vec<_>>(),
        f32::to_le_bytes,
    );
    let reward = le(&vec![1.0f32; t], f32::to_le_bytes);
    let mut done = vec![0u8; t];
    done[7] = 2;
    done[9] = 1;
    let ts: Vec<i64> = (0..t as i64)
        .map(|i| if i == 5 { 1 } else { i * 100 })
        .collect();
    let ts = le(&ts, i64::to_le_bytes);
    write_raw_episode(
        path,
        &[
            (
                "meta/wshard",
                br#"{"format":"W-SHARD","version":1,"timebase":{"type":"timestamps_ns","dt_ns":100}}"#,
            ),
            (
                "meta/episode",
                br#"{"episode_id":"liar","env_id":"E","length_T":10,"timebase":{"type":"timestamps_ns","dt_ns":100}}"#,
            ),
            (
                "meta/channels",
                br#"{"channels":[{"id":"obs","dtype":"f32","shape":[4],"signal_block":"signal/obs"}]}"#,
            ),
            ("signal/obs", &obs),
            ("reward", &reward),
            ("done", &done),
            ("time/timestamps_ns", &ts),
        ],
    );
}

#[test]
fn cli_deep_reports_a_shape_mismatch_that_crcs_do_not_catch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("liar.wshard");
    lying_episode(&f);

    // Every CRC is good: inspect shows every block as ok.
    let ins = wshard(["inspect".as_ref(), f.as_os_str()]);
    assert!(
        ins.stdout.lines().filter(|l| l.ends_with("  ok")).count() == 7,
        "{ins:?}"
    );

    let run = wshard(["verify".as_ref(), "--deep".as_ref(), f.as_os_str()]);
    assert_eq!(run.code, 1, "{run:?}");
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("CORRUPT "))
        .unwrap_or_else(|| panic!("{run:?}"));
    assert!(
        line.contains(
            "block `signal/obs`: 120 bytes, expected 160 (meta/channels says f32 [4] = 16 bytes per step x T 10)"
        ),
        "{line}"
    );
    assert!(
        line.contains("block `done`: 1 bytes are neither 0 nor 1 (first at t=7: 0x02)"),
        "{line}"
    );
    assert!(
        line.contains(
            "block `time/timestamps_ns`: timestamps decrease 1 times (first at t=5: 1 after 400)"
        ),
        "{line}"
    );
    assert!(!run.stdout.contains("WARN "), "{run:?}");

    let run = wshard([
        "verify".as_ref(),
        "--deep".as_ref(),
        "--json".as_ref(),
        f.as_os_str(),
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    let v: Value = serde_json::from_str(run.stdout.trim()).expect("json");
    assert_eq!(v["ok"], false);
    assert_eq!(v["errors"].as_array().map(Vec::len), Some(3), "{v}");
    assert_eq!(v["warnings"].as_array().map(Vec::len), Some(0), "{v}");
}

/// A file whose only fault is a timestamp going backwards (or a `bool` element of 2) is
/// corrupt to `--deep`: a spec-based reader refuses it, and the recorder never writes one.
#[test]
fn cli_deep_fails_decreasing_timestamps_and_bad_bools() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut ep = small_episode("back");
    let mut ts: Vec<i64> = (0..20).map(|i| i * 10).collect();
    ts[12] = 105;
    ep.timestamps_ns = Some(ts);
    let f = dir.path().join("back.wshard");
    ep.write_file(&f, &EpisodeWriteOptions::default())
        .expect("write");
    let run = wshard(["verify".as_ref(), "--deep".as_ref(), f.as_os_str()]);
    assert_eq!(run.code, 1, "{run:?}");
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("CORRUPT "))
        .unwrap_or_else(|| panic!("{run:?}"));
    assert!(
        line.ends_with(
            "back.wshard: block `time/timestamps_ns`: timestamps decrease 1 times (first at \
             t=12: 105 after 110)"
        ),
        "{line}"
    );
    // Equal timestamps are allowed.
    let mut ep = small_episode("flat");
    ep.timestamps_ns = Some(vec![7; 20]);
    let f = dir.path().join("flat.wshard");
    ep.write_file(&f, &EpisodeWriteOptions::default())
        .expect("write");
    let run = wshard(["verify".as_ref(), "--deep".as_ref(), f.as_os_str()]);
    assert_eq!(run.code, 0, "{run:?}");

    let mut ep = small_episode("bools");
    let mut grip = vec![0u8; 20];
    grip[3] = 1;
    grip[9] = 7;
    ep.push_channel(wshard::episode::Channel::new(
        "grip",
        wshard::episode::Lane::Action,
        wshard::episode::DType::Bool,
        vec![],
        grip,
    ));
    let f = dir.path().join("bools.wshard");
    ep.write_file(&f, &EpisodeWriteOptions::default())
        .expect("write");
    let run = wshard(["verify".as_ref(), "--deep".as_ref(), f.as_os_str()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout
            .contains("block `action/grip`: 1 bytes are neither 0 nor 1 (first at t=9: 0x07)"),
        "{run:?}"
    );
}

/// Timestamps that go back across a chunk boundary make the manifest corrupt to `--deep`,
/// though each chunk is fine on its own.
#[test]
fn cli_deep_fails_timestamps_decreasing_across_chunks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut ep = small_episode("cross");
    // Chunks of 8: chunk 1 ends at t=15 with 150, chunk 2 starts at t=16 with 149.
    let ts: Vec<i64> = (0..20)
        .map(|i| if i >= 16 { i * 10 - 11 } else { i * 10 })
        .collect();
    ep.timestamps_ns = Some(ts);
    wshard::manifest::write_episode_chunked(&ep, dir.path(), 8, &EpisodeWriteOptions::default())
        .expect("write chunked");
    let manifest = dir.path().join(manifest_file_name("cross"));
    let run = wshard(["verify".as_ref(), manifest.as_os_str()]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = wshard(["verify".as_ref(), "--deep".as_ref(), manifest.as_os_str()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout.contains(
            "chunk 2 `cross_chunk_0002.wshard`: time/timestamps_ns starts at 149, below 150 \
             at the end of chunk 1"
        ),
        "{run:?}"
    );
    assert_eq!(
        run.stdout.lines().filter(|l| l.starts_with("OK ")).count(),
        3,
        "{run:?}"
    );
}

#[test]
fn cli_deep_good_files_stay_ok() {
    let dir = tempfile::tempdir().expect("tempdir");
    common::write_chunked(dir.path(), "good");
    let run = wshard(["verify".as_ref(), "--deep".as_ref(), dir.path().as_os_str()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout.lines().filter(|l| l.starts_with("OK ")).count(),
        4
    );
    assert!(!run.stdout.contains("WARN"), "{run:?}");
    if let Some(up) = common::upstream_dir() {
        let run = wshard(["verify".as_ref(), "--deep".as_ref(), up.as_os_str()]);
        assert_eq!(run.code, 0, "{run:?}");
    }
}

/// A chunked episode whose manifest hashes are right but whose chunk 1 says the wrong
/// timestep range and whose chunk 2 declares `obs` as [3, 1] instead of [3].
fn inconsistent_chunks(dir: &Path) {
    let mut chunks = split_episode(&small_episode("mix"), 8).expect("split");
    chunks[1].timestep_range = Some([9, 15]);
    chunks[2].channels[0].shape = vec![3, 1];
    let mut m = Manifest::new("mix", "SimEnv-v0");
    let mut start = 0;
    for (k, c) in chunks.iter().enumerate() {
        let path = dir.join(chunk_file_name("mix", k as u64));
        c.write_file(&path, &EpisodeWriteOptions::default())
            .expect("write chunk");
        m.push_chunk(ChunkRef::for_file(&path, k as u64, start, c.length).expect("hash"));
        start += c.length;
    }
    m.status = Some("complete".into());
    std::fs::write(
        dir.join(manifest_file_name("mix")),
        m.to_bytes().expect("encode"),
    )
    .expect("write manifest");
}

#[test]
fn cli_deep_checks_chunks_against_the_manifest_and_each_other() {
    let dir = tempfile::tempdir().expect("tempdir");
    inconsistent_chunks(dir.path());
    let manifest = dir.path().join(manifest_file_name("mix"));
    // Without --deep every hash, length and index agrees.
    let run = wshard(["verify".as_ref(), manifest.as_os_str()]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = wshard(["verify".as_ref(), "--deep".as_ref(), manifest.as_os_str()]);
    assert_eq!(run.code, 1, "{run:?}");
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains("mix_manifest.wshard"))
        .unwrap_or_else(|| panic!("{run:?}"));
    assert!(line.starts_with("CORRUPT "), "{line}");
    assert!(
        line.contains("chunk 1 `mix_chunk_0001.wshard`: its meta/episode says timestep_range [9, 15], manifest says [8, 15]"),
        "{line}"
    );
    assert!(
        line.contains("chunk 2 `mix_chunk_0002.wshard`: channel schema differs from chunk 0: [signal/obs f32 [3, 1], action/ctrl f32 [2]] vs [signal/obs f32 [3], action/ctrl f32 [2]]"),
        "{line}"
    );
    // The chunks themselves are fine on their own.
    assert_eq!(
        run.stdout.lines().filter(|l| l.starts_with("OK ")).count(),
        3,
        "{run:?}"
    );
}
