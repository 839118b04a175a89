//! The in-memory episode: what a WShard file holds, independent of its bytes.

use serde_json::{Map, Value};

use super::dtype::DType;
use crate::codec::Codec;
use crate::error::{FormatError, Result};

/// Block name prefixes and fixed names of the profile (spec 10.1).
pub mod names {
    pub const META_WSHARD: &str = "meta/wshard";
    pub const META_EPISODE: &str = "meta/episode";
    pub const META_CHANNELS: &str = "meta/channels";
    pub const REWARD: &str = "reward";
    pub const DONE: &str = "done";
    pub const TIMESTAMPS_NS: &str = "time/timestamps_ns";
    /// Recorder extension: `[start, end)` u64 pairs (little-endian) of the sequence numbers
    /// a producer dropped before the chunk's timesteps (wshardd, shared-memory drop policies).
    pub const DROPPED_SEQ_RANGES: &str = "time/dropped_seq_ranges";
    pub const SIGNAL: &str = "signal";
    pub const ACTION: &str = "action";
    pub const OMEN: &str = "omen";
    pub const UNCERT: &str = "uncert";
    pub const RESIDUAL: &str = "residual";
    pub const TIME: &str = "time";
    pub const SIGN2NDDIFF: &str = "sign2nddiff";
    pub const LATENT_ACTION: &str = "latent_action";
    pub const LATENT_ACTION_CODEBOOK: &str = "latent_action_codebook";
}

/// Where a described channel lives: `signal/{id}` or `action/{id}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lane {
    Signal,
    Action,
}

impl Lane {
    /// The block-name prefix.
    #[must_use]
    pub fn prefix(self) -> &'static str {
        match self {
            Self::Signal => names::SIGNAL,
            Self::Action => names::ACTION,
        }
    }
}

/// How time advances through the episode (spec 11).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Timebase {
    /// Fixed rate; `dt_ns = round(1e9 / tick_hz)` as Go writes it.
    Ticks { tick_hz: f64 },
    /// Per-step timestamps in the `time/timestamps_ns` block; `dt_ns` is the nominal period.
    TimestampsNs { dt_ns: u64 },
}

impl Timebase {
    /// A fixed-rate timebase.
    #[must_use]
    pub fn ticks(tick_hz: f64) -> Self {
        Self::Ticks { tick_hz }
    }

    /// The `type` string.
    #[must_use]
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Ticks { .. } => "ticks",
            Self::TimestampsNs { .. } => "timestamps_ns",
        }
    }

    /// The period written as `dt_ns` (Go rounds, spec 11).
    #[must_use]
    pub fn dt_ns(&self) -> u64 {
        match *self {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            Self::Ticks { tick_hz } if tick_hz > 0.0 && tick_hz.is_finite() => {
                (1e9 / tick_hz).round() as u64
            }
            Self::Ticks { .. } => 0,
            Self::TimestampsNs { dt_ns } => dt_ns,
        }
    }
}

/// A signal or action channel: described in `meta/channels`, stored as `[T, *shape]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Channel {
    /// Channel id; may contain `/` (multimodal `{group}/{modality}`).
    pub id: String,
    pub lane: Lane,
    pub dtype: DType,
    /// Per-step shape, without T. Empty means one scalar per step.
    pub shape: Vec<u64>,
    pub modality: Option<String>,
    /// Other keys of the channel's `meta/channels` entry (kept on read, written back).
    pub extra: Map<String, Value>,
    /// Codec for this channel's block; `None` uses the writer's default.
    pub codec: Option<Codec>,
    /// Raw little-endian bytes, T steps back to back.
    pub data: Vec<u8>,
}

impl Channel {
    /// A channel from raw bytes.
    #[must_use]
    pub fn new(
        id: impl Into<String>,
        lane: Lane,
        dtype: DType,
        shape: Vec<u64>,
        data: Vec<u8>,
    ) -> Self {
        Self {
            id: id.into(),
            lane,
            dtype,
            shape,
            modality: None,
            extra: Map::new(),
            codec: None,
            data,
        }
    }

    /// An f32 channel from values.
    ///
    /// # Errors
    /// [`FormatError::BadEpisode`] when the values are not a whole number of steps.
    pub fn from_f32(
        id: impl Into<String>,
        lane: Lane,
        shape: Vec<u64>,
        values: &[f32],
    ) -> Result<Self> {
        let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let ch = Self::new(id, lane, DType::F32, shape, data);
        ch.step_bytes()?;
        Ok(ch)
    }

