//! `wshard cat`, run as the real binary.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{block_offset, flip_in_place, small_episode, wshard};
use wshard::codec::Codec;
use wshard::digest::hex;
use wshard::episode::{Channel, DType, EpisodeWriteOptions, Lane};
use wshard::read::ShardReader;

/// `small_episode` (T 20: `signal/obs` f32 [3], `action/ctrl` f32 [2]) plus a bf16 [2]
/// and an i16 [2, 2] channel, every block zstd-compressed where that helps.
fn episode(dir: &Path) -> PathBuf {
    let mut ep = small_episode("cat");
    let bf: Vec<u8> = (0..40u16)
        .flat_map(|i| (0x3f80 + i).to_le_bytes())
        .collect();
    ep.push_channel(Channel::new("bf", Lane::Signal, DType::BF16, vec![2], bf));
    let i16s: Vec<u8> = (0..80i16).flat_map(|i| (i - 40).to_le_bytes()).collect();
    ep.push_channel(
        Channel::new("grid", Lane::Signal, DType::I16, vec![2, 2], i16s).with_codec(Codec::zstd()),
    );
    let path = dir.join("cat.wshard");
    ep.write_file(&path, &EpisodeWriteOptions::default())
        .expect("write episode");
    path
}

fn block(path: &Path, name: &str) -> Vec<u8> {
    ShardReader::open(path)
        .expect("open")
        .read_block(name)
        .expect("block")
}

/// Parse a version 1.0 .npy file: (descr, shape, data).
fn parse_npy(bytes: &[u8]) -> (String, String, Vec<u8>) {
    assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00", "magic and version");
    let hlen = usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
    assert_eq!((10 + hlen) % 64, 0, "data must start at a multiple of 64");
    let header = std::str::from_utf8(&bytes[10..10 + hlen]).expect("ascii header");
    assert!(header.ends_with('\n'), "{header:?}");
    assert!(header.contains("'fortran_order': False"), "{header}");
    let field = |key: &str, end: char| {
        let start = header.find(key).expect(key) + key.len();
        let rest = &header[start..];
        rest[..=rest.find(end).expect("end")].to_owned()
    };
    (
        field("'descr': ", ',').trim_end_matches(',').to_owned(),
        field("'shape': ", ')'),
        bytes[10 + hlen..].to_vec(),
    )
}

fn cat_to_file(file: &Path, name: &str, format: &str, out: &Path) -> common::Run {
    wshard([
        "cat".as_ref(),
        file.as_os_str(),
        name.as_ref(),
        "--format".as_ref(),
        format.as_ref(),
        "-o".as_ref(),
        out.as_os_str(),
    ])
}

/// numpy's own reading of `npy`: `descr shape hex-of-bytes`, or `None` when python3 with
/// numpy is not installed.
fn numpy_load(npy: &Path) -> Option<String> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, numpy as np; a = np.load(sys.argv[1]); print(a.dtype.str, list(a.shape), a.tobytes().hex())",
        ])
        .arg(npy)
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!(
            "skipping np.load: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

#[test]
fn cli_cat_npy_round_trips_dtype_shape_and_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = episode(dir.path());
    for (name, descr, shape) in [
        ("signal/obs", "'<f4'", "(20, 3)"),
        ("action/ctrl", "'<f4'", "(20, 2)"),
        ("signal/grid", "'<i2'", "(20, 2, 2)"),
        ("reward", "'<f4'", "(20,)"),
        ("done", "'|u1'", "(20,)"),
    ] {
        let out = dir.path().join("out.npy");
        let run = cat_to_file(&f, name, "npy", &out);
        assert_eq!(run.code, 0, "{name}: {run:?}");
        let bytes = std::fs::read(&out).expect("read npy");
        let (d, s, data) = parse_npy(&bytes);
        assert_eq!((d.as_str(), s.as_str()), (descr, shape), "{name}");
        assert_eq!(data, block(&f, name), "{name}");
        if let Some(np) = numpy_load(&out) {
            let dims: Vec<&str> = shape
                .trim_matches(['(', ')'])
                .split(',')
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .collect();
            let want = format!(
                "{} [{}] {}",
                descr.trim_matches('\''),
                dims.join(", "),
                hex(&data)
            );
            assert_eq!(np, want, "{name}");
        }
    }
    // bf16: the raw bits as <u2, and a note saying so.
    let out = dir.path().join("bf.npy");
    let run = cat_to_file(&f, "signal/bf", "npy", &out);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains("bf16") && run.stderr.contains("'<u2'"),
        "{run:?}"
    );
    let (d, s, data) = parse_npy(&std::fs::read(&out).expect("read"));
    assert_eq!((d.as_str(), s.as_str()), ("'<u2'", "(20, 2)"));
    assert_eq!(data, block(&f, "signal/bf"));
}

