//! Semantic checks of an `OPEN` schema against the server's limits.

use std::collections::HashSet;

use wshard::episode_dir::name_rule::{check_name, NameRuleError};

use crate::batch::BATCH_OVERHEAD_BYTES;
use crate::error::ProtoError;
use crate::record::RECORD_HEADER_BYTES;
use crate::schema::{CodecChoice, OpenEpisode, TimebaseSpec};

/// Longest episode id any server accepts, in bytes: the ceiling of the server's
/// `limits.max_episode_id_bytes` (an id is a directory name and the stem of file names
/// such as `{id}_chunk_0000.wshard.partial`, which must stay under 255 bytes).
pub const MAX_EPISODE_ID_BYTES: usize = 200;

/// Longest episode id a server accepts by default (`limits.max_episode_id_bytes`).
pub const DEFAULT_MAX_EPISODE_ID_BYTES: usize = 128;

/// Most dimensions of a channel's per-timestep shape.
pub const MAX_NDIM: usize = 8;

/// The limits an `OPEN` is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchemaLimits {
    /// `limits.max_channels` (the wire allows at most 65535).
    pub max_channels: usize,
    /// `limits.max_frame_bytes`: one timestep must fit a `TIMESTEP_BATCH` of one under it.
    pub max_frame_bytes: u32,
    /// `limits.max_episode_id_bytes`: the longest episode id (at most
    /// [`MAX_EPISODE_ID_BYTES`]; larger values count as that).
    pub max_episode_id_bytes: usize,
}

impl Default for SchemaLimits {
    /// What a client can check without knowing the server's config: the most channels and
    /// the longest id any server accepts, the default `max_frame_bytes`.
    fn default() -> Self {
        Self {
            max_channels: usize::from(u16::MAX),
            max_frame_bytes: crate::frame_header::DEFAULT_MAX_FRAME_BYTES,
            max_episode_id_bytes: MAX_EPISODE_ID_BYTES,
        }
    }
}

fn bad(message: String) -> ProtoError {
    ProtoError::BadSchema { message }
}

/// Check an episode id: 1..=`max` bytes (`max` capped at [`MAX_EPISODE_ID_BYTES`]) of
/// `[A-Za-z0-9._-]`, not starting with `.`.
///
/// # Errors
/// [`ProtoError::BadEpisodeId`] saying which rule is broken.
pub fn validate_episode_id(id: &str, max: usize) -> Result<(), ProtoError> {
    match id_rule_broken(id, max.min(MAX_EPISODE_ID_BYTES)) {
        None => Ok(()),
        Some(reason) => Err(ProtoError::BadEpisodeId {
            id: shown_id(id),
            reason,
        }),
    }
}

/// The id rule `id` breaks, if any, as the reason of a `BAD_EPISODE_ID`: 1..=`max` bytes
/// of `[A-Za-z0-9._-]`, not starting with `.` (episode ids and stream names, which become
/// directory and file names; the rule is the format library's [`check_name`]).
pub(crate) fn id_rule_broken(id: &str, max: usize) -> Option<String> {
    check_name(id, max).err().map(|e| match e {
        NameRuleError::Length { len: 0, max } => format!("is empty (must be 1..={max} bytes)"),
        NameRuleError::Length { len, max } => format!("is {len} bytes (must be 1..={max} bytes)"),
        NameRuleError::LeadingDot => "starts with '.'".to_owned(),
        NameRuleError::BadChar(c) => format!("contains {c:?} (allowed: A-Z a-z 0-9 . _ -)"),
    })
}

/// `id` as an error message shows it: cut to 200 bytes.
pub(crate) fn shown_id(id: &str) -> String {
    let mut shown = id.to_owned();
    crate::wire::truncate_utf8(&mut shown, MAX_EPISODE_ID_BYTES);
    shown
}

/// Check a channel name: non-empty, no NUL, `/`-separated segments that are neither empty
/// nor `..`.
///
/// # Errors
/// [`ProtoError::BadSchema`] naming the channel index and the rule.
pub fn validate_channel_name(index: usize, name: &str) -> Result<(), ProtoError> {
    let problem = if name.is_empty() {
        Some("is empty")
    } else if name.contains('\0') {
        Some("contains NUL")
    } else if name.split('/').any(str::is_empty) {
        Some("has an empty path segment")
    } else if name.split('/').any(|s| s == "..") {
        Some("has a '..' path segment")
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(p) => Err(bad(format!("channels[{index}].name {name:?} {p}"))),
    }
}

