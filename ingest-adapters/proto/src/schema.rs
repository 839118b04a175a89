//! The episode schema carried by `OPEN`: timebase, durability, channels, metadata.

use wshard::codec::{Codec, DEFAULT_ZSTD_LEVEL};
use wshard::episode::{DType, Lane, Timebase};

use crate::error::ProtoError;

/// `OPEN.timebase_kind` plus `tick_hz`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TimebaseSpec {
    /// 0: fixed rate; `tick_hz` must be finite and > 0.
    Ticks { tick_hz: f64 },
    /// 1: per-step timestamps; `nominal_hz` is the nominal rate, 0 = unknown.
    TimestampsNs { nominal_hz: f64 },
}

impl TimebaseSpec {
    /// The wire `timebase_kind`.
    #[must_use]
    pub fn kind_code(&self) -> u8 {
        match self {
            Self::Ticks { .. } => 0,
            Self::TimestampsNs { .. } => 1,
        }
    }

    /// The wire `tick_hz`.
    #[must_use]
    pub fn hz(&self) -> f64 {
        match *self {
            Self::Ticks { tick_hz } => tick_hz,
            Self::TimestampsNs { nominal_hz } => nominal_hz,
        }
    }

    /// The WShard timebase: `Ticks{tick_hz}`, or `TimestampsNs{dt_ns = round(1e9 / hz)}`
    /// (0 when the nominal rate is unknown or not a positive finite number).
    #[must_use]
    pub fn to_wshard(&self) -> Timebase {
        match *self {
            Self::Ticks { tick_hz } => Timebase::Ticks { tick_hz },
            Self::TimestampsNs { nominal_hz } => {
                let dt = if nominal_hz.is_finite() && nominal_hz > 0.0 {
                    (1e9 / nominal_hz).round()
                } else {
                    0.0
                };
                // `as` saturates; dt is finite and >= 0 here.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let dt_ns = dt as u64;
                Timebase::TimestampsNs { dt_ns }
            }
        }
    }
}

/// The durability class of an episode: what survives a crash. The one type for the OPEN
/// request ([`OpenEpisode::durability`], `None` = the server's `durability.default`), the
/// config key `durability.default`, the daemon's episode schema and the manifest.
///
/// Spelled `ack` / `chunk` in the config file, the journal and the manifest
/// ([`Durability::as_str`], [`Durability::parse`]); the wire codes (0 / 1, 2 = server
/// default) belong to the frame codec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Durability {
    /// Journaled: every DURABLE-acknowledged timestep survives a crash.
    #[default]
    Ack,
    /// No journal: only finalized chunks survive; loss bounded by the rotation limits.
    Chunk,
}

impl Durability {
    /// Every class, in wire-code order.
    pub const ALL: [Self; 2] = [Self::Ack, Self::Chunk];

    /// `ack` / `chunk`: the spelling of the config file, the journal and the manifest.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ack => "ack",
            Self::Chunk => "chunk",
        }
    }

    /// The class spelled `text` (`ack` or `chunk`), the inverse of [`Durability::as_str`].
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.as_str() == text)
    }
}

impl std::fmt::Display for Durability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `channel.codec` plus `codec_level`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CodecChoice {
    /// 0: the server's default for the channel.
    #[default]
    Default,
    /// 1: stored raw.
    None,
    /// 2: LZ4 raw block.
    Lz4,
    /// 3: zstd; `level` 1..=22, 0 = default (3).
    Zstd { level: i8 },
}

impl CodecChoice {
    /// The wire `codec`.
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            Self::Default => 0,
            Self::None => 1,
            Self::Lz4 => 2,
            Self::Zstd { .. } => 3,
        }
    }

    /// The wire `codec_level` (0 for every codec but zstd).
    #[must_use]
    pub fn level(self) -> i8 {
        match self {
            Self::Zstd { level } => level,
            _ => 0,
        }
    }

    /// The choice for wire `codec` and `codec_level`; the level is ignored unless zstd.
    #[must_use]
    pub fn from_code(c: u8, level: i8) -> Option<Self> {
        match c {
            0 => Some(Self::Default),
            1 => Some(Self::None),
            2 => Some(Self::Lz4),
            3 => Some(Self::Zstd { level }),
            _ => None,
        }
    }

    /// The WShard codec, with `server_default` standing in for [`CodecChoice::Default`].
    #[must_use]
    pub fn resolve(self, server_default: Codec) -> Codec {
        match self {
            Self::Default => server_default,
            Self::None => Codec::None,
            Self::Lz4 => Codec::Lz4,
            Self::Zstd { level: 0 } => Codec::Zstd {
                level: DEFAULT_ZSTD_LEVEL,
            },
            Self::Zstd { level } => Codec::Zstd {
                level: i32::from(level),
            },
        }
    }
}

/// Wire `durability` of OPEN meaning "the server's `durability.default`".
pub(crate) const DURABILITY_SERVER_DEFAULT: u8 = 2;

/// Wire code of OPEN's durability: 0 = ack, 1 = chunk, 2 = `None` (the server's default).
#[must_use]
pub(crate) fn durability_code(durability: Option<Durability>) -> u8 {
    match durability {
        Some(Durability::Ack) => 0,
        Some(Durability::Chunk) => 1,
        None => DURABILITY_SERVER_DEFAULT,
    }
}

/// OPEN's durability for a wire code (`Some(None)` for 2, the server's default); `None`
/// for an unknown code.
#[must_use]
pub(crate) fn durability_from_code(c: u8) -> Option<Option<Durability>> {
    match c {
        0 => Some(Some(Durability::Ack)),
        1 => Some(Some(Durability::Chunk)),
        DURABILITY_SERVER_DEFAULT => Some(None),
        _ => None,
    }
}

