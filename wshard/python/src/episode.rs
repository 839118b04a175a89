//! The episode object behind `wshard_reader.open_episode`.

use std::path::{Path, PathBuf};

use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::json;
use wshard::manifest::{manifest_file_name, Manifest};

use crate::errors::{IntoPy, Kind, ReadError, ReadResult};
use crate::layout::{read_stream_layout, stream_head};
use crate::pylayout::layout_to_py;

/// Name of the one stream of a single-stream episode.
const SINGLE_STREAM: &str = "main";

/// An opened episode directory.
#[pyclass(frozen, module = "wshard_reader._native", name = "NativeEpisode")]
pub(crate) struct NativeEpisode {
    dir: PathBuf,
    /// Stream name and manifest path, in index order.
    streams: Vec<(String, PathBuf)>,
    info: serde_json::Value,
}

fn open(dir: &Path) -> ReadResult<NativeEpisode> {
    if !dir.is_dir() {
        return Err(ReadError::new(Kind::NotFound, "not an episode directory").at(dir));
    }
    let id = dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| {
            ReadError::new(Kind::BadArgument, "the directory name is not UTF-8").at(dir)
        })?
        .to_owned();
    let manifest_path = dir.join(manifest_file_name(&id));
    let manifest =
        Manifest::read_file(&manifest_path).map_err(|e| ReadError::format(&e, &manifest_path))?;
    let mut stream = json!({"name": SINGLE_STREAM, "steps": manifest.total_timesteps,
                     "chunks": manifest.chunks.len(), "status": manifest.status});
    if let Some((tb, channels)) = stream_head(&manifest_path)? {
        stream["timebase"] = json!(tb.type_name());
        if let wshard::episode::Timebase::Ticks { tick_hz } = tb {
            stream["tick_hz"] = json!(tick_hz);
        }
        stream["channels"] = channels
            .iter()
            .map(|c| json!({"name": c.name, "lane": c.lane, "dtype": c.dtype.code(), "shape": c.shape}))
            .collect();
    }
    let info = json!({
        "episode_id": id,
        "layout": "single",
        "status": manifest.status,
        "streams": [stream],
    });
    Ok(NativeEpisode {
        dir: dir.to_path_buf(),
        streams: vec![(SINGLE_STREAM.to_owned(), manifest_path)],
        info,
    })
}

/// Open the episode directory at `path`.
#[pyfunction]
pub(crate) fn open_episode(py: Python<'_>, path: PathBuf) -> PyResult<NativeEpisode> {
    py.detach(|| open(&path)).py_err(py)
}

#[pymethods]
impl NativeEpisode {
    /// The episode directory.
    #[getter]
    fn path(&self) -> String {
        self.dir.display().to_string()
    }

    /// Streams, status and counts as JSON text.
    fn info_json(&self) -> String {
        self.info.to_string()
    }

    /// Where stream `name`'s data lies (see `pylayout`).
    #[pyo3(signature = (name, verify = true))]
    fn stream_layout<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        verify: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let manifest = self
            .streams
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, m)| m.clone())
            .ok_or_else(|| {
                ReadError::new(Kind::UnknownName, "no such stream")
                    .stream(name)
                    .at(&self.dir)
                    .into_pyerr(py)
            })?;
        let layout = py
            .detach(|| read_stream_layout(&manifest, verify))
            .map_err(|e| e.stream(name).into_pyerr(py))?;
        layout_to_py(py, layout)
    }
}
