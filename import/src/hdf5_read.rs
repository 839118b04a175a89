//! Reading HDF5 files (Minari, D4RL) through libhdf5: opening, listing groups, reading a
//! dataset (or a range of its rows) as an [`Array`], and scalar attributes as JSON.

use std::path::Path;

use hdf5::types::{FloatSize, IntSize, TypeDescriptor, VarLenAscii, VarLenUnicode};
use hdf5::{Dataset, Group, Hyperslab, SliceOrIndex};
use serde_json::{Map, Value};
use wshard::episode::DType;
use wshard::IoError;

use crate::array::Array;
use crate::error::{ImportError, Result};

/// Open `path` as an HDF5 file.
///
/// # Errors
/// [`ImportError::Io`] when it cannot be read, [`ImportError::NotFormat`] when it is not HDF5.
pub fn open(path: &Path) -> Result<hdf5::File> {
    std::fs::metadata(path)
        .map_err(|source| ImportError::Io(IoError::new("open", path, source)))?;
    hdf5::FileBuilder::new()
        .with_fapl(|p| p.chunk_cache(CHUNK_CACHE_SLOTS, CHUNK_CACHE_BYTES, CHUNK_CACHE_W0))
        .open(path)
        .map_err(|e| ImportError::NotFormat {
            path: path.to_path_buf(),
            expected: "an HDF5 file",
            message: e.to_string(),
        })
}

/// The chunk cache of every dataset opened (libhdf5's default is 1 MiB, 521 slots). The
/// imports read a dataset in windows of rows; a window's edges cut through chunks, and a
/// dataset of many columns (h5py's automatic chunking gives column-shaped chunks: D4RL's
/// `observations` are 17 chunks of 32284 x 1 side by side, 2.2 MB) holds a whole row of
/// chunks beyond the default cache, so each edge chunk was inflated twice. 64 MiB keeps a
/// row of chunks of any dataset of these files.
const CHUNK_CACHE_BYTES: usize = 64 << 20;
/// Hash slots of the chunk cache: a prime about 100 times the chunks it holds at 64 KiB.
const CHUNK_CACHE_SLOTS: usize = 100_003;
/// libhdf5's preemption policy weight (its default: fully read chunks go first).
const CHUNK_CACHE_W0: f64 = 0.75;

/// An HDF5 error on `key` of `path`.
pub(crate) fn h5err(path: &Path, key: &str, e: &hdf5::Error) -> ImportError {
    ImportError::Hdf5 {
        path: path.to_path_buf(),
        key: key.to_owned(),
        message: e.to_string(),
    }
}

/// What a group member is.
#[derive(Debug)]
pub enum Member {
    Group(Group),
    Dataset(Dataset),
}

/// The member `name` of `group`, or `None` when there is none.
///
/// # Errors
/// [`ImportError::Hdf5`] when it exists but cannot be opened.
pub fn member(path: &Path, group: &Group, name: &str, key: &str) -> Result<Option<Member>> {
    if !group.link_exists(name) {
        return Ok(None);
    }
    if let Ok(g) = group.group(name) {
        return Ok(Some(Member::Group(g)));
    }
    group
        .dataset(name)
        .map(|d| Some(Member::Dataset(d)))
        .map_err(|e| h5err(path, key, &e))
}

/// The member names of `group`, sorted.
///
/// # Errors
/// [`ImportError::Hdf5`].
pub fn names(path: &Path, group: &Group, key: &str) -> Result<Vec<String>> {
    let mut n = group.member_names().map_err(|e| h5err(path, key, &e))?;
    n.sort();
    Ok(n)
}

/// The element type of a dataset, or an [`ImportError::Unsupported`] naming it.
///
/// # Errors
/// As said.
pub fn dtype_of(path: &Path, ds: &Dataset, key: &str) -> Result<DType> {
    let desc =
        ds.dtype()
            .and_then(|t| t.to_descriptor())
            .map_err(|e| ImportError::Unsupported {
                path: path.to_path_buf(),
                key: key.to_owned(),
                what: format!("HDF5 datatype ({e})"),
            })?;
    Ok(match desc {
        TypeDescriptor::Float(FloatSize::U8) => DType::F64,
        TypeDescriptor::Float(FloatSize::U4) => DType::F32,
        TypeDescriptor::Integer(IntSize::U8) => DType::I64,
        TypeDescriptor::Integer(IntSize::U4) => DType::I32,
        TypeDescriptor::Integer(IntSize::U2) => DType::I16,
        TypeDescriptor::Integer(IntSize::U1) => DType::I8,
        TypeDescriptor::Unsigned(IntSize::U8) => DType::U64,
        TypeDescriptor::Unsigned(IntSize::U4) => DType::U32,
        TypeDescriptor::Unsigned(IntSize::U2) => DType::U16,
        TypeDescriptor::Unsigned(IntSize::U1) => DType::U8,
        TypeDescriptor::Boolean => DType::Bool,
        other => {
            return Err(ImportError::Unsupported {
                path: path.to_path_buf(),
                key: key.to_owned(),
                what: format!("dtype {other}"),
            })
        }
    })
}

