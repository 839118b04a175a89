//! `NativeEpisode.aligned`: the `wshard::align` view of an episode, each column's arrays
//! handed to numpy without a copy (the Rust vectors move into the arrays).
//!
//! Returns `{"t_ns": int64[rows], "columns": [COLUMN, ...]}` with
//! ```text
//! COLUMN = {"name": "STREAM/CHANNEL", "stream", "channel", "policy", "dtype", "source_dtype",
//!           "shape": [..], "values": uint8[rows * row_bytes] | None, "valid": bool[rows],
//!           "t_ns": int64[rows], "row": int64[rows],
//!           "next_t_ns": int64[rows] | None, "next_row": int64[rows] | None}   (next_*: linear)
//! ```
//! `wshard_reader` views `values` with the column's dtype and shape.

use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use wshard::align::{
    align_episode, AlignOptions, AlignedColumn, AlignedTable, Clock, InvalidRows, Policy,
};
use wshard::episode_dir::EpisodeDir;

use crate::errors::{IntoPy, Kind, ReadError, ReadResult};
use crate::errors_dir::from_align;

fn policy(text: &str, field: &str) -> ReadResult<Policy> {
    Policy::parse(text).ok_or_else(|| {
        ReadError::new(
            Kind::BadArgument,
            format!("{field}: unknown policy {text:?} (hold, nearest or linear)"),
        )
        .field(field)
    })
}

/// What `aligned` was asked for, checked.
pub(crate) struct AlignArgs {
    pub clock: Option<String>,
    pub rate_hz: Option<f64>,
    pub start_ns: Option<i64>,
    pub end_ns: Option<i64>,
    pub default_policy: String,
    pub policies: Vec<(String, String)>,
    pub max_staleness_ns: Option<u64>,
    pub drop_invalid: bool,
    pub channels: Option<Vec<String>>,
    pub values: bool,
}

impl AlignArgs {
    fn options(&self) -> ReadResult<AlignOptions> {
        let bad = |m: &str, field: &str| ReadError::new(Kind::BadArgument, m).field(field);
        let clock = match (&self.clock, self.rate_hz) {
            (Some(stream), None) => {
                if self.start_ns.is_some() || self.end_ns.is_some() {
                    return Err(bad(
                        "start_ns / end_ns apply to a fixed-rate clock (rate_hz), not to a stream clock",
                        "start_ns",
                    ));
                }
                Clock::Stream(stream.clone())
            }
            (None, Some(hz)) => Clock::Rate {
                hz,
                start_ns: self.start_ns,
                end_ns: self.end_ns,
            },
            (Some(_), Some(_)) => {
                return Err(bad("give either clock or rate_hz, not both", "clock"))
            }
            (None, None) => {
                return Err(bad(
                    "give the clock: clock=STREAM (its timestamps) or rate_hz=HZ (a fixed rate)",
                    "clock",
                ))
            }
        };
        let mut opts = AlignOptions::new(clock);
        opts.default_policy = policy(&self.default_policy, "policy")?;
        for (key, p) in &self.policies {
            opts.policies
                .push((key.clone(), policy(p, &format!("policy[{key:?}]"))?));
        }
        opts.max_staleness_ns = self.max_staleness_ns;
        opts.invalid_rows = if self.drop_invalid {
            InvalidRows::Drop
        } else {
            InvalidRows::Mask
        };
        opts.channels.clone_from(&self.channels);
        opts.gather_values = self.values;
        Ok(opts)
    }
}

fn column<'py>(py: Python<'py>, c: AlignedColumn, values: bool) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", c.name())?;
    d.set_item("stream", &c.stream)?;
    d.set_item("channel", &c.channel)?;
    d.set_item("policy", c.policy.as_str())?;
    d.set_item("dtype", c.dtype.code())?;
    d.set_item("source_dtype", c.source_dtype.code())?;
    d.set_item("shape", c.shape.clone())?;
    if values {
        d.set_item("values", c.values.into_pyarray(py))?;
    } else {
        d.set_item("values", py.None())?;
    }
    d.set_item("valid", c.valid.into_pyarray(py))?;
    d.set_item("t_ns", c.source_t_ns.into_pyarray(py))?;
    d.set_item("row", c.source_row.into_pyarray(py))?;
    match c.next_t_ns {
        Some(v) => d.set_item("next_t_ns", v.into_pyarray(py))?,
        None => d.set_item("next_t_ns", py.None())?,
    }
    match c.next_row {
        Some(v) => d.set_item("next_row", v.into_pyarray(py))?,
        None => d.set_item("next_row", py.None())?,
    }
    Ok(d)
}

fn table<'py>(py: Python<'py>, t: AlignedTable, values: bool) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("t_ns", t.t_ns.into_pyarray(py))?;
    let columns = PyList::empty(py);
    for c in t.columns {
        columns.append(column(py, c, values)?)?;
    }
    d.set_item("columns", columns)?;
    Ok(d)
}

/// Build the aligned view of the episode `dir` (the GIL released meanwhile) and hand it to
/// Python.
pub(crate) fn aligned<'py>(
    dir: &EpisodeDir,
    py: Python<'py>,
    args: &AlignArgs,
) -> PyResult<Bound<'py, PyDict>> {
    let t = py
        .detach(|| {
            let opts = args.options()?;
            align_episode(dir, &opts).map_err(|e| from_align(&e))
        })
        .py_err(py)?;
    table(py, t, args.values)
}
