//! One episode to one MCAP file: `<out>/<episode>.mcap`, written as
//! `<episode>.mcap.partial` and renamed when complete, so a crashed export never looks
//! finished (the file is not fsynced: an export can be run again).
//!
//! Messages are written in log-time order across all channels (a k-way merge of the
//! streams and the events; at equal times streams in episode order, then events), each
//! stream step giving one message per channel, with log time = publish time = the step's
//! timestamp and `sequence` = the step index (modulo 2^32; for events the event's `seq`).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use mcap::records::{MessageHeader, Metadata};
use mcap::{Compression, WriteOptions, Writer};
use wshard::episode_dir::{EpisodeDir, EpisodeEvent, Layout, StreamData};

use super::error::McapError;
use super::events::{event_message, ANNOTATIONS_TOPIC, EVENTS_TOPIC};
use super::options::{McapCompression, McapOptions};
use super::plan::{plan, PlannedChannel};
use super::schemas::{self, ANNOTATION_SCHEMA, EVENT_SCHEMA, MESSAGE_ENCODING, SCHEMA_ENCODING};
use super::stamp::Stamp;
use super::summary_order::sort_summary;
use super::vector::vector_message;

/// The name of the metadata record describing the episode.
pub const EPISODE_METADATA: &str = "wshard.episode";
/// The MCAP header's `library`.
const LIBRARY: &str = concat!("wshard-export ", env!("CARGO_PKG_VERSION"));
/// Suffix of a file being written.
pub const PARTIAL_SUFFIX: &str = ".partial";
/// Extension of the files written.
pub const MCAP_EXTENSION: &str = "mcap";

/// What one episode's export wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpisodeMcap {
    pub episode_id: String,
    /// The finished file.
    pub file: PathBuf,
    /// MCAP channels (stream channels, plus events and annotations when there are any).
    pub channels: u64,
    pub messages: u64,
    /// Size of the file.
    pub bytes: u64,
}

/// The file `<out_dir>/<episode>.mcap`.
#[must_use]
pub fn mcap_file(out_dir: &Path, episode_id: &str) -> PathBuf {
    out_dir.join(format!("{episode_id}.{MCAP_EXTENSION}"))
}

fn partial(file: &Path) -> PathBuf {
    let mut s = file.as_os_str().to_owned();
    s.push(PARTIAL_SUFFIX);
    PathBuf::from(s)
}

/// The episode's metadata record: id, layout, status, env, creation time and the index's
/// metadata object (compact JSON).
fn episode_metadata(ep: &EpisodeDir) -> Metadata {
    let mut m = BTreeMap::new();
    m.insert("episode_id".to_owned(), ep.episode_id().to_owned());
    let layout = match ep.layout() {
        Layout::SingleStream => "single-stream",
        Layout::MultiStream => "multi-stream",
    };
    m.insert("layout".to_owned(), layout.to_owned());
    if let Some(s) = ep.status() {
        m.insert("status".to_owned(), s.as_str().to_owned());
    }
    let streams: Vec<&str> = ep.streams().iter().map(|s| s.name.as_str()).collect();
    m.insert("streams".to_owned(), streams.join(","));
    if let Some(index) = ep.index() {
        m.insert("env_id".to_owned(), index.env_id.clone());
        m.insert(
            "created_unix_ns".to_owned(),
            index.created_unix_ns.to_string(),
        );
        m.insert(
            "metadata".to_owned(),
            serde_json::to_string(&index.metadata).unwrap_or_default(),
        );
    }
    Metadata {
        name: EPISODE_METADATA.to_owned(),
        metadata: m,
    }
}

/// Where the next message comes from in the merge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Next {
    t_ns: i64,
    /// Stream position, or the number of streams for the events.
    source: usize,
    /// Step of the stream, or position in the event list.
    step: u64,
}

struct Out<'a> {
    episode: &'a str,
    file: &'a Path,
    writer: Writer<BufWriter<File>>,
    messages: u64,
}

