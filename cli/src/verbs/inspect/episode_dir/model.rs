//! `wshard inspect DIR` on an episode directory: its streams and events, as
//! [`wshard::episode_dir::EpisodeDir`] reads them (either layout).

use std::path::{Path, PathBuf};

use serde_json::Value;
use wshard::episode::Timebase;
use wshard::episode_dir::index::ChannelEntry;
use wshard::episode_dir::{EpisodeDir, EpisodeDirError, EventOrigin, Layout, StreamInfo};
use wshard::manifest::{manifest_file_name, Manifest};
use wshard_storage::fsio::RealFs;
use wshard_storage::keep;

/// Longest text or JSON shown for an event in the text report (characters).
pub const PREVIEW_CHARS: usize = 60;

/// Nanoseconds per second.
const NS_PER_S: f64 = 1e9;

/// The key of a part's links in its manifest or index metadata (the daemon's
/// `SPLIT_MANIFEST_KEY`).
const SPLIT_KEY: &str = "split";

/// One stream of the episode.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamRow {
    pub name: String,
    /// `ticks`, `timestamps_ns`, or `-` when unknown (a stream without chunks yet).
    pub clock: String,
    /// The declared rate of a `ticks` stream.
    pub tick_hz: Option<f64>,
    /// Steps per second over the stream's span: `(steps - 1) / (last - first)`.
    pub mean_hz: Option<f64>,
    pub channels: Vec<ChannelEntry>,
    pub steps: u64,
    pub chunks: u64,
    pub first_t_ns: Option<i64>,
    pub last_t_ns: Option<i64>,
    pub status: Option<String>,
    pub producer: Option<String>,
    /// Listed in the index, no manifest yet.
    pub manifest_missing: bool,
}

/// One event or annotation.
#[derive(Clone, Debug, PartialEq)]
pub struct EventRow {
    pub t_ns: i64,
    pub seq: u64,
    /// `event` or `annotation`.
    pub origin: &'static str,
    /// The producer's stream (or client) name, or the annotation's author.
    pub by: String,
    pub label: String,
    pub kind: &'static str,
    /// `data` as the files store it (text, JSON, base64).
    pub data: Value,
}

impl EventRow {
    /// `data` shortened for a table cell: text as is, JSON compact, binary as its size.
    #[must_use]
    pub fn preview(&self) -> String {
        let full = match (&self.data, self.kind) {
            (Value::String(s), "binary") => {
                let pad = s.chars().rev().take_while(|c| *c == '=').count();
                let bytes = (s.len() / 4 * 3).saturating_sub(pad);
                format!("{bytes} bytes")
            }
            (Value::String(s), _) => s.clone(),
            (v, _) => v.to_string(),
        };
        let flat: String = full
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        if flat.chars().count() > PREVIEW_CHARS {
            let cut: String = flat.chars().take(PREVIEW_CHARS - 3).collect();
            format!("{cut}...")
        } else {
            flat
        }
    }
}

/// Everything `wshard inspect DIR` shows.
#[derive(Clone, Debug, PartialEq)]
pub struct DirInspection {
    pub path: PathBuf,
    pub episode_id: String,
    /// `single-stream` or `multi-stream`.
    pub layout: &'static str,
    pub status: Option<String>,
    /// From the index (multi-stream).
    pub env_id: Option<String>,
    /// From the index (multi-stream): no more streams may join.
    pub closed: Option<bool>,
    /// From the index's metadata: `flight_window` for a trigger window of the flight
    /// recorder.
    pub origin: Option<String>,
    pub streams: Vec<StreamRow>,
    pub events: Vec<EventRow>,
    /// Bytes of a torn last events line (ignored).
    pub torn_event_bytes: u64,
    /// The directory is in a data directory whose keep marks name it (`wshard keep`:
    /// `../.keep/{episode_id}`): never evicted.
    pub kept: bool,
    /// A part of a split episode (`wshard split`, `[rolling]`): its links, from the index's
    /// metadata (multi-stream) or the manifest (single-stream): `episode`, `part`,
    /// `previous`, `next`.
    pub split: Option<Value>,
}

