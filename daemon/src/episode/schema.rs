//! The schema of an episode being recorded: what OPEN declared, resolved against the config
//! (codec defaults). It is written at the head of every journal segment so that recovery
//! can rebuild chunks without anything else.

use serde_json::{json, Map, Value};
use wshard::codec::Codec;
use wshard::episode::{DType, Lane, Timebase};

/// The durability class of an episode: the protocol crate's type, shared with the config
/// (`durability.default`); spelled `ack` / `chunk` in the journal and the manifest.
pub use wshard_ingest_proto::Durability;

/// Why an episode schema could not be built (a channel's size overflows) or read back from
/// its JSON form (a missing or bad field). The messages name the field or the channel.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// A channel's per-step size overflows.
    #[error("channel `{name}`: shape {shape:?} overflows")]
    ChannelTooLarge { name: String, shape: Vec<u64> },
    /// The sum of the channels' step sizes overflows.
    #[error("step size overflows")]
    StepTooLarge,
    /// A string field is missing or not a string.
    #[error("schema: `{field}` missing or not a string")]
    NotAString { field: String },
    /// An object or list field is missing (`timebase`, `channels`).
    #[error("schema: `{field}` missing")]
    Missing { field: &'static str },
    /// A field is missing or has the wrong JSON type (`tick_hz`, `dt_ns`, `shape`,
    /// `shape entry`).
    #[error("schema: {field}")]
    BadField { field: &'static str },
    /// `timebase.type` is not `ticks` or `timestamps_ns`.
    #[error("schema: unknown timebase {found:?}")]
    UnknownTimebase { found: Option<String> },
    /// `durability` is not `ack` or `chunk`.
    #[error("schema: unknown durability {found:?}")]
    UnknownDurability { found: Option<String> },
    /// A channel's `lane` is not `signal` or `action`.
    #[error("schema: unknown lane {found:?}")]
    UnknownLane { found: Option<String> },
    /// A channel's `dtype` or `codec` is not one the format knows.
    #[error(transparent)]
    Format(#[from] wshard::FormatError),
}

/// The key of the JSON form naming a stream's multi-stream episode (absent for an episode).
const STREAM_OF_KEY: &str = "stream_of";

fn found(v: Option<&str>) -> Option<String> {
    v.map(str::to_owned)
}

/// One channel of the schema.
#[derive(Clone, Debug, PartialEq)]
pub struct ChannelSchema {
    pub name: String,
    pub lane: Lane,
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub(crate) codec: Codec,
    pub(crate) modality: Option<String>,
    /// Bytes per timestep.
    pub(crate) step_bytes: usize,
}

/// One channel as declared: name, lane, dtype, per-step shape, codec, modality.
pub type ChannelDecl = (String, Lane, DType, Vec<u64>, Codec, Option<String>);

/// Everything needed to turn journal records into chunk files.
#[derive(Clone, Debug, PartialEq)]
pub struct EpisodeSchema {
    pub episode_id: String,
    pub env_id: String,
    pub(crate) timebase: Timebase,
    pub(crate) durability: Durability,
    pub channels: Vec<ChannelSchema>,
    pub(crate) metadata: Map<String, Value>,
    /// Sum of the channels' step sizes: the payload of one timestep.
    pub step_payload_bytes: usize,
    /// For a stream of a multi-stream episode: that episode's id (`episode_id` is then the
    /// stream name). Every chunk says both in `meta/wshard` (keys `episode`, `stream`).
    pub(crate) stream_of: Option<String>,
}

impl EpisodeSchema {
    /// Build from parts, computing step sizes with checked arithmetic.
    ///
    /// # Errors
    /// [`SchemaError::ChannelTooLarge`] naming the channel whose size overflows,
    /// [`SchemaError::StepTooLarge`].
    pub fn new(
        episode_id: String,
        env_id: String,
        timebase: Timebase,
        durability: Durability,
        channels: Vec<ChannelDecl>,
        metadata: Map<String, Value>,
    ) -> Result<Self, SchemaError> {
        let mut out = Vec::with_capacity(channels.len());
        let mut total = 0usize;
        for (name, lane, dtype, shape, codec, modality) in channels {
            let step = shape
                .iter()
                .try_fold(dtype.size() as u64, |a, &d| a.checked_mul(d))
                .and_then(|s| usize::try_from(s).ok())
                .ok_or_else(|| SchemaError::ChannelTooLarge {
                    name: name.clone(),
                    shape: shape.clone(),
                })?;
            total = total.checked_add(step).ok_or(SchemaError::StepTooLarge)?;
            out.push(ChannelSchema {
                name,
                lane,
                dtype,
                shape,
                codec,
                modality,
                step_bytes: step,
            });
        }
        Ok(Self {
            episode_id,
            env_id,
            timebase,
            durability,
            channels: out,
            metadata,
            step_payload_bytes: total,
            stream_of: None,
        })
    }

    /// This schema as stream `episode_id` of the multi-stream episode `episode`.
    #[must_use]
    pub fn in_episode(mut self, episode: impl Into<String>) -> Self {
        self.stream_of = Some(episode.into());
        self
    }

    /// The multi-stream episode this stream belongs to (`None`: an episode of its own).
    #[must_use]
    pub fn stream_of(&self) -> Option<&str> {
        self.stream_of.as_deref()
    }

    /// JSON form (journal segment header, recovery).
    #[must_use]
    pub(crate) fn to_json(&self) -> Value {
        let (tb_type, tb_val) = match self.timebase {
            Timebase::Ticks { tick_hz } => ("ticks", json!(tick_hz)),
            Timebase::TimestampsNs { dt_ns } => ("timestamps_ns", json!(dt_ns)),
        };
        let channels: Vec<Value> = self
            .channels
            .iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "lane": c.lane.prefix(),
                    "dtype": c.dtype.code(),
                    "shape": c.shape,
                    "codec": codec_name(c.codec),
                    "modality": c.modality,
                })
            })
            .collect();
        let mut v = json!({
            "episode_id": self.episode_id,
            "env_id": self.env_id,
            "timebase": {"type": tb_type, "value": tb_val},
            "durability": self.durability.as_str(),
            "channels": channels,
            "metadata": Value::Object(self.metadata.clone()),
        });
        // Only for a stream: an episode's journal header stays as it was.
        if let (Some(ep), Some(obj)) = (&self.stream_of, v.as_object_mut()) {
            obj.insert(STREAM_OF_KEY.into(), json!(ep));
        }
        v
    }

    /// Parse the JSON form.
    ///
    /// # Errors
    /// A [`SchemaError`] naming the missing or bad field.
    pub(crate) fn from_json(v: &Value) -> Result<Self, SchemaError> {
        let s = |v: &Value, k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| SchemaError::NotAString {
                    field: k.to_owned(),
                })
        };
        let tb = v
            .get("timebase")
            .ok_or(SchemaError::Missing { field: "timebase" })?;
        let timebase = match tb.get("type").and_then(Value::as_str) {
            Some("ticks") => Timebase::Ticks {
                tick_hz: tb
                    .get("value")
                    .and_then(Value::as_f64)
                    .ok_or(SchemaError::BadField { field: "tick_hz" })?,
            },
            Some("timestamps_ns") => Timebase::TimestampsNs {
                dt_ns: tb
                    .get("value")
                    .and_then(Value::as_u64)
                    .ok_or(SchemaError::BadField { field: "dt_ns" })?,
            },
            other => {
                return Err(SchemaError::UnknownTimebase {
                    found: found(other),
                })
            }
        };
        let durability_text = v.get("durability").and_then(Value::as_str);
        let durability = durability_text.and_then(Durability::parse).ok_or_else(|| {
            SchemaError::UnknownDurability {
                found: found(durability_text),
            }
        })?;
        let mut channels = Vec::new();
        for c in v
            .get("channels")
            .and_then(Value::as_array)
            .ok_or(SchemaError::Missing { field: "channels" })?
        {
            let lane = match c.get("lane").and_then(Value::as_str) {
                Some("signal") => Lane::Signal,
                Some("action") => Lane::Action,
                other => {
                    return Err(SchemaError::UnknownLane {
                        found: found(other),
                    })
                }
            };
            let dtype = DType::parse(&s(c, "dtype")?)?;
            let shape = c
                .get("shape")
                .and_then(Value::as_array)
                .ok_or(SchemaError::BadField { field: "shape" })?
                .iter()
                .map(|d| {
                    d.as_u64().ok_or(SchemaError::BadField {
                        field: "shape entry",
                    })
                })
                .collect::<Result<Vec<u64>, SchemaError>>()?;
            let codec = Codec::parse(&s(c, "codec")?)?;
            let modality = c.get("modality").and_then(Value::as_str).map(str::to_owned);
            channels.push((s(c, "name")?, lane, dtype, shape, codec, modality));
        }
        let metadata = v
            .get("metadata")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let schema = Self::new(
            s(v, "episode_id")?,
            s(v, "env_id")?,
            timebase,
            durability,
            channels,
            metadata,
        )?;
        Ok(match v.get(STREAM_OF_KEY) {
            None => schema,
            Some(_) => schema.in_episode(s(v, STREAM_OF_KEY)?),
        })
    }
}