/// The shape of a dataset, as u64.
#[must_use]
pub fn shape_of(ds: &Dataset) -> Vec<u64> {
    ds.shape().into_iter().map(|d| d as u64).collect()
}

/// Little-endian bytes of numeric values.
fn le<T: bytemuck::NoUninit, const N: usize>(v: &[T], to_le: impl Fn(&T) -> [u8; N]) -> Vec<u8> {
    if cfg!(target_endian = "little") {
        bytemuck::cast_slice(v).to_vec()
    } else {
        v.iter().flat_map(to_le).collect()
    }
}

/// Rows `start..end` of `ds` (the whole dataset for a scalar).
///
/// # Errors
/// [`ImportError::Unsupported`] for a type the format has no dtype for,
/// [`ImportError::Hdf5`] when reading fails.
pub fn read_rows(path: &Path, ds: &Dataset, key: &str, start: u64, end: u64) -> Result<Array> {
    let dtype = dtype_of(path, ds, key)?;
    let full = shape_of(ds);
    let mut shape = full.clone();
    let to_usize = |x: u64| usize::try_from(x).unwrap_or(usize::MAX);
    let sel = if full.is_empty() {
        None
    } else {
        shape[0] = end - start;
        let mut s = vec![SliceOrIndex::from(to_usize(start)..to_usize(end))];
        s.extend(full.iter().skip(1).map(|_| SliceOrIndex::from(..)));
        Some(Hyperslab::from(s))
    };
    macro_rules! read {
        ($t:ty) => {{
            let v: Vec<$t> = match &sel {
                None => ds.read_raw::<$t>(),
                Some(h) => ds
                    .read_slice::<$t, _, ndarray::IxDyn>(h.clone())
                    .map(|a| a.into_raw_vec_and_offset().0),
            }
            .map_err(|e| h5err(path, key, &e))?;
            le(&v, |x| x.to_le_bytes())
        }};
    }
    let data = match dtype {
        DType::F64 => read!(f64),
        DType::F32 => read!(f32),
        DType::I64 => read!(i64),
        DType::I32 => read!(i32),
        DType::I16 => read!(i16),
        DType::I8 => read!(i8),
        DType::U64 => read!(u64),
        DType::U32 => read!(u32),
        DType::U16 => read!(u16),
        DType::U8 => read!(u8),
        DType::Bool => {
            let v: Vec<bool> = match &sel {
                None => ds.read_raw::<bool>(),
                Some(h) => ds
                    .read_slice::<bool, _, ndarray::IxDyn>(h.clone())
                    .map(|a| a.into_raw_vec_and_offset().0),
            }
            .map_err(|e| h5err(path, key, &e))?;
            v.into_iter().map(u8::from).collect()
        }
        DType::F16 | DType::BF16 => {
            return Err(ImportError::Unsupported {
                path: path.to_path_buf(),
                key: key.to_owned(),
                what: format!("dtype {}", dtype.code()),
            })
        }
    };
    Ok(Array { dtype, shape, data })
}

/// The whole dataset.
///
/// # Errors
/// As [`read_rows`].
pub fn read_all(path: &Path, ds: &Dataset, key: &str) -> Result<Array> {
    let n = shape_of(ds).first().copied().unwrap_or(0);
    read_rows(path, ds, key, 0, n)
}

/// The scalar attributes of `loc` (numbers, booleans, strings) as JSON; others are skipped.
#[must_use]
pub fn attrs_json(loc: &hdf5::Location) -> Map<String, Value> {
    let mut out = Map::new();
    let Ok(names) = loc.attr_names() else {
        return out;
    };
    for name in names {
        let Ok(a) = loc.attr(&name) else { continue };
        if !a.is_scalar() {
            continue;
        }
        let Ok(desc) = a.dtype().and_then(|t| t.to_descriptor()) else {
            continue;
        };
        let v = match desc {
            TypeDescriptor::Integer(_) => a.read_scalar::<i64>().ok().map(Value::from),
            TypeDescriptor::Unsigned(_) => a.read_scalar::<u64>().ok().map(Value::from),
            TypeDescriptor::Float(_) => a.read_scalar::<f64>().ok().map(Value::from),
            TypeDescriptor::Boolean => a.read_scalar::<bool>().ok().map(Value::from),
            TypeDescriptor::VarLenUnicode => a
                .read_scalar::<VarLenUnicode>()
                .ok()
                .map(|s| Value::from(s.as_str())),
            TypeDescriptor::VarLenAscii => a
                .read_scalar::<VarLenAscii>()
                .ok()
                .map(|s| Value::from(s.as_str())),
            _ => None,
        };
        if let Some(v) = v {
            out.insert(name, v);
        }
    }
    out
}