    /// A multimodal observation `signal/{group}/{modality}` (spec 10.6).
    #[must_use]
    pub fn multimodal(
        group: &str,
        modality: &str,
        dtype: DType,
        shape: Vec<u64>,
        data: Vec<u8>,
    ) -> Self {
        let mut ch = Self::new(
            format!("{group}/{modality}"),
            Lane::Signal,
            dtype,
            shape,
            data,
        );
        ch.modality = Some(modality.to_owned());
        ch
    }

    /// Builder: set the codec.
    #[must_use]
    pub fn with_codec(mut self, codec: Codec) -> Self {
        self.codec = Some(codec);
        self
    }

    /// The block name, `signal/{id}` or `action/{id}`.
    #[must_use]
    pub fn block_name(&self) -> String {
        format!("{}/{}", self.lane.prefix(), self.id)
    }

    /// Bytes per timestep.
    ///
    /// # Errors
    /// [`FormatError::BadEpisode`] when the shape's element count overflows.
    pub fn step_bytes(&self) -> Result<u64> {
        self.shape
            .iter()
            .try_fold(self.dtype.size() as u64, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| FormatError::BadEpisode {
                message: format!("channel `{}`: shape {:?} overflows", self.id, self.shape),
            })
    }
}

/// A block outside the described channels: omen, uncert, residual, `time/*`, or an
/// undescribed `signal/*` / `action/*` block found on read. Stored as raw bytes; these
/// carry no dtype or shape metadata in the format.
#[derive(Clone, Debug, PartialEq)]
pub struct AuxBlock {
    pub name: String,
    pub codec: Option<Codec>,
    pub data: Vec<u8>,
}

impl AuxBlock {
    /// Any block by name.
    #[must_use]
    pub fn new(name: impl Into<String>, data: Vec<u8>) -> Self {
        Self {
            name: name.into(),
            codec: None,
            data,
        }
    }

    /// `omen/{channel}/{model}`: a model's prediction of a channel.
    #[must_use]
    pub fn omen(channel: &str, model: &str, data: Vec<u8>) -> Self {
        Self::new(format!("{}/{channel}/{model}", names::OMEN), data)
    }

    /// `uncert/{channel}/{model}/{kind}`, e.g. kind `variance` or `std`.
    #[must_use]
    pub fn uncert(channel: &str, model: &str, kind: &str, data: Vec<u8>) -> Self {
        Self::new(format!("{}/{channel}/{model}/{kind}", names::UNCERT), data)
    }

    /// `residual/{channel}/sign2nddiff`: packed residual bits (see [`super::residual`]).
    #[must_use]
    pub fn residual(channel: &str, bits: Vec<u8>) -> Self {
        Self::new(
            format!("{}/{channel}/{}", names::RESIDUAL, names::SIGN2NDDIFF),
            bits,
        )
    }

    /// `omen/latent_action/{model}`: latent action embeddings `[T, D]`.
    #[must_use]
    pub fn latent_actions(model: &str, data: Vec<u8>) -> Self {
        Self::omen(names::LATENT_ACTION, model, data)
    }

    /// `omen/latent_action_codebook/{model}`: codebook indices `[T]`.
    #[must_use]
    pub fn latent_action_codebook(model: &str, data: Vec<u8>) -> Self {
        Self::omen(names::LATENT_ACTION_CODEBOOK, model, data)
    }

    /// Builder: set the codec.
    #[must_use]
    pub fn with_codec(mut self, codec: Codec) -> Self {
        self.codec = Some(codec);
        self
    }

    /// True for `residual/*` blocks.
    #[must_use]
    pub fn is_residual(&self) -> bool {
        self.name.starts_with("residual/")
    }
}

/// Position of a chunk within a chunked episode (spec 14.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkInfo {
    pub chunk_index: u64,
    /// Unknown while recording; written only when set.
    pub total_chunks: Option<u64>,
}

/// One WShard episode.
#[derive(Clone, Debug, PartialEq)]
pub struct Episode {
    pub id: String,
    pub env_id: String,
    pub timebase: Timebase,
    /// Number of timesteps, T.
    pub length: u64,
    /// Signal and action channels, in the order they are described and stored.
    pub channels: Vec<Channel>,
    /// One f32 per step.
    pub reward: Vec<f32>,
    /// One flag per step, stored as u8 0/1.
    pub done: Vec<bool>,
    /// One i64 per step when the timebase is `timestamps_ns`.
    pub timestamps_ns: Option<Vec<i64>>,
    /// Omen, uncert, residual and other blocks, stored after `done` in this order.
    pub aux: Vec<AuxBlock>,
    pub chunk: Option<ChunkInfo>,
    /// `[start, end]` as written in `meta/episode` (inclusive end for chunks).
    pub timestep_range: Option<[u64; 2]>,
    /// Free-form metadata, written under `meta/episode.metadata` when non-empty.
    pub metadata: Map<String, Value>,
    /// Extra keys for `meta/wshard` beyond those the writer sets.
    pub wshard_extra: Map<String, Value>,
    /// Codec of `reward` and `done`; `None` uses the writer's default.
    pub reward_codec: Option<Codec>,
    pub done_codec: Option<Codec>,
}