/// Wire code of a lane: 0 = signal, 1 = action.
#[must_use]
pub fn lane_code(lane: Lane) -> u8 {
    match lane {
        Lane::Signal => 0,
        Lane::Action => 1,
    }
}

/// The lane for a wire code.
#[must_use]
pub fn lane_from_code(c: u8) -> Option<Lane> {
    match c {
        0 => Some(Lane::Signal),
        1 => Some(Lane::Action),
        _ => None,
    }
}

/// Wire code of a dtype: its index in [`DType::ALL`] (0 f64 ... 12 bool).
#[must_use]
pub fn dtype_code(dtype: DType) -> u8 {
    let index = DType::ALL.iter().position(|d| *d == dtype).unwrap_or(0);
    u8::try_from(index).unwrap_or(0)
}

/// The dtype for a wire code.
#[must_use]
pub fn dtype_from_code(c: u8) -> Option<DType> {
    DType::ALL.get(usize::from(c)).copied()
}

/// One channel of the schema.
#[derive(Clone, Debug, PartialEq)]
pub struct ChannelSpec {
    /// Channel id; may contain `/`; unique per episode.
    pub name: String,
    pub lane: Lane,
    pub dtype: DType,
    /// Per-timestep shape, without T; `[]` is a scalar.
    pub shape: Vec<u32>,
    pub codec: CodecChoice,
    /// `None` is sent as the empty string (and an empty string decodes as `None`).
    pub modality: Option<String>,
}

impl ChannelSpec {
    /// A channel with the server's default codec and no modality.
    #[must_use]
    pub fn new(name: impl Into<String>, lane: Lane, dtype: DType, shape: Vec<u32>) -> Self {
        Self {
            name: name.into(),
            lane,
            dtype,
            shape,
            codec: CodecChoice::Default,
            modality: None,
        }
    }

    /// Set the codec.
    #[must_use]
    pub fn with_codec(mut self, codec: CodecChoice) -> Self {
        self.codec = codec;
        self
    }

    /// Set the modality.
    #[must_use]
    pub fn with_modality(mut self, modality: impl Into<String>) -> Self {
        self.modality = Some(modality.into());
        self
    }

    /// Payload bytes per timestep: `dtype_size x prod(shape)`.
    ///
    /// # Errors
    /// [`ProtoError::BadSchema`] naming the channel when the product overflows `usize`.
    pub fn step_bytes(&self) -> Result<usize, ProtoError> {
        let mut n = self.dtype.size();
        for &d in &self.shape {
            n = usize::try_from(d)
                .ok()
                .and_then(|d| n.checked_mul(d))
                .ok_or_else(|| ProtoError::BadSchema {
                    message: format!(
                        "channel {:?}: step size {} x {:?} overflows",
                        self.name, self.dtype, self.shape
                    ),
                })?;
        }
        Ok(n)
    }
}

/// The `OPEN` frame: everything the server needs to record one episode.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenEpisode {
    pub episode_id: String,
    pub env_id: String,
    pub timebase: TimebaseSpec,
    /// The durability class asked for; `None` leaves it to the server's
    /// `durability.default` (wire code 2).
    pub durability: Option<Durability>,
    /// Schema order: the order of payloads in every timestep.
    pub channels: Vec<ChannelSpec>,
    /// A JSON object, or empty (= `{}`).
    pub metadata_json: String,
}

impl OpenEpisode {
    /// An episode with no channels yet, durability `ack` and no metadata.
    #[must_use]
    pub fn new(
        episode_id: impl Into<String>,
        env_id: impl Into<String>,
        timebase: TimebaseSpec,
    ) -> Self {
        Self {
            episode_id: episode_id.into(),
            env_id: env_id.into(),
            timebase,
            durability: Some(Durability::Ack),
            channels: Vec::new(),
            metadata_json: String::new(),
        }
    }

    /// Append a channel.
    #[must_use]
    pub fn channel(mut self, channel: ChannelSpec) -> Self {
        self.channels.push(channel);
        self
    }

    /// Set the durability class.
    #[must_use]
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = Some(durability);
        self
    }

    /// Leave the durability class to the server's `durability.default`.
    #[must_use]
    pub fn with_server_default_durability(mut self) -> Self {
        self.durability = None;
        self
    }

    /// Set the metadata JSON object text.
    #[must_use]
    pub fn with_metadata_json(mut self, metadata_json: impl Into<String>) -> Self {
        self.metadata_json = metadata_json.into();
        self
    }

    /// Payload bytes of each channel, in schema order.
    ///
    /// # Errors
    /// [`ProtoError::BadSchema`] when a channel's size overflows.
    pub fn channel_step_bytes(&self) -> Result<Vec<usize>, ProtoError> {
        self.channels.iter().map(ChannelSpec::step_bytes).collect()
    }

    /// Payload bytes of one timestep: the sum over the channels.
    ///
    /// # Errors
    /// [`ProtoError::BadSchema`] when the sum overflows.
    pub fn step_bytes(&self) -> Result<usize, ProtoError> {
        let mut total = 0usize;
        for c in &self.channels {
            total = total
                .checked_add(c.step_bytes()?)
                .ok_or_else(|| ProtoError::BadSchema {
                    message: "the timestep size (sum over channels) overflows".to_owned(),
                })?;
        }
        Ok(total)
    }
}
