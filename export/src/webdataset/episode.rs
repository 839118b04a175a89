//! One episode made ready for sampling: the anchor picture channel and its frames, every
//! picture channel with the frame it takes at each anchor frame, and the low-dimensional
//! channels on one clock (the aligned view).
//!
//! - Anchor: `--image STREAM/CHANNEL`, or the first colour channel in stream order (else the
//!   first picture channel of any kind, [`crate::channel_kind`]).
//! - Other picture channels of the anchor's stream take the same frame; picture channels of
//!   other streams take their frame nearest in time to it (at equal distance the earlier).
//! - `--exclude` patterns (`crate::channel_filter`) leave channels out of all of this.
//! - Low-dimensional channels (every non-picture channel of every stream) are aligned with
//!   `wshard::align` on the low-dimensional clock ([`LowdimClock`]: by default the anchor
//!   stream's frames, so window steps count raw frames) with the chosen policy
//!   (hold: the last sample at or before each row); rows before every channel has a sample
//!   are dropped (the aligned view's "drop invalid rows").

use wshard::align::{
    align_episode, pick_rows, AlignOptions, AlignedTable, Clock, InvalidRows, Policy,
};
use wshard::episode::DType;
use wshard::episode_dir::events::EventData;
use wshard::episode_dir::{EpisodeDir, StreamData, StreamInfo};

use crate::channel_filter::ChannelFilter;
use crate::channel_kind::ChannelKind;

use super::error::WebdatasetError;
use super::options::{LowdimClock, WebdatasetOptions};
use super::values::{npz_dtype, to_f64};

/// A picture channel of the episode.
#[derive(Debug)]
pub struct Picture {
    /// Index into [`LoadedEpisode::picture_streams`].
    pub stream: usize,
    pub channel: String,
    /// `STREAM/CHANNEL`.
    pub key: String,
    /// Sample file stem: `STREAM__CHANNEL` with every character other than ASCII letters,
    /// digits, `_` and `-` made `_` (a WebDataset key ends at the first `.`).
    pub stem: String,
    pub kind: ChannelKind,
    /// Its frame at each anchor frame.
    pub frame_of_anchor: Vec<usize>,
}

/// A low-dimensional channel on the clock.
#[derive(Debug)]
pub struct LowdimKey {
    /// `STREAM/CHANNEL`, the npz key and stats key.
    pub key: String,
    /// Elements per row (the per-step shape flattened).
    pub width: usize,
    /// dtype written to the npz.
    pub dtype: DType,
    /// The aligned column's dtype (the npz's, except bf16).
    pub column_dtype: DType,
    /// Action lane (the still-sample filter looks at these).
    pub is_action: bool,
    /// `rows * width` values as f64.
    pub values: Vec<f64>,
}

/// An episode ready for sampling.
#[derive(Debug)]
pub struct LoadedEpisode {
    pub id: String,
    pub env_id: String,
    /// `STREAM/CHANNEL` of the anchor picture.
    pub anchor_key: String,
    /// Timestamps of the anchor stream's frames.
    pub anchor_t_ns: Vec<i64>,
    pub picture_streams: Vec<StreamData>,
    pub pictures: Vec<Picture>,
    /// The low-dimensional clock, described (`stream joints` / `rate 50 Hz`).
    pub lowdim_clock: String,
    pub lowdim: AlignedTable,
    pub keys: Vec<LowdimKey>,
    /// Texts of the instruction events, in time order.
    pub instructions: Vec<String>,
}

fn kind_of(c: &wshard::episode_dir::index::ChannelEntry) -> ChannelKind {
    DType::parse(&c.dtype).map_or(ChannelKind::LowDim, |d| {
        ChannelKind::of(&c.name, d, &c.shape)
    })
}

