//! A parallel reader of chunked, deflate-only HDF5 datasets of rank 1 and 2 (D4RL's
//! case: h5py's gzip datasets with column-shaped chunks).
//!
//! libhdf5 inflates every chunk of a read on the calling thread; this reader takes each
//! chunk's file address and size from libhdf5 once ([`hdf5::Dataset::chunk_info`]), reads
//! the compressed bytes itself (positioned reads of the file) and inflates the chunks of a
//! window of rows on rayon's pool, then scatters them into the row-major window. A chunk
//! band (a row of chunks) that straddles the window's end is kept for the next window, so
//! each chunk is inflated once when windows are read in order.
//!
//! Anything else (another filter or more than one, a chunk stored with a filter skipped,
//! a missing chunk, contiguous or compact layout, rank above 2, big-endian or non-numeric
//! types) is not taken: [`ChunkedReader::new`] returns `None` and the caller reads through
//! libhdf5.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use hdf5::datatype::ByteOrder;
use hdf5::filters::Filter;
use hdf5::Dataset;
use rayon::prelude::*;
use wshard::episode::DType;
use wshard::IoError;

use crate::array::Array;
use crate::error::{ImportError, Result};
use crate::hdf5_read::dtype_of;

/// Where one chunk is in the file.
#[derive(Clone, Copy, Debug)]
struct ChunkLoc {
    /// libhdf5's chunk index (for errors).
    index: usize,
    addr: u64,
    size: usize,
}

/// Decoded chunks of one band kept between windows.
struct Kept {
    band: usize,
    chunks: Vec<Vec<u8>>,
}

/// A deflate-only chunked dataset of rank 1 or 2, read by windows of rows.
pub struct ChunkedReader {
    path: PathBuf,
    key: String,
    file: File,
    dtype: DType,
    /// Rows of the dataset.
    rows: usize,
    /// Columns (1 for rank 1).
    cols: usize,
    /// Rank of the dataset (1 or 2).
    rank: usize,
    /// Chunk shape as rows x columns (stored full size, also at the edges).
    chunk_rows: usize,
    chunk_cols: usize,
    /// `bands[b][c]`: the chunk of rows `b * chunk_rows..` and columns `c * chunk_cols..`.
    bands: Vec<Vec<ChunkLoc>>,
    kept: Mutex<Option<Kept>>,
}

impl std::fmt::Debug for ChunkedReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkedReader")
            .field("key", &self.key)
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .finish_non_exhaustive()
    }
}

impl ChunkedReader {
    /// A reader of `ds` (key `key` of the file `path`), or `None` when the dataset is not
    /// one this reader takes (see the module doc).
    ///
    /// # Errors
    /// [`ImportError::Io`] when the file cannot be opened for the chunk reads.
    pub fn new(path: &Path, ds: &Dataset, key: &str) -> Result<Option<Self>> {
        let Some(shape) = eligible_shape(path, ds, key) else {
            return Ok(None);
        };
        let Ok(dtype) = dtype_of(path, ds, key) else {
            return Ok(None);
        };
        let Some(chunk) = ds.chunk() else {
            return Ok(None);
        };
        let rank = shape.len();
        let rows = shape[0];
        let cols = shape.get(1).copied().unwrap_or(1);
        let chunk_rows = chunk[0];
        let chunk_cols = chunk.get(1).copied().unwrap_or(1);
        if rows == 0 || cols == 0 || chunk_rows == 0 || chunk_cols == 0 {
            return Ok(None);
        }
        let Some(bands) = chunk_table(ds, rank, [rows, cols], [chunk_rows, chunk_cols]) else {
            return Ok(None);
        };
        let file = File::open(path)
            .map_err(|source| ImportError::Io(IoError::new("open", path, source)))?;
        Ok(Some(Self {
            path: path.to_path_buf(),
            key: key.to_owned(),
            file,
            dtype,
            rows,
            cols,
            rank,
            chunk_rows,
            chunk_cols,
            bands,
            kept: Mutex::new(None),
        }))
    }

    /// Rows `start..end` (within the dataset) as an array, as libhdf5's read gives them.
    ///
    /// # Errors
    /// [`ImportError::BadChunk`] for a chunk that cannot be read or inflated.
    pub fn read_rows(&self, start: u64, end: u64) -> Result<Array> {
        let to_usize = |x: u64| usize::try_from(x).unwrap_or(usize::MAX);
        let (w0, w1) = (to_usize(start).min(self.rows), to_usize(end).min(self.rows));
        let elem = self.dtype.size();
        let n = w1.saturating_sub(w0);
        let mut data = vec![0u8; n * self.cols * elem];
        let mut shape = vec![n as u64];
        if self.rank == 2 {
            shape.push(self.cols as u64);
        }
        if n == 0 {
            return Ok(Array {
                dtype: self.dtype,
                shape,
                data,
            });
        }
        let (b0, b1) = (w0 / self.chunk_rows, (w1 - 1) / self.chunk_rows);
        let mut kept = self
            .kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let reuse = kept.take().filter(|k| k.band == b0);
        let first_new = if reuse.is_some() { b0 + 1 } else { b0 };
        let jobs: Vec<(usize, usize)> = (first_new..=b1)
            .flat_map(|b| (0..self.bands[b].len()).map(move |c| (b, c)))
            .collect();
        let mut decoded: Vec<Vec<u8>> = jobs
            .par_iter()
            .map(|&(b, c)| self.inflate(self.bands[b][c]))
            .collect::<Result<_>>()?;
        let mut all: Vec<(usize, Vec<Vec<u8>>)> = Vec::with_capacity(b1 + 1 - b0);
        if let Some(k) = reuse {
            all.push((k.band, k.chunks));
        }
        let per_band = self.bands.first().map_or(0, Vec::len);
        for b in first_new..=b1 {
            let rest = decoded.split_off(per_band.min(decoded.len()));
            all.push((b, std::mem::replace(&mut decoded, rest)));
        }
        for (b, chunks) in &all {
            self.scatter(*b, chunks, w0, w1, &mut data);
        }
        // The last band goes on past this window: keep it for the next one.
        if let Some((b, chunks)) = all.pop() {
            if ((b + 1) * self.chunk_rows).min(self.rows) > w1 {
                *kept = Some(Kept { band: b, chunks });
            }
        }
        Ok(Array {
            dtype: self.dtype,
            shape,
            data,
        })
    }

