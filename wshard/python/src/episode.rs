//! The episode object behind `wshard_reader.open_episode`: an opened
//! [`EpisodeDir`] (either layout), its listing and events as JSON text, and each stream's
//! layout for the zero-copy arrays.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::{json, Value};
use wshard::episode::Timebase;
use wshard::episode_dir::{EpisodeDir, EpisodeEvent, EventOrigin, Layout, StreamInfo};

use crate::aligned::{aligned, AlignArgs};
use crate::errors::{IntoPy, Kind, ReadError, ReadResult};
use crate::errors_dir::from_dir;
use crate::layout::{read_stream_layout, ChannelSpec, StreamLayout};
use crate::pylayout::layout_to_py;

/// An opened episode directory.
#[pyclass(frozen, module = "wshard_reader._native", name = "NativeEpisode")]
pub(crate) struct NativeEpisode {
    pub(crate) dir: EpisodeDir,
}

/// Open the episode directory at `path` (index or manifest, every stream's manifest, the
/// events and annotations).
#[pyfunction]
pub(crate) fn open_episode(py: Python<'_>, path: PathBuf) -> PyResult<NativeEpisode> {
    py.detach(|| EpisodeDir::open(&path).map_err(|e| from_dir(&e)))
        .map(|dir| NativeEpisode { dir })
        .py_err(py)
}

fn stream_json(s: &StreamInfo) -> Value {
    let tick_hz = match s.timebase {
        Some(Timebase::Ticks { tick_hz }) => Some(tick_hz),
        _ => None,
    };
    let channels: Vec<Value> = s
        .channels
        .iter()
        .map(|c| json!({"name": c.name, "lane": c.lane, "dtype": c.dtype, "shape": c.shape}))
        .collect();
    json!({
        "name": s.name,
        "manifest": s.manifest_path.display().to_string(),
        "timebase": s.timebase.map(|t| t.type_name()),
        "tick_hz": tick_hz,
        "channels": channels,
        "producer": s.producer,
        "status": s.status.map(|st| st.as_str()),
        "steps": s.steps,
        "chunks": s.chunks,
        "first_t_ns": s.first_t_ns,
        "last_t_ns": s.last_t_ns,
        "manifest_missing": s.manifest_missing,
    })
}

fn event_json(e: &EpisodeEvent) -> Value {
    let (origin, source, author, created) = match &e.origin {
        EventOrigin::Producer { source } => ("producer", Some(source.as_str()), None, None),
        EventOrigin::Operator {
            author,
            created_unix_ns,
        } => (
            "operator",
            None,
            Some(author.as_str()),
            Some(*created_unix_ns),
        ),
    };
    json!({
        "t_ns": e.t_ns,
        "seq": e.seq,
        "label": e.label,
        "kind": e.kind().as_str(),
        // Binary payloads as standard base64, decoded on the Python side.
        "data": e.data.to_json_value(),
        "origin": origin,
        "source": source,
        "author": author,
        "created_unix_ns": created,
    })
}

/// A stream without steps yet: its channels from the listing.
fn empty_layout(info: &StreamInfo) -> ReadResult<StreamLayout> {
    Ok(StreamLayout {
        channels: info
            .channels
            .iter()
            .map(|c| ChannelSpec::from_entry(c).map_err(|e| e.stream(&info.name)))
            .collect::<ReadResult<_>>()?,
        timebase: info.timebase.unwrap_or(Timebase::TimestampsNs { dt_ns: 0 }),
        steps: 0,
        chunks: Vec::new(),
    })
}

impl NativeEpisode {
    pub(crate) fn stream_info(&self, name: &str) -> ReadResult<&StreamInfo> {
        self.dir.stream(name).ok_or_else(|| {
            let names: Vec<&str> = self.dir.streams().iter().map(|s| s.name.as_str()).collect();
            ReadError::new(
                Kind::UnknownName,
                format!(
                    "episode `{}` has no stream `{name}` (streams: {})",
                    self.dir.episode_id(),
                    names.join(", ")
                ),
            )
            .stream(name)
            .at(self.dir.path())
        })
    }
}

#[pymethods]
impl NativeEpisode {
    /// The episode directory as given.
    #[getter]
    fn path(&self) -> String {
        self.dir.path().display().to_string()
    }

    /// Episode id, layout, status, index fields and every stream, as JSON text.
    fn info_json(&self) -> String {
        let index = self.dir.index();
        json!({
            "episode_id": self.dir.episode_id(),
            "layout": match self.dir.layout() {
                Layout::SingleStream => "single",
                Layout::MultiStream => "multi",
            },
            "status": self.dir.status().map(|s| s.as_str()),
            "env_id": index.map(|i| i.env_id.clone()),
            "closed": index.map(|i| i.closed),
            "created_unix_ns": index.map(|i| i.created_unix_ns),
            "metadata": index.map(|i| Value::Object(i.metadata.clone())),
            "torn_event_bytes": self.dir.torn_event_bytes(),
            "streams": self.dir.streams().iter().map(stream_json).collect::<Vec<_>>(),
        })
        .to_string()
    }

    /// Events and annotations sorted by `t_ns`, as JSON text.
    fn events_json(&self) -> String {
        Value::Array(self.dir.events().iter().map(event_json).collect()).to_string()
    }

    /// Where stream `name`'s data lies (see `pylayout`).
    #[pyo3(signature = (name, verify = true))]
    fn stream_layout<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        verify: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let layout = py
            .detach(|| {
                let info = self.stream_info(name)?;
                if info.manifest_missing || info.chunks == 0 {
                    return empty_layout(info);
                }
                read_stream_layout(&info.manifest_path, verify).map_err(|e| e.stream(name))
            })
            .py_err(py)?;
        layout_to_py(py, layout)
    }

    /// The aligned view (see `aligned.rs` for the result).
    #[pyo3(signature = (clock=None, rate_hz=None, start_ns=None, end_ns=None,
                        default_policy="hold".to_owned(), policies=Vec::new(),
                        max_staleness_ns=None, drop_invalid=false, channels=None, values=true))]
    #[allow(clippy::too_many_arguments)]
    fn aligned<'py>(
        &self,
        py: Python<'py>,
        clock: Option<String>,
        rate_hz: Option<f64>,
        start_ns: Option<i64>,
        end_ns: Option<i64>,
        default_policy: String,
        policies: Vec<(String, String)>,
        max_staleness_ns: Option<u64>,
        drop_invalid: bool,
        channels: Option<Vec<String>>,
        values: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let args = AlignArgs {
            clock,
            rate_hz,
            start_ns,
            end_ns,
            default_policy,
            policies,
            max_staleness_ns,
            drop_invalid,
            channels,
            values,
        };
        aligned(&self.dir, py, &args)
    }
}
