//! The three meta blocks (spec 10.2-10.4): building them for a write, parsing them on read.

use serde_json::{json, Map, Value};

use super::dtype::DType;
use super::model::{names, Channel, ChunkInfo, Episode, Lane, Timebase};
use crate::error::{FormatError, Result};

/// Which writer's meta layout to follow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MetaStyle {
    /// What this project writes: `meta/wshard` carries `format`, the full timebase and
    /// `version: 1`; `meta/episode.timebase` carries `dt_ns` and (for ticks) `tick_hz`, so
    /// both reference readers get the exact rate.
    #[default]
    Recorder,
    /// The reference golden generator's layout: `tick_hz` only in `meta/wshard`,
    /// `timestep_range` `[0, T]` unless set. Reproduces the upstream golden bytes.
    GoldenGen,
}

fn meta_err(block: &str, field: &str, message: impl Into<String>) -> FormatError {
    FormatError::BadMeta {
        block: block.to_owned(),
        field: field.to_owned(),
        message: message.into(),
    }
}

fn float_value(f: f64) -> Value {
    serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
}

/// `meta/wshard`.
#[must_use]
pub fn wshard_meta(ep: &Episode, style: MetaStyle) -> Value {
    let mut m = ep.wshard_extra.clone();
    let mut tb = Map::new();
    tb.insert("type".into(), json!(ep.timebase.type_name()));
    if let Timebase::Ticks { tick_hz } = ep.timebase {
        tb.insert("tick_hz".into(), float_value(tick_hz));
    }
    if style == MetaStyle::Recorder {
        tb.insert("dt_ns".into(), json!(ep.timebase.dt_ns()));
        m.insert("format".into(), json!("W-SHARD"));
    }
    m.insert("timebase".into(), Value::Object(tb));
    m.insert("version".into(), json!(1));
    if ep.aux.iter().any(super::model::AuxBlock::is_residual) {
        m.insert("residual_edges".into(), json!("pad"));
    }
    Value::Object(m)
}

/// `meta/episode`.
#[must_use]
pub fn episode_meta(ep: &Episode, style: MetaStyle) -> Value {
    let mut m = Map::new();
    m.insert("episode_id".into(), json!(ep.id));
    m.insert("env_id".into(), json!(ep.env_id));
    m.insert("length_T".into(), json!(ep.length));
    let mut tb = Map::new();
    tb.insert("type".into(), json!(ep.timebase.type_name()));
    tb.insert("dt_ns".into(), json!(ep.timebase.dt_ns()));
    if let (MetaStyle::Recorder, Timebase::Ticks { tick_hz }) = (style, ep.timebase) {
        tb.insert("tick_hz".into(), float_value(tick_hz));
    }
    m.insert("timebase".into(), Value::Object(tb));
    let range = match (ep.timestep_range, style) {
        (Some(r), _) => Some(r),
        (None, MetaStyle::GoldenGen) => Some([0, ep.length]),
        (None, MetaStyle::Recorder) => None,
    };
    if let Some([s, e]) = range {
        m.insert("timestep_range".into(), json!([s, e]));
    }
    if let Some(ChunkInfo {
        chunk_index,
        total_chunks,
    }) = ep.chunk
    {
        m.insert("chunk_index".into(), json!(chunk_index));
        if let Some(total) = total_chunks {
            m.insert("total_chunks".into(), json!(total));
        }
    }
    if !ep.metadata.is_empty() {
        m.insert("metadata".into(), Value::Object(ep.metadata.clone()));
    }
    Value::Object(m)
}

/// `meta/channels`, channels in episode order.
#[must_use]
pub fn channels_meta(ep: &Episode) -> Value {
    let defs: Vec<Value> = ep
        .channels
        .iter()
        .map(|ch| {
            let mut m = ch.extra.clone();
            m.insert("id".into(), json!(ch.id));
            m.insert("dtype".into(), json!(ch.dtype.code()));
            m.insert("shape".into(), json!(ch.shape));
            m.insert("signal_block".into(), json!(ch.block_name()));
            if let Some(modality) = &ch.modality {
                m.insert("modality".into(), json!(modality));
            }
            Value::Object(m)
        })
        .collect();
    json!({ "channels": defs })
}

/// Parse a JSON block into an object.
///
/// # Errors
/// [`FormatError::BadJson`] naming the block.
pub fn parse_object(block: &str, bytes: &[u8]) -> Result<Map<String, Value>> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(FormatError::BadJson {
            block: block.to_owned(),
            message: format!("expected an object, found {}", kind(&other)),
        }),
        Err(e) => Err(FormatError::BadJson {
            block: block.to_owned(),
            message: e.to_string(),
        }),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A non-negative integer written as an int or an integral float.
///
/// # Errors
/// [`FormatError::BadMeta`] naming the block and field.
pub fn as_u64(block: &str, field: &str, v: &Value) -> Result<u64> {
    if let Some(u) = v.as_u64() {
        return Ok(u);
    }
    if let Some(f) = v.as_f64() {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        // `u64::MAX as f64` is 2^64, one past the largest u64: the bound is exclusive.
        if f >= 0.0 && f.fract() == 0.0 && f < u64::MAX as f64 {
            return Ok(f as u64);
        }
    }
    Err(meta_err(
        block,
        field,
        format!("expected a non-negative integer, found {v}"),
    ))
}

