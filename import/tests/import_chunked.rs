//! The parallel reader of deflate-only chunked HDF5 datasets: the same rows as libhdf5's
//! read (rank 1 and 2, edge chunks, windows cutting chunks, column-shaped chunks), other
//! filters left to libhdf5, a corrupt chunk a typed error naming key, chunk and offset.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use common::read_back;
use wshard_import::chunked::ChunkedReader;
use wshard_import::d4rl::import_d4rl;
use wshard_import::hdf5_read::read_rows;
use wshard_import::{EpisodeSink, ImportError, ImportOptions, SinkOptions};
use wshard_storage::fsio::RealFs;

/// Rows of the test datasets: not a multiple of any chunk height used (edge chunks).
const ROWS: usize = 1003;

/// Write `ROWS` x `cols` f32 values (rank 1 when `cols` is `None`) as `key`, deflated
/// (and shuffled when `shuffle`) in chunks of `chunk`.
fn write(path: &Path, key: &str, cols: Option<usize>, chunk: &[usize], shuffle: bool) -> Vec<f32> {
    let width = cols.unwrap_or(1);
    let v: Vec<f32> = (0..ROWS * width).map(|i| i as f32 * 0.5 - 7.0).collect();
    let shape: Vec<usize> = match cols {
        Some(c) => vec![ROWS, c],
        None => vec![ROWS],
    };
    let a = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&shape), v.clone()).unwrap();
    let f = if path.exists() {
        hdf5::File::append(path).unwrap()
    } else {
        hdf5::File::create(path).unwrap()
    };
    let mut b = f.new_dataset_builder();
    if shuffle {
        b = b.shuffle();
    }
    b.deflate(4)
        .chunk(chunk.to_vec())
        .with_data(&a)
        .create(key)
        .unwrap();
    v
}

/// Windows read in order, of varied sizes, cutting chunks anywhere.
fn windows() -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut s = 0u64;
    for size in [1u64, 7, 64, 100, 3, 250, 61, 1, 500] {
        let e = (s + size).min(ROWS as u64);
        out.push((s, e));
        s = e;
    }
    out.push((s, ROWS as u64));
    out
}

fn check_same(path: &Path, key: &str) {
    let f = wshard_import::hdf5_read::open(path).unwrap();
    let ds = f.dataset(key).unwrap();
    let r = ChunkedReader::new(path, &ds, key)
        .unwrap()
        .expect("a deflate-only dataset is taken");
    for (s, e) in windows() {
        let fast = r.read_rows(s, e).unwrap();
        let lib = read_rows(path, &ds, key, s, e).unwrap();
        assert_eq!(fast, lib, "{key} rows {s}..{e}");
    }
    // Out of order (nothing kept applies): still the same rows.
    for (s, e) in [(900, 1003), (0, 40), (37, 38), (500, 700)] {
        assert_eq!(
            r.read_rows(s, e).unwrap(),
            read_rows(path, &ds, key, s, e).unwrap(),
            "{key} rows {s}..{e}"
        );
    }
}

#[test]
fn import_chunked_rank1_matches_libhdf5() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.hdf5");
    write(&p, "r", None, &[64], false);
    check_same(&p, "r");
}

#[test]
fn import_chunked_rank2_column_chunks_match_libhdf5() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.hdf5");
    // h5py's automatic chunking of D4RL's observations: one column per chunk.
    write(&p, "obs", Some(5), &[128, 1], false);
    // Chunks of two columns, the last one cut by the edge.
    write(&p, "act", Some(5), &[100, 2], false);
    // Whole-row chunks.
    write(&p, "next", Some(3), &[33, 3], false);
    for key in ["obs", "act", "next"] {
        check_same(&p, key);
    }
}

#[test]
fn import_chunked_other_filters_use_libhdf5() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.hdf5");
    write(&p, "shuffled", Some(3), &[64, 3], true);
    // Contiguous: not chunked at all.
    let a = ndarray::arr1(&[1.0f32, 2.0]);
    hdf5::File::append(&p)
        .unwrap()
        .new_dataset_builder()
        .with_data(&a)
        .create("plain")
        .unwrap();
    let f = wshard_import::hdf5_read::open(&p).unwrap();
    let ds = f.dataset("shuffled").unwrap();
    assert!(ChunkedReader::new(&p, &ds, "shuffled").unwrap().is_none());
    let ds = f.dataset("plain").unwrap();
    assert!(ChunkedReader::new(&p, &ds, "plain").unwrap().is_none());
}

/// A D4RL file of [`ROWS`] steps whose observations and actions are column-chunked.
/// The observations shuffled too when `shuffle` (read through libhdf5 then).
fn d4rl_file(path: &Path, shuffle: bool) -> (Vec<f32>, Vec<f32>) {
    let obs = write(path, "observations", Some(4), &[96, 1], shuffle);
    let act = write(path, "actions", Some(2), &[200, 1], false);
    write(path, "rewards", None, &[50], false);
    let flags = |set: &[usize]| -> Vec<bool> { (0..ROWS).map(|i| set.contains(&i)).collect() };
    let f = hdf5::File::append(path).unwrap();
    for (k, at) in [("terminals", 300), ("timeouts", 700)] {
        f.new_dataset_builder()
            .with_data(&ndarray::Array1::from(flags(&[at])))
            .create(k)
            .unwrap();
    }
    (obs, act)
}

#[test]
fn import_chunked_d4rl_column_chunks_round_trip() {
    for shuffle in [false, true] {
        d4rl_round_trip(shuffle);
    }
}

fn d4rl_round_trip(shuffle: bool) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("col.hdf5");
    let (obs, act) = d4rl_file(&f, shuffle);
    let data = dir.path().join("data");
    let sink = EpisodeSink::new(&RealFs, &data, SinkOptions::default()).unwrap();
    let got = import_d4rl(&sink, &f, &ImportOptions::default()).unwrap();
    let steps: Vec<u64> = got.iter().map(|w| w.steps).collect();
    assert_eq!(steps, [301, 400, 302]);
    let mut s = 0usize;
    for w in &got {
        let ep = read_back(&data, &w.id);
        let n = usize::try_from(w.steps).unwrap();
        let le = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        assert_eq!(
            ep.channel("obs").unwrap().data,
            le(&obs[s * 4..(s + n) * 4]),
            "{}",
            w.id
        );
        assert_eq!(
            ep.channel("action").unwrap().data,
            le(&act[s * 2..(s + n) * 2]),
            "{}",
            w.id
        );
        s += n;
    }
}

#[test]
fn import_chunked_corrupt_chunk_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.hdf5");
    write(&p, "obs", Some(3), &[128, 1], false);
    let index = 5;
    let addr = common::spoil_chunk_zlib_header(&p, "obs", index);
    let f = wshard_import::hdf5_read::open(&p).unwrap();
    let ds = f.dataset("obs").unwrap();
    let r = ChunkedReader::new(&p, &ds, "obs").unwrap().unwrap();
    let e = r.read_rows(0, ROWS as u64).unwrap_err();
    match &e {
        ImportError::BadChunk {
            path,
            key,
            chunk,
            offset,
            ..
        } => {
            assert_eq!(path, &p);
            assert_eq!(key, "obs");
            assert_eq!(*chunk, index);
            assert_eq!(*offset, addr);
        }
        other => panic!("expected BadChunk, got {other:?}"),
    }
    let msg = e.to_string();
    assert!(
        msg.contains("obs") && msg.contains(&format!("chunk {index}")),
        "{msg}"
    );
}