impl Episode {
    /// An empty episode (T = 0).
    #[must_use]
    pub fn new(id: impl Into<String>, env_id: impl Into<String>, timebase: Timebase) -> Self {
        Self {
            id: id.into(),
            env_id: env_id.into(),
            timebase,
            length: 0,
            channels: Vec::new(),
            reward: Vec::new(),
            done: Vec::new(),
            timestamps_ns: None,
            aux: Vec::new(),
            chunk: None,
            timestep_range: None,
            metadata: Map::new(),
            wshard_extra: Map::new(),
            reward_codec: None,
            done_codec: None,
        }
    }

    /// Add a channel.
    pub fn push_channel(&mut self, ch: Channel) {
        self.channels.push(ch);
    }

    /// Set the rewards; also sets T.
    pub fn set_reward(&mut self, reward: Vec<f32>) {
        self.length = reward.len() as u64;
        self.reward = reward;
    }

    /// Set the done flags; also sets T.
    pub fn set_done(&mut self, done: Vec<bool>) {
        self.length = done.len() as u64;
        self.done = done;
    }

    /// A channel by id.
    #[must_use]
    pub fn channel(&self, id: &str) -> Option<&Channel> {
        self.channels.iter().find(|c| c.id == id)
    }

    /// An aux block by full name.
    #[must_use]
    pub fn aux_block(&self, name: &str) -> Option<&AuxBlock> {
        self.aux.iter().find(|a| a.name == name)
    }

    /// Check that every block has T steps of the right size and that names are unique.
    ///
    /// # Errors
    /// [`FormatError::BadEpisode`] naming the block and the sizes.
    pub fn validate(&self) -> Result<()> {
        let t = self.length;
        let bad = |message: String| Err(FormatError::BadEpisode { message });
        if self.reward.len() as u64 != t {
            return bad(format!(
                "reward has {} steps, episode has T = {t}",
                self.reward.len()
            ));
        }
        if self.done.len() as u64 != t {
            return bad(format!(
                "done has {} steps, episode has T = {t}",
                self.done.len()
            ));
        }
        match (&self.timebase, &self.timestamps_ns) {
            (Timebase::TimestampsNs { .. }, None) => {
                return bad("timebase timestamps_ns needs per-step timestamps".into());
            }
            (_, Some(ts)) if ts.len() as u64 != t => {
                return bad(format!(
                    "time/timestamps_ns has {} steps, episode has T = {t}",
                    ts.len()
                ));
            }
            _ => {}
        }
        let mut seen = std::collections::HashSet::new();
        for ch in &self.channels {
            if ch.id.is_empty() {
                return bad("a channel has an empty id".into());
            }
            let want = ch
                .step_bytes()?
                .checked_mul(t)
                .ok_or_else(|| FormatError::BadEpisode {
                    message: format!("channel `{}`: size overflows", ch.id),
                })?;
            if ch.data.len() as u64 != want {
                return bad(format!(
                    "channel `{}` ({} {:?}): {} bytes, expected {want} for T = {t}",
                    ch.id,
                    ch.dtype,
                    ch.shape,
                    ch.data.len()
                ));
            }
            if !seen.insert(ch.block_name()) {
                return bad(format!("block `{}` appears twice", ch.block_name()));
            }
        }
        for a in &self.aux {
            let reserved = [
                names::META_WSHARD,
                names::META_EPISODE,
                names::META_CHANNELS,
                names::REWARD,
                names::DONE,
            ];
            if reserved.contains(&a.name.as_str())
                || (self.timestamps_ns.is_some() && a.name == names::TIMESTAMPS_NS)
            {
                return bad(format!(
                    "aux block `{}` collides with a block the writer owns",
                    a.name
                ));
            }
            if !seen.insert(a.name.clone()) {
                return bad(format!("block `{}` appears twice", a.name));
            }
        }
        Ok(())
    }
}