/// Check `metadata_json`: empty or a JSON object.
///
/// # Errors
/// [`ProtoError::BadSchema`] with the JSON error or the value's kind.
pub fn validate_metadata_json(text: &str) -> Result<(), ProtoError> {
    if text.trim().is_empty() {
        return Ok(());
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) if v.is_object() => Ok(()),
        Ok(_) => Err(bad("metadata_json is not a JSON object".to_owned())),
        Err(e) => Err(bad(format!("metadata_json is not valid JSON: {e}"))),
    }
}

impl OpenEpisode {
    /// Check the schema against `limits` (the server does this before creating anything).
    ///
    /// # Errors
    /// [`ProtoError::BadEpisodeId`] for the id, [`ProtoError::BadSchema`] for everything
    /// else, naming the field and the values.
    pub fn validate(&self, limits: &SchemaLimits) -> Result<(), ProtoError> {
        validate_episode_id(&self.episode_id, limits.max_episode_id_bytes)?;
        self.validate_schema(limits)
    }

    /// [`OpenEpisode::validate`] without the episode id: the timebase, channels and
    /// metadata (what `STREAM_OPEN` shares with `OPEN`).
    ///
    /// # Errors
    /// [`ProtoError::BadSchema`] naming the field and the values.
    pub fn validate_schema(&self, limits: &SchemaLimits) -> Result<(), ProtoError> {
        match self.timebase {
            TimebaseSpec::Ticks { tick_hz } if !(tick_hz.is_finite() && tick_hz > 0.0) => {
                return Err(bad(format!(
                    "tick_hz {tick_hz} must be finite and > 0 for timebase ticks"
                )));
            }
            TimebaseSpec::TimestampsNs { nominal_hz }
                if !(nominal_hz.is_finite() && nominal_hz >= 0.0) =>
            {
                return Err(bad(format!(
                    "tick_hz {nominal_hz} must be finite and >= 0 (0 = unknown) for timebase timestamps_ns"
                )));
            }
            _ => {}
        }
        let n = self.channels.len();
        let max_channels = limits.max_channels.min(usize::from(u16::MAX));
        if n == 0 || n > max_channels {
            return Err(bad(format!("channel_count {n} must be 1..={max_channels}")));
        }
        let max_frame = usize::try_from(limits.max_frame_bytes).unwrap_or(usize::MAX);
        let max_step = max_frame.saturating_sub(BATCH_OVERHEAD_BYTES + RECORD_HEADER_BYTES);
        let mut names = HashSet::with_capacity(n);
        let mut total = 0usize;
        for (i, c) in self.channels.iter().enumerate() {
            validate_channel_name(i, &c.name)?;
            if !names.insert(c.name.as_str()) {
                return Err(bad(format!(
                    "channels[{i}].name {:?} is a duplicate",
                    c.name
                )));
            }
            if c.shape.len() > MAX_NDIM {
                return Err(bad(format!(
                    "channels[{i}] {:?}: ndim {} exceeds {MAX_NDIM}",
                    c.name,
                    c.shape.len()
                )));
            }
            if let Some(d) = c.shape.iter().position(|&d| d == 0) {
                return Err(bad(format!(
                    "channels[{i}] {:?}: dims[{d}] is 0 (each must be >= 1), shape {:?}",
                    c.name, c.shape
                )));
            }
            if let CodecChoice::Zstd { level } = c.codec {
                if !(0..=22).contains(&level) {
                    return Err(bad(format!(
                        "channels[{i}] {:?}: codec_level {level} must be 1..=22 (0 = default)",
                        c.name
                    )));
                }
            }
            let step = c.step_bytes()?;
            if step > max_step {
                return Err(bad(format!(
                    "channels[{i}] {:?}: step payload {step} bytes ({} x {:?}) exceeds the \
                     {max_step} bytes a frame of max_frame_bytes {max_frame} can carry",
                    c.name, c.dtype, c.shape
                )));
            }
            total = total.saturating_add(step);
        }
        if total > max_step {
            return Err(bad(format!(
                "timestep payload {total} bytes (sum over {n} channels) exceeds the {max_step} \
                 bytes a frame of max_frame_bytes {max_frame} can carry"
            )));
        }
        validate_metadata_json(&self.metadata_json)
    }
}