impl Out<'_> {
    fn err(&self, source: mcap::McapError) -> McapError {
        McapError::Write {
            episode: self.episode.to_owned(),
            file: self.file.to_path_buf(),
            source,
        }
    }

    fn channel(
        &mut self,
        name: &str,
        schema: &[u8],
        topic: &str,
        meta: &BTreeMap<String, String>,
    ) -> Result<u16, McapError> {
        let sid = self
            .writer
            .add_schema(name, SCHEMA_ENCODING, schema)
            .map_err(|e| self.err(e))?;
        self.writer
            .add_channel(sid, topic, MESSAGE_ENCODING, meta)
            .map_err(|e| self.err(e))
    }

    fn write(
        &mut self,
        channel_id: u16,
        sequence: u64,
        ns: u64,
        data: &[u8],
    ) -> Result<(), McapError> {
        let header = MessageHeader {
            channel_id,
            // The step index modulo 2^32 (MCAP's field is 32 bits).
            sequence: sequence as u32,
            log_time: ns,
            publish_time: ns,
        };
        self.messages += 1;
        self.writer
            .write_to_known_channel(&header, data)
            .map_err(|e| self.err(e))
    }
}

fn write_options(opts: &McapOptions) -> WriteOptions {
    let compression = match opts.compression {
        McapCompression::Zstd => Some(Compression::Zstd),
        McapCompression::Lz4 => Some(Compression::Lz4),
        McapCompression::None => None,
    };
    WriteOptions::new()
        .compression(compression)
        .chunk_size(Some(opts.chunk_size.max(1)))
        .library(LIBRARY)
        // One thread per file: the same bytes on every machine; episodes run in parallel.
        .compression_threads(0)
}