/// The file stem of a picture channel.
#[must_use]
pub fn file_stem(stream: &str, channel: &str) -> String {
    format!("{stream}__{channel}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `(stream, channel, kind)` of every picture channel `exclude` keeps, in stream order.
fn picture_channels(
    streams: &[StreamInfo],
    exclude: &ChannelFilter,
) -> Vec<(String, String, ChannelKind)> {
    streams
        .iter()
        .flat_map(|s| {
            s.channels
                .iter()
                .map(|c| (s.name.clone(), c.name.clone(), kind_of(c)))
        })
        .filter(|(s, c, k)| k.is_picture() && !exclude.excludes(s, c))
        .collect()
}

fn choose_anchor(
    episode: &str,
    dir: &EpisodeDir,
    pictures: &[(String, String, ChannelKind)],
    spec: Option<&str>,
    exclude: &ChannelFilter,
) -> Result<(String, String), WebdatasetError> {
    let Some(spec) = spec else {
        let first = pictures
            .iter()
            .find(|p| matches!(p.2, ChannelKind::Color { .. }))
            .or_else(|| pictures.first())
            .ok_or_else(|| WebdatasetError::NoPictureChannel {
                episode: episode.to_owned(),
            })?;
        return Ok((first.0.clone(), first.1.clone()));
    };
    let (stream, channel) = spec.split_once('/').unwrap_or((spec, ""));
    if exclude.excludes(stream, channel) {
        return Err(WebdatasetError::BadOption {
            option: "image",
            message: format!("{spec} is left out by --exclude"),
        });
    }
    let entry = dir
        .stream(stream)
        .and_then(|s| s.channels.iter().find(|c| c.name == channel));
    let Some(entry) = entry else {
        return Err(WebdatasetError::UnknownImage {
            episode: episode.to_owned(),
            spec: spec.to_owned(),
            available: pictures
                .iter()
                .map(|p| format!("{}/{}", p.0, p.1))
                .collect::<Vec<_>>()
                .join(", "),
        });
    };
    if !kind_of(entry).is_picture() {
        return Err(WebdatasetError::NotAPicture {
            episode: episode.to_owned(),
            spec: spec.to_owned(),
            dtype: entry.dtype.clone(),
            shape: entry.shape.clone(),
        });
    }
    Ok((stream.to_owned(), channel.to_owned()))
}

/// The low-dimensional clock: the anchor stream's frames (the default: window steps count
/// raw frames), a stream's timestamps, or a fixed rate.
fn lowdim_clock(
    episode: &str,
    dir: &EpisodeDir,
    opts: &WebdatasetOptions,
    anchor_stream: &str,
) -> Result<(Clock, String), WebdatasetError> {
    match &opts.lowdim_clock {
        LowdimClock::Rate(hz) => Ok((Clock::rate(*hz), format!("rate {hz} Hz"))),
        LowdimClock::Anchor => Ok((
            Clock::Stream(anchor_stream.to_owned()),
            format!("stream {anchor_stream}"),
        )),
        LowdimClock::Stream(name) => {
            if dir.stream(name).is_some() {
                Ok((Clock::Stream(name.clone()), format!("stream {name}")))
            } else {
                Err(WebdatasetError::UnknownLowdimClock {
                    episode: episode.to_owned(),
                    stream: name.clone(),
                    available: dir
                        .streams()
                        .iter()
                        .map(|s| s.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                })
            }
        }
    }
}

fn instructions(dir: &EpisodeDir, labels: &[String]) -> Vec<String> {
    dir.events()
        .iter()
        .filter(|e| labels.contains(&e.label))
        .filter_map(|e| match &e.data {
            EventData::Text(t) => Some(t.clone()),
            _ => None,
        })
        .collect()
}

/// Open the aligned low-dimensional view and the picture streams of `dir`.
///
/// # Errors
/// [`WebdatasetError`] naming the episode and what is missing or unreadable.
#[allow(clippy::too_many_lines)]
pub fn load(dir: &EpisodeDir, opts: &WebdatasetOptions) -> Result<LoadedEpisode, WebdatasetError> {
    let id = dir.episode_id().to_owned();
    let exclude = ChannelFilter::new(&opts.exclude)?;
    let pictures_found = picture_channels(dir.streams(), &exclude);
    let (anchor_stream, anchor_channel) =
        choose_anchor(&id, dir, &pictures_found, opts.image.as_deref(), &exclude)?;
    let lowdim_names: Vec<String> = dir
        .streams()
        .iter()
        .flat_map(|s| {
            s.channels
                .iter()
                .filter(|c| !kind_of(c).is_picture() && !exclude.excludes(&s.name, &c.name))
                .map(|c| format!("{}/{}", s.name, c.name))
        })
        .collect();
    if lowdim_names.is_empty() {
        return Err(WebdatasetError::NoLowDim { episode: id });
    }
    let (clock, clock_text) = lowdim_clock(&id, dir, opts, &anchor_stream)?;
    let mut align = AlignOptions::new(clock).with_invalid_rows(InvalidRows::Drop);
    align.default_policy = opts.policy;
    align.channels = Some(lowdim_names);
    let lowdim = align_episode(dir, &align).map_err(|source| WebdatasetError::Align {
        episode: id.clone(),
        source: Box::new(source),
    })?;
    let action_keys: Vec<String> = dir
        .streams()
        .iter()
        .flat_map(|s| {
            s.channels
                .iter()
                .filter(|c| c.lane == "action")
                .map(|c| format!("{}/{}", s.name, c.name))
        })
        .collect();
    let keys = lowdim
        .columns
        .iter()
        .map(|c| {
            let width = usize::try_from(c.shape.iter().product::<u64>()).unwrap_or(0);
            LowdimKey {
                key: c.name(),
                width,
                dtype: npz_dtype(c.dtype),
                column_dtype: c.dtype,
                is_action: action_keys.contains(&c.name()),
                values: to_f64(c.dtype, &c.values),
            }
        })
        .collect();

    // Picture streams: the anchor's first, then the others holding pictures, in order.
    let mut stream_names = vec![anchor_stream.clone()];
    for (s, _, _) in &pictures_found {
        if !stream_names.contains(s) {
            stream_names.push(s.clone());
        }
    }
    let mut picture_streams = Vec::with_capacity(stream_names.len());
    for name in &stream_names {
        let data = dir
            .read_stream(name)
            .map_err(|source| WebdatasetError::Episode {
                episode: id.clone(),
                source: Box::new(source),
            })?;
        if data.steps() == 0 {
            return Err(WebdatasetError::EmptyPictureStream {
                episode: id.clone(),
                stream: name.clone(),
            });
        }
        picture_streams.push(data);
    }
    let anchor_t_ns = picture_streams[0].timestamps_ns().to_vec();
    let mut pictures: Vec<Picture> = Vec::new();
    // The anchor channel first, then the others in stream order.
    let mut ordered: Vec<&(String, String, ChannelKind)> = pictures_found
        .iter()
        .filter(|p| p.0 == anchor_stream && p.1 == anchor_channel)
        .collect();
    ordered.extend(
        pictures_found
            .iter()
            .filter(|p| !(p.0 == anchor_stream && p.1 == anchor_channel)),
    );
    for (stream, channel, kind) in ordered {
        let si = stream_names.iter().position(|s| s == stream).unwrap_or(0);
        let frame_of_anchor = if si == 0 {
            (0..anchor_t_ns.len()).collect()
        } else {
            let picks = pick_rows(
                picture_streams[si].timestamps_ns(),
                &anchor_t_ns,
                Policy::Nearest,
                None,
            );
            picks
                .row
                .iter()
                .map(|&r| usize::try_from(r).unwrap_or(0))
                .collect()
        };
        let stem = file_stem(stream, channel);
        if let Some(other) = pictures.iter().find(|p| p.stem == stem) {
            return Err(WebdatasetError::NameClash {
                episode: id,
                first: other.key.clone(),
                second: format!("{stream}/{channel}"),
                name: stem,
            });
        }
        pictures.push(Picture {
            stream: si,
            channel: channel.clone(),
            key: format!("{stream}/{channel}"),
            stem,
            kind: *kind,
            frame_of_anchor,
        });
    }
    Ok(LoadedEpisode {
        env_id: dir.index().map(|i| i.env_id.clone()).unwrap_or_default(),
        anchor_key: format!("{anchor_stream}/{anchor_channel}"),
        anchor_t_ns,
        picture_streams,
        pictures,
        lowdim_clock: clock_text,
        lowdim,
        keys,
        instructions: instructions(dir, &opts.instruction_labels),
        id,
    })
}
