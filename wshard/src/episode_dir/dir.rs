//! Opening an episode directory in either layout:
//!
//! - **single-stream** (protocol v1, today's layout): `{EP}_manifest.wshard` and its chunks,
//!   read as one stream named [`SINGLE_STREAM_NAME`];
//! - **multi-stream**: `{EP}_index.json` listing the streams, each under `streams/{STREAM}/`
//!   with its own manifest and chunks. A stream folder the index does not list (an operator
//!   put it there) is read too, after the listed ones.
//!
//! Both may hold `{EP}_events.jsonl` and `{EP}_annotations.json`.

use std::path::{Component, Path, PathBuf};

use super::chunk_file::StreamManifest;
use super::column::ChannelData;
use super::error::EpisodeDirError;
use super::event_log::{read_event_log, read_optional, EpisodeEvent};
use super::index::{
    ChannelEntry, EpisodeIndex, EpisodeStatus, IndexError, StreamEntry, TIMEBASE_TICKS,
};
use super::names::{
    annotations_file_name, events_file_name, index_file_name, validate_stream_name,
    INDEX_FILE_SUFFIX, SINGLE_STREAM_NAME, STREAMS_DIR,
};
use super::stream::{StreamData, StreamInfo};
use crate::episode::{DType, Lane, Timebase};
use crate::manifest::{manifest_file_name, validate_uri, MANIFEST_FILE_SUFFIX};

/// Which layout an episode directory has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `{EP}_manifest.wshard` and its chunks: one stream, `main`.
    SingleStream,
    /// `{EP}_index.json` and `streams/*`.
    MultiStream,
}

/// An episode directory, opened: its streams listed, its events read. Stream data is read
/// on demand with [`EpisodeDir::read_stream`].
#[derive(Debug)]
pub struct EpisodeDir {
    path: PathBuf,
    episode_id: String,
    layout: Layout,
    index: Option<EpisodeIndex>,
    status: Option<EpisodeStatus>,
    streams: Vec<StreamInfo>,
    events: Vec<EpisodeEvent>,
    torn_event_bytes: u64,
}

fn exists(path: &Path) -> Result<bool, EpisodeDirError> {
    path.try_exists()
        .map_err(|e| EpisodeDirError::io("stat", path, e))
}

/// The episode id and layout of `dir`: from the directory's name, else from the one index
/// (or manifest) file it holds.
fn find_episode(dir: &Path) -> Result<(String, Layout), EpisodeDirError> {
    let name = dir
        .canonicalize()
        .map_err(|e| EpisodeDirError::io("open", dir, e))?
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_owned();
    if exists(&dir.join(index_file_name(&name)))? {
        return Ok((name, Layout::MultiStream));
    }
    if exists(&dir.join(manifest_file_name(&name)))? {
        return Ok((name, Layout::SingleStream));
    }
    let mut indexes = Vec::new();
    let mut manifests = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| EpisodeDirError::io("list", dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| EpisodeDirError::io("list", dir, e))?;
        let file = entry.file_name();
        let Some(file) = file.to_str() else { continue };
        if let Some(ep) = file.strip_suffix(INDEX_FILE_SUFFIX) {
            indexes.push(ep.to_owned());
        } else if let Some(ep) = file.strip_suffix(MANIFEST_FILE_SUFFIX) {
            manifests.push(ep.to_owned());
        }
    }
    match (indexes.as_slice(), manifests.as_slice()) {
        ([one], _) => Ok((one.clone(), Layout::MultiStream)),
        ([], [one]) => Ok((one.clone(), Layout::SingleStream)),
        _ => Err(EpisodeDirError::NotAnEpisode {
            dir: dir.to_path_buf(),
            message: format!(
                "expected one {} or {} (found {} index and {} manifest files)",
                index_file_name(&name),
                manifest_file_name(&name),
                indexes.len(),
                manifests.len()
            ),
        }),
    }
}

