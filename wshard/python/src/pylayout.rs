//! A [`StreamLayout`] as the Python objects `wshard_reader` assembles arrays from.
//!
//! ```text
//! {"channels": [{"name", "block", "lane", "dtype", "shape"}, ...],
//!  "timebase": "ticks" | "timestamps_ns", "tick_hz": float | None, "dt_ns": int, "steps": int,
//!  "chunks": [{"path": str, "dev": int, "ino": int, "size": int, "steps": int,
//!              "timestamps": BLOCK | None, "channels": [BLOCK, ...]}]}
//! BLOCK = ("inplace", offset, length)   stored raw: the Python side maps the file
//!       | numpy uint8 array               decoded bytes, handed over without a copy
//! ```

use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use wshard::episode::Timebase;

use crate::layout::{BlockData, ChunkLayout, StreamLayout};

/// Tag of a block Python views in place.
const IN_PLACE: &str = "inplace";

fn block<'py>(py: Python<'py>, b: BlockData) -> PyResult<Bound<'py, PyAny>> {
    match b {
        BlockData::InPlace { offset, len } => {
            Ok((IN_PLACE, offset, len).into_pyobject(py)?.into_any())
        }
        BlockData::Decoded(bytes) => Ok(bytes.into_pyarray(py).into_any()),
    }
}

fn chunk<'py>(py: Python<'py>, c: ChunkLayout) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("path", c.path.display().to_string())?;
    d.set_item("dev", c.identity.dev)?;
    d.set_item("ino", c.identity.ino)?;
    d.set_item("size", c.identity.len)?;
    d.set_item("steps", c.steps)?;
    match c.timestamps {
        Some(b) => d.set_item("timestamps", block(py, b)?)?,
        None => d.set_item("timestamps", py.None())?,
    }
    let channels = PyList::empty(py);
    for b in c.channels {
        channels.append(block(py, b)?)?;
    }
    d.set_item("channels", channels)?;
    Ok(d)
}

/// The layout as a dict (consumes it: decoded bytes move into numpy arrays).
pub(crate) fn layout_to_py(py: Python<'_>, s: StreamLayout) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    let channels = PyList::empty(py);
    for c in &s.channels {
        let cd = PyDict::new(py);
        cd.set_item("name", &c.name)?;
        cd.set_item("block", &c.block)?;
        cd.set_item("lane", c.lane)?;
        cd.set_item("dtype", c.dtype.code())?;
        cd.set_item("shape", c.shape.clone())?;
        channels.append(cd)?;
    }
    d.set_item("channels", channels)?;
    d.set_item("timebase", s.timebase.type_name())?;
    match s.timebase {
        Timebase::Ticks { tick_hz } => d.set_item("tick_hz", tick_hz)?,
        Timebase::TimestampsNs { .. } => d.set_item("tick_hz", py.None())?,
    }
    d.set_item("dt_ns", s.timebase.dt_ns())?;
    d.set_item("steps", s.steps)?;
    let chunks = PyList::empty(py);
    for c in s.chunks {
        chunks.append(chunk(py, c)?)?;
    }
    d.set_item("chunks", chunks)?;
    Ok(d)
}