/// The `split` links of the episode in `dir` (`path`), if it is a part of a split episode.
fn split_links(path: &Path, dir: &EpisodeDir) -> Option<Value> {
    if let Some(index) = dir.index() {
        return index.metadata.get(SPLIT_KEY).cloned();
    }
    let manifest = path.join(manifest_file_name(dir.episode_id()));
    Manifest::read_file(manifest)
        .ok()
        .and_then(|m| m.extra.get(SPLIT_KEY).cloned())
}

fn stream_row(s: &StreamInfo) -> StreamRow {
    let (clock, tick_hz) = match s.timebase {
        Some(Timebase::Ticks { tick_hz }) => ("ticks".to_owned(), Some(tick_hz)),
        Some(tb @ Timebase::TimestampsNs { .. }) => (tb.type_name().to_owned(), None),
        None => ("-".to_owned(), None),
    };
    #[allow(clippy::cast_precision_loss)]
    let mean_hz = match (s.first_t_ns, s.last_t_ns) {
        (Some(a), Some(b)) if b > a && s.steps > 1 => {
            Some((s.steps - 1) as f64 * NS_PER_S / (i128::from(b) - i128::from(a)) as f64)
        }
        _ => None,
    };
    StreamRow {
        name: s.name.clone(),
        clock,
        tick_hz,
        mean_hz,
        channels: s.channels.clone(),
        steps: s.steps,
        chunks: s.chunks,
        first_t_ns: s.first_t_ns,
        last_t_ns: s.last_t_ns,
        status: s.status.map(|st| st.as_str().to_owned()),
        producer: s.producer.clone(),
        manifest_missing: s.manifest_missing,
    }
}

impl DirInspection {
    /// Open the episode directory `path`.
    ///
    /// # Errors
    /// Those of [`EpisodeDir::open`].
    pub fn read(path: &Path) -> Result<Self, EpisodeDirError> {
        let dir = EpisodeDir::open(path)?;
        let events = dir
            .events()
            .iter()
            .map(|e| {
                let (origin, by) = match &e.origin {
                    EventOrigin::Producer { source } => ("event", source.clone()),
                    EventOrigin::Operator { author, .. } => ("annotation", author.clone()),
                };
                EventRow {
                    t_ns: e.t_ns,
                    seq: e.seq,
                    origin,
                    by,
                    label: e.label.clone(),
                    kind: e.kind().as_str(),
                    data: e.data.to_json_value(),
                }
            })
            .collect();
        Ok(Self {
            path: path.to_path_buf(),
            episode_id: dir.episode_id().to_owned(),
            layout: match dir.layout() {
                Layout::SingleStream => "single-stream",
                Layout::MultiStream => "multi-stream",
            },
            status: dir.status().map(|s| s.as_str().to_owned()),
            env_id: dir.index().map(|i| i.env_id.clone()),
            closed: dir.index().map(|i| i.closed),
            origin: dir
                .index()
                .and_then(|i| i.metadata.get("origin"))
                .and_then(|v| v.as_str())
                .map(str::to_owned),
            streams: dir.streams().iter().map(stream_row).collect(),
            events,
            torn_event_bytes: dir.torn_event_bytes(),
            kept: path
                .parent()
                .is_some_and(|data_dir| keep::is_kept(&RealFs, data_dir, dir.episode_id())),
            split: split_links(path, &dir),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn event_previews() {
        let row = |kind, data| EventRow {
            t_ns: 0,
            seq: 0,
            origin: "event",
            by: String::new(),
            label: String::new(),
            kind,
            data,
        };
        assert_eq!(row("binary", json!("AQID")).preview(), "3 bytes");
        assert_eq!(row("binary", json!("AQ==")).preview(), "1 bytes");
        assert_eq!(row("json", json!({"a": 1})).preview(), "{\"a\":1}");
        assert_eq!(row("text", json!("a\nb")).preview(), "a b");
        let long = row("text", json!("x".repeat(100))).preview();
        assert_eq!(long.chars().count(), PREVIEW_CHARS);
        assert!(long.ends_with("..."));
    }
}