fn opt_u64(block: &str, m: &Map<String, Value>, keys: &[&str]) -> Result<Option<u64>> {
    for k in keys {
        match m.get(*k) {
            None | Some(Value::Null) => {}
            Some(v) => return as_u64(block, k, v).map(Some),
        }
    }
    Ok(None)
}

fn opt_str<'a>(block: &str, m: &'a Map<String, Value>, keys: &[&str]) -> Result<Option<&'a str>> {
    for k in keys {
        match m.get(*k) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => return Ok(Some(s)),
            Some(v) => {
                return Err(meta_err(
                    block,
                    k,
                    format!("expected a string, found {}", kind(v)),
                ))
            }
        }
    }
    Ok(None)
}

fn opt_f64(block: &str, m: &Map<String, Value>, key: &str) -> Result<Option<f64>> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .map(Some)
            .ok_or_else(|| meta_err(block, key, format!("expected a number, found {}", kind(v)))),
    }
}

fn opt_object<'a>(
    block: &str,
    m: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a Map<String, Value>>> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(v) => Err(meta_err(
            block,
            key,
            format!("expected an object, found {}", kind(v)),
        )),
    }
}

/// What `meta/episode` (with `meta/wshard` as the timebase fallback) says.
#[derive(Clone, Debug, PartialEq)]
pub struct EpisodeMeta {
    pub id: String,
    pub env_id: String,
    pub length: Option<u64>,
    pub timebase: Timebase,
    pub chunk: Option<ChunkInfo>,
    pub timestep_range: Option<[u64; 2]>,
    pub metadata: Map<String, Value>,
}

/// Parse `meta/episode`, accepting the legacy `id` / `length_t` keys and numbers written as
/// floats. The timebase comes from `meta/episode`, falling back to `meta/wshard`; `tick_hz`
/// is taken from whichever of the two has it, else `1e9 / dt_ns`.
///
/// # Errors
/// [`FormatError::BadMeta`] naming the field.
pub fn parse_episode_meta(
    ep: &Map<String, Value>,
    wshard: &Map<String, Value>,
) -> Result<EpisodeMeta> {
    let b = names::META_EPISODE;
    let id = opt_str(b, ep, &["episode_id", "id"])?
        .unwrap_or("unknown")
        .to_owned();
    let env_id = opt_str(b, ep, &["env_id"])?.unwrap_or_default().to_owned();
    let length = opt_u64(b, ep, &["length_T", "length_t"])?;
    let etb = opt_object(b, ep, "timebase")?;
    let wtb = opt_object(names::META_WSHARD, wshard, "timebase")?;
    let tb_type = match (etb, wtb) {
        (Some(t), _) => opt_str(b, t, &["type"])?,
        (None, Some(t)) => opt_str(names::META_WSHARD, t, &["type"])?,
        (None, None) => None,
    }
    .unwrap_or("ticks");
    let dt_ns = match etb {
        Some(t) => opt_u64(b, t, &["dt_ns"])?,
        None => None,
    }
    .or(match wtb {
        Some(t) => opt_u64(names::META_WSHARD, t, &["dt_ns"])?,
        None => None,
    });
    let tick_hz = match etb {
        Some(t) => opt_f64(b, t, "tick_hz")?.filter(|&f| f > 0.0),
        None => None,
    }
    .or(match wtb {
        Some(t) => opt_f64(names::META_WSHARD, t, "tick_hz")?.filter(|&f| f > 0.0),
        None => None,
    });
    let timebase = match tb_type {
        "timestamps_ns" => Timebase::TimestampsNs {
            dt_ns: dt_ns.unwrap_or(0),
        },
        _ => {
            #[allow(clippy::cast_precision_loss)]
            let hz = tick_hz
                .or(dt_ns.filter(|&d| d > 0).map(|d| 1e9 / d as f64))
                .unwrap_or(30.0);
            Timebase::Ticks { tick_hz: hz }
        }
    };
    let chunk = match opt_u64(b, ep, &["chunk_index"])? {
        Some(chunk_index) => Some(ChunkInfo {
            chunk_index,
            total_chunks: opt_u64(b, ep, &["total_chunks"])?,
        }),
        None => None,
    };
    let timestep_range = match ep.get("timestep_range") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) if a.len() == 2 => Some([
            as_u64(b, "timestep_range", &a[0])?,
            as_u64(b, "timestep_range", &a[1])?,
        ]),
        Some(v) => {
            return Err(meta_err(
                b,
                "timestep_range",
                format!("expected [start, end], found {v}"),
            ))
        }
    };
    let metadata = opt_object(b, ep, "metadata")?.cloned().unwrap_or_default();
    Ok(EpisodeMeta {
        id,
        env_id,
        length,
        timebase,
        chunk,
        timestep_range,
        metadata,
    })
}