/// The config / schema spelling of a codec: `none`, `lz4`, `zstd-N`.
#[must_use]
pub(crate) fn codec_name(c: Codec) -> String {
    match c {
        Codec::None => "none".into(),
        Codec::Lz4 => "lz4".into(),
        Codec::Zstd { level } => format!("zstd-{level}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_json_round_trips() {
        let s = EpisodeSchema::new(
            "ep1".into(),
            "Env".into(),
            Timebase::ticks(1000.0),
            Durability::Ack,
            vec![
                (
                    "joint_pos".into(),
                    Lane::Signal,
                    DType::F32,
                    vec![7],
                    Codec::zstd(),
                    None,
                ),
                (
                    "cam/rgb".into(),
                    Lane::Signal,
                    DType::U8,
                    vec![4, 4, 3],
                    Codec::Lz4,
                    Some("rgb".into()),
                ),
                (
                    "cmd".into(),
                    Lane::Action,
                    DType::F64,
                    vec![],
                    Codec::None,
                    None,
                ),
            ],
            Map::new(),
        )
        .unwrap();
        assert_eq!(s.step_payload_bytes, 28 + 48 + 8);
        assert_eq!(EpisodeSchema::from_json(&s.to_json()).unwrap(), s);
        assert!(s.to_json().get(STREAM_OF_KEY).is_none());
        let stream = s.in_episode("ep_multi");
        assert_eq!(stream.to_json()[STREAM_OF_KEY], "ep_multi");
        assert_eq!(EpisodeSchema::from_json(&stream.to_json()).unwrap(), stream);
    }
}
