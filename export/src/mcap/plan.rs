//! What an episode becomes in MCAP before anything is written: one planned channel per
//! stream channel (topic `/STREAM/CHANNEL`, its schema and metadata, vector or picture),
//! checked for topics that would collide and for times before the Unix epoch.

use std::collections::{BTreeMap, BTreeSet};

use wshard::episode::{Lane, Timebase};
use wshard::episode_dir::{ChannelData, EpisodeEvent, StreamData};

use super::error::McapError;
use super::events::{ANNOTATIONS_TOPIC, EVENTS_TOPIC};
use super::options::McapOptions;
use super::picture::Picture;
use super::schemas::{self, VECTOR_SCHEMA};
use super::stamp::Stamp;
use crate::channel_kind::ChannelKind;

/// One stream channel as an MCAP channel.
#[derive(Clone, Debug)]
pub(crate) struct PlannedChannel {
    pub topic: String,
    pub schema_name: &'static str,
    pub schema: Vec<u8>,
    pub metadata: BTreeMap<String, String>,
    /// `None`: a vector (`wshard.Vector`).
    pub picture: Option<Picture>,
}

/// The MCAP topic of `channel` of `stream`.
#[must_use]
pub fn topic(stream: &str, channel: &str) -> String {
    format!("/{stream}/{channel}")
}

fn lane_name(lane: Lane) -> &'static str {
    match lane {
        Lane::Signal => "signal",
        Lane::Action => "action",
    }
}

/// The channel metadata: where it comes from in the episode.
fn metadata(
    s: &StreamData,
    c: &ChannelData,
    kind: ChannelKind,
    format: &str,
) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    m.insert("stream".into(), s.name().to_owned());
    m.insert("channel".into(), c.name.clone());
    m.insert("lane".into(), lane_name(c.lane).into());
    m.insert("dtype".into(), c.dtype.code().into());
    m.insert(
        "shape".into(),
        serde_json::to_string(&c.shape).unwrap_or_default(),
    );
    match s.timebase() {
        Timebase::Ticks { tick_hz } => {
            m.insert("timebase".into(), "ticks".into());
            m.insert("tick_hz".into(), tick_hz.to_string());
        }
        Timebase::TimestampsNs { .. } => {
            m.insert("timebase".into(), "timestamps_ns".into());
        }
    }
    let kind_name = match kind {
        ChannelKind::LowDim => "vector",
        ChannelKind::Color { .. } => "color",
        ChannelKind::Mono { .. } => "mono",
        ChannelKind::Depth { .. } => "depth",
    };
    m.insert("kind".into(), kind_name.into());
    m.insert("format".into(), format.into());
    m
}

/// Plan every channel of every stream, in stream order then channel order.
///
/// # Errors
/// [`McapError::DuplicateTopic`] when two channels would share a topic (or take
/// `/events` / `/annotations`), [`McapError::NegativeTime`] for a stream that starts
/// before the Unix epoch, [`McapError::NegativeEventTime`] for such an event.
pub(crate) fn plan(
    episode: &str,
    streams: &[StreamData],
    events: &[EpisodeEvent],
    opts: &McapOptions,
) -> Result<Vec<Vec<PlannedChannel>>, McapError> {
    let mut taken: BTreeSet<String> = [EVENTS_TOPIC, ANNOTATIONS_TOPIC]
        .into_iter()
        .map(String::from)
        .collect();
    let mut out = Vec::with_capacity(streams.len());
    for s in streams {
        // Timestamps never go backwards, so the first is the smallest.
        if let Some(&t_ns) = s.timestamps_ns().first() {
            if Stamp::new(t_ns).is_none() {
                return Err(McapError::NegativeTime {
                    episode: episode.to_owned(),
                    stream: s.name().to_owned(),
                    step: 0,
                    t_ns,
                });
            }
        }
        let mut channels = Vec::with_capacity(s.channels().len());
        for c in s.channels() {
            let topic = topic(s.name(), &c.name);
            if !taken.insert(topic.clone()) {
                return Err(McapError::DuplicateTopic {
                    episode: episode.to_owned(),
                    stream: s.name().to_owned(),
                    channel: c.name.clone(),
                    topic,
                });
            }
            let kind = ChannelKind::of(&c.name, c.dtype, &c.shape);
            let picture = Picture::of(kind, opts.images);
            let (schema_name, schema, format) = match &picture {
                Some(p) => (p.schema_name(), p.schema(), p.format_name()),
                None => (
                    VECTOR_SCHEMA,
                    schemas::vector(c.dtype, c.step_elements()),
                    "json",
                ),
            };
            channels.push(PlannedChannel {
                metadata: metadata(s, c, kind, format),
                topic,
                schema_name,
                schema,
                picture,
            });
        }
        out.push(channels);
    }
    if let Some(e) = events.iter().find(|e| Stamp::new(e.t_ns).is_none()) {
        return Err(McapError::NegativeEventTime {
            episode: episode.to_owned(),
            what: if e.is_annotation() {
                "annotation"
            } else {
                "event"
            },
            seq: e.seq,
            label: e.label.clone(),
            t_ns: e.t_ns,
        });
    }
    Ok(out)
}