/// One channel description from `meta/channels`, without its data.
#[derive(Clone, Debug, PartialEq)]
pub struct ChannelDef {
    pub id: String,
    pub block: String,
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub modality: Option<String>,
    pub extra: Map<String, Value>,
}

impl ChannelDef {
    /// The lane, from the block prefix.
    ///
    /// # Errors
    /// [`FormatError::BadMeta`] when the prefix is neither `signal` nor `action`.
    pub fn lane(&self) -> Result<Lane> {
        match self.block.split('/').next() {
            Some(names::SIGNAL) => Ok(Lane::Signal),
            Some(names::ACTION) => Ok(Lane::Action),
            _ => Err(meta_err(
                names::META_CHANNELS,
                "signal_block",
                format!(
                    "channel `{}`: block `{}` is neither signal/* nor action/*",
                    self.id, self.block
                ),
            )),
        }
    }

    /// The empty channel this def describes.
    ///
    /// # Errors
    /// As [`ChannelDef::lane`].
    pub fn to_channel(&self, data: Vec<u8>) -> Result<Channel> {
        let lane = self.lane()?;
        // A block name other than `{lane}/{id}` cannot be represented; fold it into the id.
        let id = self
            .block
            .strip_prefix(lane.prefix())
            .and_then(|s| s.strip_prefix('/'))
            .unwrap_or(&self.id)
            .to_owned();
        let mut ch = Channel::new(id, lane, self.dtype, self.shape.clone(), data);
        ch.modality.clone_from(&self.modality);
        ch.extra.clone_from(&self.extra);
        Ok(ch)
    }
}

fn parse_shape(id: &str, v: Option<&Value>) -> Result<Vec<u64>> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|d| as_u64(names::META_CHANNELS, &format!("{id}.shape"), d))
            .collect(),
        Some(v) => Err(meta_err(
            names::META_CHANNELS,
            &format!("{id}.shape"),
            format!("expected an array, found {}", kind(v)),
        )),
    }
}

/// Parse `meta/channels`: the canonical `{"channels": [...]}` form, or the legacy map form
/// `{"signal/x": {"dtype": .., "shape": [..]}}`.
///
/// # Errors
/// [`FormatError::BadMeta`] naming the channel and field.
pub fn parse_channels_meta(m: &Map<String, Value>) -> Result<Vec<ChannelDef>> {
    let b = names::META_CHANNELS;
    let known = ["id", "dtype", "shape", "signal_block", "modality"];
    match m.get("channels") {
        Some(Value::Array(list)) if !list.is_empty() => list
            .iter()
            .enumerate()
            .map(|(k, def)| {
                let obj = def.as_object().ok_or_else(|| {
                    meta_err(
                        b,
                        &format!("channels[{k}]"),
                        format!("expected an object, found {}", kind(def)),
                    )
                })?;
                let id = opt_str(b, obj, &["id"])?
                    .ok_or_else(|| meta_err(b, &format!("channels[{k}].id"), "missing"))?
                    .to_owned();
                let dtype_s = opt_str(b, obj, &["dtype"])?
                    .ok_or_else(|| meta_err(b, &format!("{id}.dtype"), "missing"))?;
                let dtype = DType::parse(dtype_s).map_err(|_| {
                    meta_err(
                        b,
                        &format!("{id}.dtype"),
                        format!("unknown dtype {dtype_s:?}"),
                    )
                })?;
                let shape = parse_shape(&id, obj.get("shape"))?;
                let block = opt_str(b, obj, &["signal_block"])?
                    .map_or_else(|| format!("signal/{id}"), str::to_owned);
                let modality = opt_str(b, obj, &["modality"])?.map(str::to_owned);
                let extra = obj
                    .iter()
                    .filter(|(k, _)| !known.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                Ok(ChannelDef {
                    id,
                    block,
                    dtype,
                    shape,
                    modality,
                    extra,
                })
            })
            .collect(),
        Some(Value::Array(_)) | None => {
            // Legacy map form: every key naming a signal/ or action/ block.
            m.iter()
                .filter(|(k, _)| k.starts_with("signal/") || k.starts_with("action/"))
                .map(|(block, def)| {
                    let obj = def
                        .as_object()
                        .ok_or_else(|| meta_err(b, block, "expected an object"))?;
                    let dtype_s = opt_str(b, obj, &["dtype"])?
                        .ok_or_else(|| meta_err(b, &format!("{block}.dtype"), "missing"))?;
                    let dtype = DType::parse(dtype_s)?;
                    let id = block
                        .split_once('/')
                        .map_or(block.as_str(), |(_, rest)| rest)
                        .to_owned();
                    Ok(ChannelDef {
                        shape: parse_shape(&id, obj.get("shape"))?,
                        id,
                        block: block.clone(),
                        dtype,
                        modality: opt_str(b, obj, &["modality"])?.map(str::to_owned),
                        extra: Map::new(),
                    })
                })
                .collect()
        }
        Some(v) => Err(meta_err(
            b,
            "channels",
            format!("expected an array, found {}", kind(v)),
        )),
    }
}
