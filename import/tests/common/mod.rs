//! Helpers of the import tests: `.npy` / `.npz` files written here (stored or deflated),
//! HDF5 files written with the hdf5 crate, and reading imported episodes back.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;

use wshard::episode::Episode;
use wshard::manifest::{manifest_file_name, read_episode_chunked};

/// A `.npy` file (format 1.0) of `descr` (`<f4`, `|b1`, ...), `shape`, raw `data`.
pub fn npy(descr: &str, shape: &[u64], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape_text = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_text}, }}");
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend(u16::try_from(h.len()).unwrap().to_le_bytes());
    out.extend(h.as_bytes());
    out.extend(data);
    out
}

/// Little-endian bytes of f32 values.
pub fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Little-endian bytes of f64 values.
pub fn f64s(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Bytes of flags.
pub fn bools(v: &[bool]) -> Vec<u8> {
    v.iter().map(|&b| u8::from(b)).collect()
}

/// Write an `.npz` of `(key, npy bytes)` members, deflated when `compressed`.
pub fn write_npz(path: &Path, members: &[(&str, Vec<u8>)], compressed: bool) {
    let f = std::fs::File::create(path).unwrap();
    let mut z = zip::ZipWriter::new(f);
    let method = if compressed {
        zip::CompressionMethod::Deflated
    } else {
        zip::CompressionMethod::Stored
    };
    let opts = zip::write::SimpleFileOptions::default().compression_method(method);
    for (key, bytes) in members {
        z.start_file(format!("{key}.npy"), opts).unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap();
}

/// A DreamerV3 episode of `t` rows: image u8[t,4,5,3], state f64[t,2], action f32[t,3],
/// reward f32, discount f32, is_first/is_last/is_terminal bool, log_len i64.
pub fn dreamer_members(t: u64) -> Vec<(&'static str, Vec<u8>)> {
    let n = usize::try_from(t).unwrap();
    let image: Vec<u8> = (0..n * 60).map(|i| (i % 251) as u8).collect();
    let state: Vec<f64> = (0..n * 2).map(|i| i as f64 * 0.25).collect();
    let action: Vec<f32> = (0..n * 3).map(|i| i as f32 - 1.5).collect();
    let reward: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let mut first = vec![false; n];
    first[0] = true;
    let mut last = vec![false; n];
    last[n - 1] = true;
    let log: Vec<u8> = (0..n as i64).flat_map(i64::to_le_bytes).collect();
    vec![
        ("image", npy("|u1", &[t, 4, 5, 3], &image)),
        ("state", npy("<f8", &[t, 2], &f64s(&state))),
        ("action", npy("<f4", &[t, 3], &f32s(&action))),
        ("reward", npy("<f4", &[t], &f32s(&reward))),
        ("discount", npy("<f4", &[t], &f32s(&vec![1.0; n]))),
        ("is_first", npy("|b1", &[t], &bools(&first))),
        ("is_last", npy("|b1", &[t], &bools(&last))),
        ("is_terminal", npy("|b1", &[t], &bools(&last))),
        ("log_len", npy("<i8", &[t], &log)),
    ]
}

/// The episode `id` of `data_dir`, read back through its manifest.
pub fn read_back(data_dir: &Path, id: &str) -> Episode {
    read_episode_chunked(&data_dir.join(id).join(manifest_file_name(id))).unwrap()
}

/// The entries of `dir`, sorted.
pub fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A dataset for [`write_h5`].
pub enum H5 {
    F32(Vec<u64>, Vec<f32>),
    F64(Vec<u64>, Vec<f64>),
    I64(Vec<u64>, Vec<i64>),
    U8(Vec<u64>, Vec<u8>),
    Bool(Vec<u64>, Vec<bool>),
    Text(Vec<&'static str>),
}

fn dyn_shape(shape: &[u64]) -> ndarray::IxDyn {
    ndarray::IxDyn(
        &shape
            .iter()
            .map(|&d| usize::try_from(d).unwrap())
            .collect::<Vec<_>>(),
    )
}

/// Write an HDF5 file: datasets by path (groups created as needed), gzip-compressed and
/// chunked when `gzip`.
pub fn write_h5(path: &Path, sets: &[(&str, H5)], gzip: bool) {
    let refs: Vec<(&str, &H5)> = sets.iter().map(|(k, v)| (*k, v)).collect();
    write_h5_refs(path, &refs, gzip);
}

/// [`write_h5`] of borrowed datasets.
pub fn write_h5_refs(path: &Path, sets: &[(&str, &H5)], gzip: bool) {
    let f = hdf5::File::create(path).unwrap();
    for &(name, data) in sets {
        let (parent, leaf) = match name.rsplit_once('/') {
            Some((p, l)) => (Some(p), l),
            None => (None, name),
        };
        let group = match parent {
            None => f.as_group().unwrap(),
            Some(p) => {
                let mut g = f.as_group().unwrap();
                for part in p.split('/') {
                    g = if g.link_exists(part) {
                        g.group(part).unwrap()
                    } else {
                        g.create_group(part).unwrap()
                    };
                }
                g
            }
        };
        macro_rules! put {
            ($shape:expr, $v:expr) => {{
                let a = ndarray::ArrayD::from_shape_vec(dyn_shape($shape), $v.clone()).unwrap();
                let mut b = group.new_dataset_builder();
                if gzip && !$shape.is_empty() {
                    let mut chunk: Vec<usize> = $shape
                        .iter()
                        .map(|&d| usize::try_from(d).unwrap())
                        .collect();
                    chunk[0] = chunk[0].clamp(1, 4);
                    b = b.deflate(4).chunk(chunk);
                }
                b.with_data(&a).create(leaf).unwrap();
            }};
        }
        match data {
            H5::F32(s, v) => put!(s, v),
            H5::F64(s, v) => put!(s, v),
            H5::I64(s, v) => put!(s, v),
            H5::U8(s, v) => put!(s, v),
            H5::Bool(s, v) => put!(s, v),
            H5::Text(v) => {
                let v: Vec<hdf5::types::VarLenUnicode> =
                    v.iter().map(|s| s.parse().unwrap()).collect();
                group
                    .new_dataset_builder()
                    .with_data(&v)
                    .create(leaf)
                    .unwrap();
            }
        }
    }
}

/// Flips the two zlib header bytes of chunk `index` of the HDF5 dataset `key` in `path`, so
/// inflating that chunk fails; returns the chunk's file offset.
pub fn spoil_chunk_zlib_header(path: &Path, key: &str, index: usize) -> u64 {
    let addr = hdf5::File::open(path)
        .unwrap()
        .dataset(key)
        .unwrap()
        .chunk_info(index)
        .unwrap()
        .addr;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut head = [0u8; 2];
    file.read_exact_at(&mut head, addr).unwrap();
    file.write_all_at(&[head[0] ^ 0xff, head[1] ^ 0xff], addr)
        .unwrap();
    addr
}