/// Export the episode at `dir` to `<out_dir>/<episode>.mcap`.
///
/// # Errors
/// [`McapError::Episode`] when the episode cannot be read, the errors of the plan
/// (topics, times), [`McapError::Encode`] for a picture, [`McapError::Io`] /
/// [`McapError::Write`] for the output. The `.partial` file is removed on error.
pub fn export_episode(
    dir: &Path,
    out_dir: &Path,
    opts: &McapOptions,
) -> Result<EpisodeMcap, McapError> {
    let episode_err = |source| McapError::Episode {
        dir: dir.to_path_buf(),
        source,
    };
    let ep = EpisodeDir::open(dir).map_err(episode_err)?;
    let streams = ep.read_streams().map_err(episode_err)?;
    let planned = plan(ep.episode_id(), &streams, ep.events(), opts)?;
    let file = mcap_file(out_dir, ep.episode_id());
    let tmp = partial(&file);
    let result = write_file(&ep, &streams, &planned, &tmp, opts);
    let (channels, messages) = match result {
        Ok(counts) => counts,
        Err(e) => {
            // Best effort: the error above is what matters.
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    if let Err(e) = std::fs::rename(&tmp, &file) {
        let _ = std::fs::remove_file(&tmp);
        return Err(McapError::io("rename into", &file, e));
    }
    let bytes = std::fs::metadata(&file)
        .map_err(|e| McapError::io("stat", &file, e))?
        .len();
    Ok(EpisodeMcap {
        episode_id: ep.episode_id().to_owned(),
        file,
        channels,
        messages,
        bytes,
    })
}

/// Write the whole file at `path`; (channels, messages).
fn write_file(
    ep: &EpisodeDir,
    streams: &[StreamData],
    planned: &[Vec<PlannedChannel>],
    path: &Path,
    opts: &McapOptions,
) -> Result<(u64, u64), McapError> {
    // Read too: the summary is reordered in place once written.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| McapError::io("create", path, e))?;
    let writer =
        Writer::with_options(BufWriter::new(f), write_options(opts)).map_err(|source| {
            McapError::Write {
                episode: ep.episode_id().to_owned(),
                file: path.to_path_buf(),
                source,
            }
        })?;
    let mut out = Out {
        episode: ep.episode_id(),
        file: path,
        writer,
        messages: 0,
    };
    // First, before any chunk is open (writing metadata closes the open chunk).
    out.writer
        .write_metadata(&episode_metadata(ep))
        .map_err(|e| out.err(e))?;
    let mut ids: Vec<Vec<u16>> = Vec::with_capacity(planned.len());
    for channels in planned {
        let mut row = Vec::with_capacity(channels.len());
        for c in channels {
            row.push(out.channel(c.schema_name, &c.schema, &c.topic, &c.metadata)?);
        }
        ids.push(row);
    }
    let events = ep.events();
    let no_meta = BTreeMap::new();
    let events_id = if events.iter().any(|e| !e.is_annotation()) {
        Some(out.channel(EVENT_SCHEMA, &schemas::event(), EVENTS_TOPIC, &no_meta)?)
    } else {
        None
    };
    let annotations_id = if events.iter().any(EpisodeEvent::is_annotation) {
        Some(out.channel(
            ANNOTATION_SCHEMA,
            &schemas::annotation(),
            ANNOTATIONS_TOPIC,
            &no_meta,
        )?)
    } else {
        None
    };
    let channel_count = ids.iter().map(Vec::len).sum::<usize>()
        + usize::from(events_id.is_some())
        + usize::from(annotations_id.is_some());
    let mut heap = BinaryHeap::new();
    for (source, s) in streams.iter().enumerate() {
        if let Some(&t_ns) = s.timestamps_ns().first() {
            heap.push(Reverse(Next {
                t_ns,
                source,
                step: 0,
            }));
        }
    }
    if let Some(e) = events.first() {
        heap.push(Reverse(Next {
            t_ns: e.t_ns,
            source: streams.len(),
            step: 0,
        }));
    }
    let mut buf = Vec::new();
    while let Some(Reverse(next)) = heap.pop() {
        // The plan checked every time is at or after the epoch.
        let stamp = Stamp::new(next.t_ns).unwrap_or(Stamp { ns: 0 });
        let index = usize::try_from(next.step).unwrap_or(usize::MAX);
        if let (Some(s), Some(channels), Some(row)) = (
            streams.get(next.source),
            planned.get(next.source),
            ids.get(next.source),
        ) {
            for ((c, data), &id) in s.channels().iter().zip(channels).zip(row) {
                // StreamData checked every channel has a step per timestamp.
                let bytes = c.step(next.step).unwrap_or_default();
                match &data.picture {
                    None => vector_message(stamp, c.dtype, bytes, &mut buf),
                    Some(p) => p
                        .message(stamp, s.name(), bytes, opts.jpeg_quality, &mut buf)
                        .map_err(|(format, message)| McapError::Encode {
                            episode: ep.episode_id().to_owned(),
                            stream: s.name().to_owned(),
                            channel: c.name.clone(),
                            step: next.step,
                            format,
                            message,
                        })?,
                }
                out.write(id, next.step, stamp.ns, &buf)?;
            }
            if let Some(&t_ns) = s.timestamps_ns().get(index + 1) {
                heap.push(Reverse(Next {
                    t_ns,
                    source: next.source,
                    step: next.step + 1,
                }));
            }
        } else if let Some(e) = events.get(index) {
            let id = if e.is_annotation() {
                annotations_id
            } else {
                events_id
            };
            if let Some(id) = id {
                out.write(id, e.seq, stamp.ns, &event_message(stamp, e))?;
            }
            if let Some(n) = events.get(index + 1) {
                heap.push(Reverse(Next {
                    t_ns: n.t_ns,
                    source: next.source,
                    step: next.step + 1,
                }));
            }
        }
    }
    out.writer.finish().map_err(|e| out.err(e))?;
    let messages = out.messages;
    let mut file = out
        .writer
        .into_inner()
        .into_inner()
        .map_err(|e| McapError::io("write", path, e.into_error()))?;
    sort_summary(&mut file).map_err(|e| McapError::io("order the summary of", path, e))?;
    Ok((channel_count as u64, messages))
}