#[test]
fn cli_cat_csv_has_a_header_and_round_trips_floats() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = episode(dir.path());
    let run = wshard([
        "cat".as_ref(),
        f.as_os_str(),
        "signal/obs".as_ref(),
        "--format".as_ref(),
        "csv".as_ref(),
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines[0], "t,signal/obs[0],signal/obs[1],signal/obs[2]");
    assert_eq!(lines.len(), 21);
    assert_eq!(lines[1], "0,0,0.5,1");
    assert_eq!(lines[2], "1,1.5,2,2.5");
    let raw = block(&f, "signal/obs");
    let parsed: Vec<u8> = lines[1..]
        .iter()
        .flat_map(|l| l.split(',').skip(1))
        .flat_map(|v| v.parse::<f32>().expect("float").to_le_bytes())
        .collect();
    assert_eq!(parsed, raw, "CSV values must read back bit-exact");

    let run = wshard([
        "cat".as_ref(),
        f.as_os_str(),
        "done".as_ref(),
        "--format".as_ref(),
        "csv".as_ref(),
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.starts_with("t,done\n0,0\n"), "{run:?}");
    assert!(run.stdout.ends_with("19,1\n"), "{run:?}");
    let run = wshard([
        "cat".as_ref(),
        f.as_os_str(),
        "signal/grid".as_ref(),
        "--format".as_ref(),
        "csv".as_ref(),
    ]);
    assert!(
        run.stdout.lines().nth(1) == Some("0,-40,-39,-38,-37"),
        "{run:?}"
    );
}

#[test]
fn cli_cat_raw_writes_the_decoded_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = episode(dir.path());
    let out = dir.path().join("grid.bin");
    let run = cat_to_file(&f, "signal/grid", "raw", &out);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(std::fs::read(&out).expect("read"), block(&f, "signal/grid"));
    // To stdout (a pipe here), raw is the default format.
    let run = Command::new(env!("CARGO_BIN_EXE_wshard"))
        .args(["cat".as_ref(), f.as_os_str(), "meta/episode".as_ref()])
        .output()
        .expect("run");
    assert!(run.status.success(), "{run:?}");
    assert_eq!(run.stdout, block(&f, "meta/episode"));
}

#[test]
fn cli_cat_errors_name_the_file_and_block() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = episode(dir.path());
    let run = wshard(["cat".as_ref(), f.as_os_str(), "signal/nope".as_ref()]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("cat.wshard"), "{run:?}");
    assert!(
        run.stderr.contains("block `signal/nope` not found"),
        "{run:?}"
    );
    let run = wshard([
        "cat".as_ref(),
        f.as_os_str(),
        "meta/channels".as_ref(),
        "--format".as_ref(),
        "npy".as_ref(),
    ]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("is JSON"), "{run:?}");
    // A stored-raw block with a flipped byte: its CRC no longer matches.
    flip_in_place(&f, block_offset(&f, "done") + 2);
    let run = wshard(["cat".as_ref(), f.as_os_str(), "done".as_ref()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("cat.wshard"), "{run:?}");
    assert!(run.stderr.contains("block `done`: crc32c"), "{run:?}");
    assert!(
        run.stdout.is_empty(),
        "nothing is written from a corrupt block"
    );
}