/// A stream's listing from its manifest (and the index entry, when there is one).
fn stream_info(
    name: &str,
    manifest_path: &Path,
    entry: Option<&StreamEntry>,
) -> Result<StreamInfo, EpisodeDirError> {
    let mut info = StreamInfo {
        name: name.to_owned(),
        manifest_path: manifest_path.to_path_buf(),
        timebase: entry.map(timebase_of),
        channels: entry.map(|e| e.channels.clone()).unwrap_or_default(),
        producer: entry.map(|e| e.producer.clone()),
        status: entry.map(|e| e.status),
        steps: 0,
        chunks: 0,
        first_t_ns: entry.and_then(|e| e.first_t_ns),
        last_t_ns: entry.and_then(|e| e.last_t_ns),
        manifest_missing: false,
    };
    if !exists(manifest_path)? {
        let chunks = entry.map_or(0, |e| e.chunks);
        if entry.is_none() || chunks > 0 {
            return Err(EpisodeDirError::MissingManifest {
                stream: name.to_owned(),
                path: manifest_path.to_path_buf(),
                chunks,
            });
        }
        info.manifest_missing = true;
        info.first_t_ns = None;
        info.last_t_ns = None;
        return Ok(info);
    }
    let m = StreamManifest::read(name, manifest_path)?;
    info.steps = m.manifest.total_timesteps;
    info.chunks = m.manifest.chunks.len() as u64;
    if entry.is_none() {
        info.status = m.manifest.status.as_deref().and_then(EpisodeStatus::parse);
    }
    (info.first_t_ns, info.last_t_ns) = (None, None);
    if let Some(c) = m.non_empty().next() {
        let file = m.open_chunk(c)?;
        info.timebase = Some(file.meta.timebase);
        info.channels = file.channel_entries(name)?;
        info.first_t_ns = file.timestamps(name)?.first().copied();
    }
    if let Some(c) = m.non_empty().next_back() {
        info.last_t_ns = m.open_chunk(c)?.timestamps(name)?.last().copied();
    }
    Ok(info)
}

fn timebase_of(e: &StreamEntry) -> Timebase {
    if e.timebase == TIMEBASE_TICKS {
        Timebase::Ticks { tick_hz: e.tick_hz }
    } else {
        Timebase::TimestampsNs { dt_ns: 0 }
    }
}

/// The stream folder's manifest named in the index, checked to stay in `streams/{name}/`.
fn listed_manifest(
    dir: &Path,
    index_file: &Path,
    entry: &StreamEntry,
) -> Result<PathBuf, EpisodeDirError> {
    let rel = Path::new(&entry.manifest);
    let parts: Vec<Component<'_>> = rel.components().collect();
    let ok = match parts.as_slice() {
        [Component::Normal(s), Component::Normal(n), Component::Normal(f)] => {
            *s == STREAMS_DIR
                && *n == entry.name.as_str()
                && f.to_str().is_some_and(|f| validate_uri(f).is_ok())
        }
        _ => false,
    };
    if !ok {
        return Err(EpisodeDirError::BadManifestPath {
            file: index_file.to_path_buf(),
            stream: entry.name.clone(),
            manifest: entry.manifest.clone(),
        });
    }
    Ok(dir.join(rel))
}

/// Stream folders under `streams/` the index does not list, with a manifest, by name.
fn unlisted_streams(dir: &Path, index: &EpisodeIndex) -> Result<Vec<String>, EpisodeDirError> {
    let streams = dir.join(STREAMS_DIR);
    let entries = match std::fs::read_dir(&streams) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(EpisodeDirError::io("list", &streams, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| EpisodeDirError::io("list", &streams, e))?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if validate_stream_name(&name).is_err() || index.stream(&name).is_some() {
            continue;
        }
        if exists(&streams.join(&name).join(manifest_file_name(&name)))? {
            out.push(name);
        }
    }
    out.sort();
    Ok(out)
}

