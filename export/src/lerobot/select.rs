//! Which channels become which LeRobot feature: `observation.state` (low-dimensional
//! signal-lane channels, concatenated), `action` (action-lane channels), one video
//! `observation.images.<stream>_<channel>` per colour or mono picture channel; depth is left
//! out (LeRobot videos are 8-bit), and so are, by default, integer channels float32 cannot
//! hold exactly (the ROS bridge's `receive_t_ns` times).
//!
//! Channels are taken in canonical order, streams by name (each stream's channels in their
//! recorded order), not in the order the streams joined the episode: two recordings of one
//! robot have the same features whichever producer started first. Element names are
//! `STREAM/CHANNEL` (or `STREAM/CHANNEL_i`), unique even when several streams have a channel
//! of one name. `--exclude` patterns (`crate::channel_filter`) leave channels out first.

use wshard::episode::DType;
use wshard::episode_dir::EpisodeDir;

use super::error::LerobotError;
use super::options::LerobotOptions;
use crate::channel_filter::ChannelFilter;
use crate::channel_kind::ChannelKind;

/// The feature key of the state vector.
pub const STATE_KEY: &str = "observation.state";
/// The feature key of the action vector.
pub const ACTION_KEY: &str = "action";
/// The prefix of picture features.
pub const IMAGES_PREFIX: &str = "observation.images.";

/// Every integer of at most this magnitude is exactly a float32 (its significand has 24
/// bits); larger integer values are refused in a vector feature.
pub const FLOAT32_EXACT_INTEGERS: f64 = 16_777_216.0;

/// Why a wide integer channel is not in a default feature.
const WIDE_INTEGER_LEFT_OUT: &str = "an integer wider than 24 bits: float32 (LeRobot's vector dtype) cannot hold its values exactly (a time in ns would become a constant); name it in --state/--action to convert it anyway (values beyond 2^24 are refused), or --exclude it";

/// Whether `dtype` is an integer float32 does not hold every value of (32 and 64 bits).
#[must_use]
pub fn wider_than_float32(dtype: DType) -> bool {
    matches!(dtype, DType::I32 | DType::U32 | DType::I64 | DType::U64)
}

/// One channel of an episode.
#[derive(Clone, Debug, PartialEq)]
pub struct ChannelRef {
    pub stream: String,
    pub channel: String,
    pub lane: String,
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub kind: ChannelKind,
}

impl ChannelRef {
    /// `STREAM/CHANNEL`.
    #[must_use]
    pub fn key(&self) -> String {
        format!("{}/{}", self.stream, self.channel)
    }

    /// Elements per step.
    #[must_use]
    pub fn elements(&self) -> usize {
        self.shape
            .iter()
            .map(|&d| usize::try_from(d).unwrap_or(usize::MAX))
            .product()
    }
}

/// A float32 vector feature made of channels concatenated.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorFeature {
    pub key: &'static str,
    pub channels: Vec<ChannelRef>,
    /// One name per element: `STREAM/CHANNEL` for a one-element channel, else
    /// `STREAM/CHANNEL_i`.
    pub names: Vec<String>,
}

impl VectorFeature {
    #[must_use]
    pub fn dim(&self) -> usize {
        self.names.len()
    }
}

/// A picture channel encoded as a video.
#[derive(Clone, Debug, PartialEq)]
pub struct VideoFeature {
    /// `observation.images.<stream>_<channel>`.
    pub key: String,
    pub source: ChannelRef,
    pub height: u64,
    pub width: u64,
    /// A one-channel picture, written as grey RGB.
    pub mono: bool,
}

/// The features of the dataset, from one episode.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub state: Option<VectorFeature>,
    pub action: Option<VectorFeature>,
    pub videos: Vec<VideoFeature>,
    /// Channels left out of the default features (`STREAM/CHANNEL`, why): depth pictures,
    /// wide integers.
    pub left_out: Vec<(String, &'static str)>,
}

impl Plan {
    /// The vector features present.
    pub fn vectors(&self) -> impl Iterator<Item = &VectorFeature> {
        self.state.iter().chain(self.action.iter())
    }

    /// The streams the features read, in first-use order.
    #[must_use]
    pub fn streams(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let all = self
            .vectors()
            .flat_map(|v| v.channels.iter())
            .chain(self.videos.iter().map(|v| &v.source));
        for c in all {
            if !out.contains(&c.stream) {
                out.push(c.stream.clone());
            }
        }
        out
    }
}

/// Every channel of `episode` that `exclude` keeps, in canonical order: streams by name,
/// each stream's channels in their order.
fn channels(episode: &EpisodeDir, exclude: &ChannelFilter) -> Vec<ChannelRef> {
    let mut streams: Vec<_> = episode.streams().iter().collect();
    streams.sort_by(|a, b| a.name.cmp(&b.name));
    let mut out = Vec::new();
    for s in streams {
        for c in &s.channels {
            let Ok(dtype) = DType::parse(&c.dtype) else {
                continue;
            };
            if exclude.excludes(&s.name, &c.name) {
                continue;
            }
            out.push(ChannelRef {
                stream: s.name.clone(),
                channel: c.name.clone(),
                lane: c.lane.clone(),
                dtype,
                kind: ChannelKind::of(&c.name, dtype, &c.shape),
                shape: c.shape.clone(),
            });
        }
    }
    out
}