    /// The decoded bytes of one chunk (full chunk size).
    fn inflate(&self, loc: ChunkLoc) -> Result<Vec<u8>> {
        let bad = |message: String| ImportError::BadChunk {
            path: self.path.clone(),
            key: self.key.clone(),
            chunk: loc.index,
            offset: loc.addr,
            message,
        };
        let mut raw = vec![0u8; loc.size];
        self.file
            .read_exact_at(&mut raw, loc.addr)
            .map_err(|e| bad(format!("reading {} bytes: {e}", loc.size)))?;
        let want = self.chunk_rows * self.chunk_cols * self.dtype.size();
        let mut out = Vec::with_capacity(want);
        // One byte more than a chunk holds, to tell a too long stream.
        let got = flate2::read::ZlibDecoder::new(raw.as_slice())
            .take(want as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|e| bad(format!("inflating {} bytes: {e}", loc.size)))?;
        if got != want {
            return Err(bad(format!(
                "inflated to {got} bytes, a chunk holds {want}"
            )));
        }
        Ok(out)
    }

    /// Copy the rows of band `b` within `w0..w1` from its decoded chunks into `data`.
    fn scatter(&self, b: usize, chunks: &[Vec<u8>], w0: usize, w1: usize, data: &mut [u8]) {
        let elem = self.dtype.size();
        let band0 = b * self.chunk_rows;
        let (r0, r1) = (w0.max(band0), w1.min(band0 + self.chunk_rows));
        for (c, chunk) in chunks.iter().enumerate() {
            let col0 = c * self.chunk_cols;
            let width = self.chunk_cols.min(self.cols - col0);
            let src_row = self.chunk_cols * elem;
            let dst_row = self.cols * elem;
            if width == self.cols && self.chunk_cols == self.cols {
                // Whole rows on both sides: one run.
                let src = (r0 - band0) * src_row..(r1 - band0) * src_row;
                let dst = (r0 - w0) * dst_row..(r1 - w0) * dst_row;
                data[dst].copy_from_slice(&chunk[src]);
                continue;
            }
            for r in r0..r1 {
                let s = (r - band0) * src_row;
                let d = (r - w0) * dst_row + col0 * elem;
                data[d..d + width * elem].copy_from_slice(&chunk[s..s + width * elem]);
            }
        }
    }
}

/// The shape of `ds` when it is chunked, of rank 1 or 2, stored with the deflate filter
/// alone, of a little-endian numeric type.
fn eligible_shape(path: &Path, ds: &Dataset, key: &str) -> Option<Vec<usize>> {
    let shape = ds.shape();
    if !(1..=2).contains(&shape.len()) || !ds.is_chunked() {
        return None;
    }
    if !matches!(ds.filters().as_slice(), [Filter::Deflate(_)]) {
        return None;
    }
    let dtype = dtype_of(path, ds, key).ok()?;
    if matches!(dtype, DType::Bool | DType::F16 | DType::BF16) {
        return None;
    }
    let t = ds.dtype().ok()?;
    if dtype.size() > 1 && t.byte_order() != ByteOrder::LittleEndian {
        return None;
    }
    Some(shape)
}

/// Every chunk of `ds` placed in its band and column, or `None` when one is missing, stored
/// with a filter skipped, or not on the chunk grid.
fn chunk_table(
    ds: &Dataset,
    rank: usize,
    [rows, cols]: [usize; 2],
    [chunk_rows, chunk_cols]: [usize; 2],
) -> Option<Vec<Vec<ChunkLoc>>> {
    let nb = rows.div_ceil(chunk_rows);
    let nc = cols.div_ceil(chunk_cols);
    if ds.num_chunks()? != nb * nc {
        return None;
    }
    let mut table: Vec<Vec<Option<ChunkLoc>>> = vec![vec![None; nc]; nb];
    for index in 0..nb * nc {
        let info = ds.chunk_info(index)?;
        if info.filter_mask != 0 || info.offset.len() != rank {
            return None;
        }
        let r = usize::try_from(info.offset[0]).ok()?;
        let c = if rank == 2 {
            usize::try_from(info.offset[1]).ok()?
        } else {
            0
        };
        if r % chunk_rows != 0 || c % chunk_cols != 0 {
            return None;
        }
        let slot = table.get_mut(r / chunk_rows)?.get_mut(c / chunk_cols)?;
        if slot.is_some() {
            return None;
        }
        *slot = Some(ChunkLoc {
            index,
            addr: info.addr,
            size: usize::try_from(info.size).ok()?,
        });
    }
    table
        .into_iter()
        .map(|band| band.into_iter().collect::<Option<Vec<_>>>())
        .collect()
}