impl EpisodeDir {
    /// Open `path`, an episode directory of either layout: read the index (or the manifest),
    /// every stream's manifest and the meta and timestamps of its first and last chunk, the
    /// events and the annotations.
    ///
    /// # Errors
    /// [`EpisodeDirError`] naming the file (and stream, chunk, line or field) that is
    /// missing or bad.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, EpisodeDirError> {
        let dir = path.as_ref();
        let (episode_id, layout) = find_episode(dir)?;
        let annotations = dir.join(annotations_file_name(&episode_id));
        let mut me = Self {
            path: dir.to_path_buf(),
            episode_id,
            layout,
            index: None,
            status: None,
            streams: Vec::new(),
            events: Vec::new(),
            torn_event_bytes: 0,
        };
        let events_file = match layout {
            Layout::SingleStream => {
                let manifest = dir.join(manifest_file_name(&me.episode_id));
                let info = stream_info(SINGLE_STREAM_NAME, &manifest, None)?;
                me.status = info.status;
                me.streams.push(info);
                dir.join(events_file_name(&me.episode_id))
            }
            Layout::MultiStream => {
                let index_file = dir.join(index_file_name(&me.episode_id));
                let bytes = read_optional(&index_file)?.unwrap_or_default();
                let index = EpisodeIndex::from_json_bytes(&bytes, &index_file)?;
                for (position, entry) in index.streams.iter().enumerate() {
                    validate_stream_name(&entry.name).map_err(|source| {
                        EpisodeDirError::BadStreamName {
                            file: index_file.clone(),
                            position,
                            source,
                        }
                    })?;
                    let manifest = listed_manifest(dir, &index_file, entry)?;
                    me.streams
                        .push(stream_info(&entry.name, &manifest, Some(entry))?);
                }
                for name in unlisted_streams(dir, &index)? {
                    let manifest = dir
                        .join(STREAMS_DIR)
                        .join(&name)
                        .join(manifest_file_name(&name));
                    me.streams.push(stream_info(&name, &manifest, None)?);
                }
                validate_uri(&index.events_file).map_err(|e| IndexError::Field {
                    file: index_file.clone(),
                    field: "events_file".into(),
                    message: e.to_string(),
                })?;
                let events = dir.join(&index.events_file);
                me.status = Some(index.status);
                me.index = Some(index);
                events
            }
        };
        (me.events, me.torn_event_bytes) = read_event_log(&events_file, &annotations)?;
        Ok(me)
    }

    /// The directory as given to [`EpisodeDir::open`].
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    #[must_use]
    pub fn episode_id(&self) -> &str {
        &self.episode_id
    }

    #[must_use]
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The index of a multi-stream episode.
    #[must_use]
    pub fn index(&self) -> Option<&EpisodeIndex> {
        self.index.as_ref()
    }

    /// The index status (multi-stream) or the manifest `status` (single-stream).
    #[must_use]
    pub fn status(&self) -> Option<EpisodeStatus> {
        self.status
    }

    /// The streams: the index's order, then unlisted stream folders by name.
    #[must_use]
    pub fn streams(&self) -> &[StreamInfo] {
        &self.streams
    }

    #[must_use]
    pub fn stream(&self, name: &str) -> Option<&StreamInfo> {
        self.streams.iter().find(|s| s.name == name)
    }

    /// Events and annotations, sorted by `t_ns`.
    #[must_use]
    pub fn events(&self) -> &[EpisodeEvent] {
        &self.events
    }

    /// Length of a torn last line of the events file (never an acknowledged event), 0 when
    /// there is none.
    #[must_use]
    pub fn torn_event_bytes(&self) -> u64 {
        self.torn_event_bytes
    }

    /// Read stream `name`: every chunk its manifest lists, concatenated per channel,
    /// uncompressed blocks kept in place in the memory-mapped chunk files, every block's
    /// CRC checked.
    ///
    /// # Errors
    /// [`EpisodeDirError::UnknownStream`], and errors naming the manifest, chunk or block.
    pub fn read_stream(&self, name: &str) -> Result<StreamData, EpisodeDirError> {
        let info = self
            .stream(name)
            .ok_or_else(|| EpisodeDirError::UnknownStream {
                episode: self.episode_id.clone(),
                stream: name.to_owned(),
                available: self
                    .streams
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        if info.manifest_missing || info.chunks == 0 {
            return empty_stream(info);
        }
        StreamManifest::read(name, &info.manifest_path)?.read_data()
    }

    /// Read every stream, in [`EpisodeDir::streams`] order.
    ///
    /// # Errors
    /// As [`EpisodeDir::read_stream`].
    pub fn read_streams(&self) -> Result<Vec<StreamData>, EpisodeDirError> {
        self.streams
            .iter()
            .map(|s| self.read_stream(&s.name))
            .collect()
    }
}

/// A stream without steps, with the channels its listing gives.
fn empty_stream(info: &StreamInfo) -> Result<StreamData, EpisodeDirError> {
    let channels = info
        .channels
        .iter()
        .map(|c| channel_from_entry(info, c))
        .collect::<Result<Vec<_>, _>>()?;
    let timebase = info.timebase.unwrap_or(Timebase::TimestampsNs { dt_ns: 0 });
    Ok(StreamData::new(
        info.name.clone(),
        timebase,
        Vec::new(),
        channels,
    )?)
}

fn channel_from_entry(info: &StreamInfo, c: &ChannelEntry) -> Result<ChannelData, EpisodeDirError> {
    let bad = |message: String| EpisodeDirError::Chunk {
        stream: info.name.clone(),
        chunk: 0,
        uri: String::new(),
        message,
    };
    let dtype = DType::parse(&c.dtype)
        .map_err(|_| bad(format!("channel `{}`: unknown dtype {:?}", c.name, c.dtype)))?;
    let lane = match c.lane.as_str() {
        "signal" => Lane::Signal,
        "action" => Lane::Action,
        other => return Err(bad(format!("channel `{}`: unknown lane {other:?}", c.name))),
    };
    Ok(ChannelData::new(
        c.name.clone(),
        lane,
        dtype,
        c.shape.clone(),
    ))
}
