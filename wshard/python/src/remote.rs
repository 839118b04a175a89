//! `wshard_reader._native.open_ranged_shard`: a stored shard read through byte ranges that
//! a Python callable fetches (`wshard_reader/_remote.py` makes the S3 range requests), parsed
//! and CRC-checked by the `wshard` crate's one reader (`RangedSource`): the header and index
//! from the first bytes, then one fetch per block asked for.

use std::io;
use std::path::Path;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use wshard::read::{RangeFetch, RangedSource, ReadLimits, ShardReader};

use crate::errors::{Kind, ReadError};

/// Calls `fetch(offset, length) -> bytes`.
struct PyFetch {
    fetch: Py<PyAny>,
}

impl RangeFetch for PyFetch {
    fn fetch(&self, offset: u64, len: u64) -> io::Result<Vec<u8>> {
        Python::attach(|py| {
            let got = self
                .fetch
                .bind(py)
                .call1((offset, len))
                .map_err(|e| io::Error::other(e.to_string()))?;
            let bytes = got
                .cast::<PyBytes>()
                .map_err(|e| io::Error::other(format!("fetch did not return bytes: {e}")))?;
            Ok(bytes.as_bytes().to_vec())
        })
    }
}

/// A shard opened for reads by range.
#[pyclass(frozen, module = "wshard_reader._native", name = "NativeRangedShard")]
pub(crate) struct NativeRangedShard {
    label: String,
    reader: ShardReader<RangedSource<PyFetch>>,
}

fn err(label: &str, e: &wshard::FormatError) -> ReadError {
    let mut out = ReadError::format(e, Path::new(label));
    if matches!(e, wshard::FormatError::BlockNotFound { .. }) {
        out.kind = Kind::UnknownName;
    }
    out
}

/// Open a shard of `size` bytes whose first bytes are `head`; `fetch(offset, length)`
/// returns any other range. `label` (the URL) names it in errors.
#[pyfunction]
pub(crate) fn open_ranged_shard(
    py: Python<'_>,
    label: String,
    fetch: Py<PyAny>,
    size: u64,
    head: &Bound<'_, PyBytes>,
) -> PyResult<NativeRangedShard> {
    let head = head.as_bytes().to_vec();
    ShardReader::open_ranged(PyFetch { fetch }, size, head, ReadLimits::default())
        .map(|reader| NativeRangedShard {
            label: label.clone(),
            reader,
        })
        .map_err(|e| err(&label, &e).into_pyerr(py))
}

#[pymethods]
impl NativeRangedShard {
    /// The block names, in index order.
    fn names(&self) -> Vec<String> {
        self.reader.index().names().map(str::to_owned).collect()
    }

    /// `{"role", "entry_count", "data_section_offset", "total_file_size"}`.
    fn header<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let h = self.reader.header();
        let d = PyDict::new(py);
        d.set_item("role", h.role)?;
        d.set_item("entry_count", h.entry_count)?;
        d.set_item("data_section_offset", h.data_section_offset)?;
        d.set_item("total_file_size", h.total_file_size)?;
        Ok(d)
    }

    /// `{"disk_size", "orig_size", "data_offset", "crc32c"}` of block `name`.
    fn entry<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyDict>> {
        let (_, e) = self
            .reader
            .entry(name)
            .map_err(|e| err(&self.label, &e).into_pyerr(py))?;
        let d = PyDict::new(py);
        d.set_item("disk_size", e.disk_size)?;
        d.set_item("orig_size", e.orig_size)?;
        d.set_item("data_offset", e.data_offset)?;
        d.set_item("crc32c", e.checksum)?;
        Ok(d)
    }

    /// The uncompressed, CRC-checked bytes of block `name` (one fetch unless it lies in the
    /// first bytes).
    fn read_block<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyBytes>> {
        let data = self
            .reader
            .read_block(name)
            .map_err(|e| err(&self.label, &e).into_pyerr(py))?;
        Ok(PyBytes::new(py, &data))
    }
}
