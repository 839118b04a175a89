//! One episode on the dataset's clock: a fixed rate of `fps` frames per second over the
//! time every exported stream covers (from the latest first timestamp to the earliest last
//! one), low-dimensional channels resampled with `wshard::align` (`hold` by default) and
//! converted to float32, pictures picked `nearest` (their source rows only: the pixels are
//! read one frame at a time when the video is written). An integer too large for float32
//! to hold exactly (a time in ns) is an error, never rounded silently.

use wshard::align::{align_episode, AlignOptions, Clock, Policy};
use wshard::episode::Timebase;
use wshard::episode_dir::EpisodeDir;

use super::error::LerobotError;
use super::options::check_fps;
use super::select::{wider_than_float32, Plan, VectorFeature, FLOAT32_EXACT_INTEGERS};

/// Nanoseconds per second.
const NS_PER_S: f64 = 1e9;

/// An episode's frames.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EpisodeFrames {
    /// The clock: one time per frame.
    pub t_ns: Vec<i64>,
    /// `frames x dim` float32 values of `observation.state` (empty without it).
    pub state: Vec<f32>,
    /// `frames x dim` float32 values of `action` (empty without it).
    pub action: Vec<f32>,
    /// Per video of the plan (same order): the picture channel's source step of each frame.
    pub picture_rows: Vec<Vec<i64>>,
}

impl EpisodeFrames {
    #[must_use]
    pub fn len(&self) -> usize {
        self.t_ns.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.t_ns.is_empty()
    }
}

/// The rate a stream says it runs at, if any.
fn stream_hz(timebase: Option<Timebase>) -> Option<f64> {
    match timebase? {
        Timebase::Ticks { tick_hz } => Some(tick_hz),
        #[allow(clippy::cast_precision_loss)]
        Timebase::TimestampsNs { dt_ns } if dt_ns > 0 => Some(NS_PER_S / dt_ns as f64),
        Timebase::TimestampsNs { .. } => None,
    }
}

/// The default fps: the rate of the first picture stream in the plan's canonical order
/// (streams by name; else of the first exported stream), rounded to a whole number.
///
/// # Errors
/// [`LerobotError::NoRate`] when that stream says no rate, [`LerobotError::BadFps`] when
/// the rounded rate is out of range.
pub fn default_fps(episode: &EpisodeDir, plan: &Plan) -> Result<u32, LerobotError> {
    let stream = plan
        .videos
        .first()
        .map(|v| v.source.stream.clone())
        .or_else(|| plan.streams().into_iter().next())
        .unwrap_or_default();
    let hz = episode
        .stream(&stream)
        .and_then(|s| stream_hz(s.timebase))
        .filter(|hz| hz.is_finite() && *hz > 0.0)
        .ok_or_else(|| LerobotError::NoRate {
            episode: episode.episode_id().to_owned(),
        })?;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let fps = hz.round().min(f64::from(u32::MAX)) as u32;
    check_fps(fps)
}

/// The clock's range: the time every stream of `streams` covers.
fn overlap(episode: &EpisodeDir, streams: &[String]) -> Result<(i64, i64), LerobotError> {
    let mut range: Option<(i64, i64)> = None;
    let mut empty = false;
    for name in streams {
        let span = episode
            .stream(name)
            .and_then(|s| s.first_t_ns.zip(s.last_t_ns));
        match (span, range) {
            (None, _) => empty = true,
            (Some(s), None) => range = Some(s),
            (Some(s), Some(r)) => range = Some((r.0.max(s.0), r.1.min(s.1))),
        }
    }
    match range {
        Some((start, end)) if !empty && start <= end => Ok((start, end)),
        _ => Err(LerobotError::NoOverlap {
            episode: episode.episode_id().to_owned(),
            streams: streams.join(", "),
        }),
    }
}

/// The float32 values of `feature`, frame by frame. An integer value float32 does not hold
/// exactly (beyond 2^24: a time in ns) is refused, never rounded silently.
fn vector_values(
    episode: &str,
    table: &wshard::align::AlignedTable,
    feature: Option<&VectorFeature>,
) -> Result<Vec<f32>, LerobotError> {
    let Some(feature) = feature else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(table.rows() * feature.dim());
    for row in 0..table.rows() {
        for c in &feature.channels {
            let Some(col) = table.column(&c.key()) else {
                continue;
            };
            let size = col.dtype.size();
            let Some(bytes) = col.row(row) else {
                continue;
            };
            for e in bytes.chunks_exact(size) {
                let v = col.dtype.element_f64(e);
                if wider_than_float32(c.dtype) && v.abs() > FLOAT32_EXACT_INTEGERS {
                    return Err(LerobotError::NotFloat32 {
                        episode: episode.to_owned(),
                        channel: c.key(),
                        frame: row,
                        value: v,
                    });
                }
                // float32 is LeRobot's dtype for every vector feature.
                #[allow(clippy::cast_possible_truncation)]
                out.push(v as f32);
            }
        }
    }
    Ok(out)
}

/// Align `episode` onto `fps` as `plan` says.
///
/// # Errors
/// [`LerobotError::NoOverlap`] when the streams share no time, [`LerobotError::Align`].
pub fn align_frames(
    episode: &EpisodeDir,
    plan: &Plan,
    fps: u32,
    lowdim_policy: Policy,
) -> Result<EpisodeFrames, LerobotError> {
    let id = episode.episode_id();
    let (start, end) = overlap(episode, &plan.streams())?;
    let clock = Clock::Rate {
        hz: f64::from(fps),
        start_ns: Some(start),
        end_ns: Some(end),
    };
    let align_err = |source| LerobotError::Align {
        episode: id.to_owned(),
        source: Box::new(source),
    };
    let mut frames = EpisodeFrames::default();
    let vector_keys: Vec<String> = plan
        .vectors()
        .flat_map(|v| v.channels.iter().map(super::select::ChannelRef::key))
        .collect();
    if !vector_keys.is_empty() {
        let mut opts = AlignOptions::new(clock.clone());
        opts.default_policy = lowdim_policy;
        opts.channels = Some(vector_keys);
        let table = align_episode(episode, &opts).map_err(align_err)?;
        frames.state = vector_values(id, &table, plan.state.as_ref())?;
        frames.action = vector_values(id, &table, plan.action.as_ref())?;
        frames.t_ns = table.t_ns;
    }
    if !plan.videos.is_empty() {
        let mut opts = AlignOptions::new(clock);
        opts.default_policy = Policy::Nearest;
        opts.channels = Some(plan.videos.iter().map(|v| v.source.key()).collect());
        opts.gather_values = false;
        let table = align_episode(episode, &opts).map_err(align_err)?;
        frames.picture_rows = plan
            .videos
            .iter()
            .map(|v| {
                table
                    .column(&v.source.key())
                    .map(|c| c.source_row.clone())
                    .unwrap_or_default()
            })
            .collect();
        frames.t_ns = table.t_ns;
    }
    Ok(frames)
}