fn available(all: &[ChannelRef]) -> String {
    let names: Vec<String> = all.iter().map(ChannelRef::key).collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// The channel `key` names (`STREAM/CHANNEL`, or a channel name only one stream has).
fn resolve_key(
    episode: &str,
    feature: &'static str,
    key: &str,
    all: &[ChannelRef],
) -> Result<ChannelRef, LerobotError> {
    let bad = |reason: String| LerobotError::BadChannel {
        episode: episode.to_owned(),
        feature,
        key: key.to_owned(),
        reason,
    };
    let found: Vec<&ChannelRef> = if key.contains('/') {
        all.iter().filter(|c| c.key() == key).collect()
    } else {
        all.iter().filter(|c| c.channel == key).collect()
    };
    match found.as_slice() {
        [] => Err(bad(format!(
            "no such channel (channels: {})",
            available(all)
        ))),
        [one] if one.kind.is_picture() => Err(bad(
            "is a picture, not a vector (pictures become observation.images.* videos)".into(),
        )),
        [one] => Ok((*one).clone()),
        many => Err(bad(format!(
            "in several streams ({}): write STREAM/CHANNEL",
            many.iter().map(|c| c.key()).collect::<Vec<_>>().join(", ")
        ))),
    }
}

fn element_names(channels: &[ChannelRef]) -> Vec<String> {
    let mut names = Vec::new();
    for c in channels {
        let n = c.elements();
        if n == 1 {
            names.push(c.key());
        } else {
            names.extend((0..n).map(|i| format!("{}_{i}", c.key())));
        }
    }
    names
}

/// Whether `c` is in a default vector feature of `lane`.
fn default_vector(c: &ChannelRef, lane: &str) -> bool {
    c.lane == lane && !c.kind.is_picture() && c.dtype != DType::Bool && !wider_than_float32(c.dtype)
}

fn vector(
    episode: &str,
    key: &'static str,
    flag: &'static str,
    chosen: Option<&[String]>,
    lane: &str,
    all: &[ChannelRef],
) -> Result<Option<VectorFeature>, LerobotError> {
    let channels: Vec<ChannelRef> = match chosen {
        Some(keys) => keys
            .iter()
            .map(|k| resolve_key(episode, flag, k, all))
            .collect::<Result<_, _>>()?,
        None => all
            .iter()
            .filter(|c| default_vector(c, lane))
            .cloned()
            .collect(),
    };
    if channels.is_empty() {
        return Ok(None);
    }
    Ok(Some(VectorFeature {
        key,
        names: element_names(&channels),
        channels,
    }))
}

/// The features of `episode` as `opts` asks.
///
/// # Errors
/// [`LerobotError::BadChannel`] for a `--state` / `--action` key naming no vector channel,
/// [`LerobotError::NoChannels`] when nothing would be exported.
pub fn plan(
    episode: &EpisodeDir,
    opts: &LerobotOptions,
    exclude: &ChannelFilter,
) -> Result<Plan, LerobotError> {
    let id = episode.episode_id();
    let all = channels(episode, exclude);
    let state = vector(
        id,
        STATE_KEY,
        "state",
        opts.state.as_deref(),
        "signal",
        &all,
    )?;
    let action = vector(
        id,
        ACTION_KEY,
        "action",
        opts.action.as_deref(),
        "action",
        &all,
    )?;
    let mut videos = Vec::new();
    let mut left_out = Vec::new();
    for c in &all {
        match c.kind {
            ChannelKind::Color { height, width } | ChannelKind::Mono { height, width } => {
                videos.push(VideoFeature {
                    key: format!("{IMAGES_PREFIX}{}_{}", c.stream, c.channel),
                    source: c.clone(),
                    height,
                    width,
                    mono: matches!(c.kind, ChannelKind::Mono { .. }),
                });
            }
            ChannelKind::Depth { .. } => left_out.push((
                c.key(),
                "depth: LeRobot videos are 8-bit, a depth picture does not fit one",
            )),
            ChannelKind::LowDim => {
                // A wide integer the default feature of its lane would have taken.
                let by_default = match c.lane.as_str() {
                    "signal" => opts.state.is_none(),
                    "action" => opts.action.is_none(),
                    _ => false,
                };
                if wider_than_float32(c.dtype) && by_default {
                    left_out.push((c.key(), WIDE_INTEGER_LEFT_OUT));
                }
            }
        }
    }
    if state.is_none() && action.is_none() && videos.is_empty() {
        return Err(LerobotError::NoChannels {
            episode: id.to_owned(),
            available: available(&all),
        });
    }
    Ok(Plan {
        state,
        action,
        videos,
        left_out,
    })
}
