//! Framing (`check`) and payload parsing (`parse`) of one frame.

use crate::counters::Counters;
use crate::error::{ErrorCode, ProtoError};
use crate::event::{Event, EventKind};
use crate::frame::{AcceptedWhat, Frame, Outcome};
use crate::frame_header::{FrameType, FRAME_HEADER_BYTES, LEN_BYTES};
use crate::multistream::{EpisodeOpen, StreamOpen};
use crate::record::RECORD_HEADER_BYTES;
use crate::ring::RingPolicy;
use crate::schema::{
    dtype_from_code, durability_from_code, lane_from_code, ChannelSpec, CodecChoice, OpenEpisode,
    TimebaseSpec,
};
use crate::timestep::{Timestep, TimestepBatch};
use crate::trigger::{Trigger, Triggered};
use crate::version::ProtocolVersion;
use crate::wire::Reader;

/// What [`check`] found at the start of a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameStatus {
    /// A whole frame of `len` bytes (header included) starts the buffer.
    Complete { len: usize },
    /// The first frame needs `need` bytes in total (header included); read more.
    Incomplete { need: usize },
}

/// Decide whether `buf` starts with a whole frame, from as few bytes as possible: the size
/// limit is enforced from the 4-byte header alone and the type from the 5th byte, before
/// the body is buffered. Every frame type of the newest version is known; see
/// [`check_version`] for a connection of an older one.
///
/// # Errors
/// [`ProtoError::ZeroLength`], [`ProtoError::FrameTooLarge`] or
/// [`ProtoError::UnknownFrame`], all fatal.
pub fn check(buf: &[u8], max_frame_bytes: u32) -> Result<FrameStatus, ProtoError> {
    check_version(buf, max_frame_bytes, ProtocolVersion::NEWEST)
}

/// [`check`] on a connection that speaks `version`: a frame type of a later version is
/// unknown to it, as to a server of that version.
///
/// # Errors
/// As [`check`], and [`ProtoError::FrameNotInVersion`] (fatal, `UNKNOWN_FRAME`).
pub fn check_version(
    buf: &[u8],
    max_frame_bytes: u32,
    version: ProtocolVersion,
) -> Result<FrameStatus, ProtoError> {
    let Some(len_bytes) = buf.get(..LEN_BYTES) else {
        return Ok(FrameStatus::Incomplete { need: LEN_BYTES });
    };
    let mut raw = [0u8; LEN_BYTES];
    raw.copy_from_slice(len_bytes);
    let body_len = u32::from_le_bytes(raw);
    if body_len == 0 {
        return Err(ProtoError::ZeroLength);
    }
    if body_len > max_frame_bytes {
        return Err(ProtoError::FrameTooLarge {
            len: body_len,
            max: max_frame_bytes,
        });
    }
    if let Some(&t) = buf.get(LEN_BYTES) {
        let Some(ty) = FrameType::from_code(t) else {
            return Err(ProtoError::UnknownFrame { frame_type: t });
        };
        if !version.knows(ty) {
            return Err(ProtoError::FrameNotInVersion {
                frame_type: t,
                name: ty.name(),
                version: version.code(),
                needs: ProtocolVersion::introducing(ty).code(),
            });
        }
    }
    let total = usize::try_from(body_len)
        .ok()
        .and_then(|b| b.checked_add(LEN_BYTES))
        .ok_or(ProtoError::FrameTooLarge {
            len: body_len,
            max: max_frame_bytes,
        })?;
    if buf.len() >= total {
        Ok(FrameStatus::Complete { len: total })
    } else {
        Ok(FrameStatus::Incomplete { need: total })
    }
}

/// Parse exactly one frame, header included (`frame.len()` is what [`check`] returned as
/// `Complete{len}`). The size limit is not checked again here.
///
/// # Errors
/// Fatal framing errors as [`check`] (and [`ProtoError::FrameLength`] when the slice is not
/// exactly the announced frame); payload errors ([`ProtoError::Truncated`],
/// [`ProtoError::TrailingBytes`], [`ProtoError::BadUtf8`], [`ProtoError::BadValue`]) are
/// not fatal.
pub fn parse(frame: &[u8]) -> Result<Frame, ProtoError> {
    let ty = whole_frame_type(frame)?;
    parse_payload(ty, &frame[FRAME_HEADER_BYTES..])
}

/// [`parse`], but a `TIMESTEP_BATCH`'s records go into `spare` when it holds a buffer
/// (taken, cleared, then filled with exactly the records) instead of a fresh `Vec`.
/// `spare` is left alone for the other frame types.
///
/// # Errors
/// As [`parse`].
pub(crate) fn parse_reusing(
    frame: &[u8],
    spare: &mut Option<Vec<u8>>,
) -> Result<Frame, ProtoError> {
    let ty = whole_frame_type(frame)?;
    let payload = &frame[FRAME_HEADER_BYTES..];
    match (ty, spare.take()) {
        (FrameType::TimestepBatch, Some(records)) => {
            let mut r = Reader::new(payload, ty.name());
            let frame = parse_batch(&mut r, records)?;
            r.finish()?;
            Ok(frame)
        }
        (ty, kept) => {
            *spare = kept;
            parse_payload(ty, payload)
        }
    }
}

/// The type of `frame`, which must be exactly one whole frame.
fn whole_frame_type(frame: &[u8]) -> Result<FrameType, ProtoError> {
    let status = check(frame, u32::MAX)?;
    match status {
        FrameStatus::Complete { len } if len == frame.len() => {}
        FrameStatus::Complete { len } | FrameStatus::Incomplete { need: len } => {
            return Err(ProtoError::FrameLength {
                announced: len.saturating_sub(LEN_BYTES),
                actual: frame.len().saturating_sub(LEN_BYTES),
            })
        }
    }
    frame
        .get(LEN_BYTES)
        .and_then(|&t| FrameType::from_code(t))
        .ok_or(ProtoError::ZeroLength)
}

/// A `TIMESTEP_BATCH` payload: `count`, then the records, copied into `records` (cleared
/// first, so exactly the frame's records are kept).
fn parse_batch(r: &mut Reader<'_>, mut records: Vec<u8>) -> Result<Frame, ProtoError> {
    let count = r.u32("count")?;
    records.clear();
    records.extend_from_slice(r.rest());
    batch_frame(count, records)
}

/// The `TIMESTEP_BATCH` frame of `count` steps whose raw records are `records` (the
/// payload after `count`), checked as the parser checks it.
///
/// # Errors
/// As [`TimestepBatch::from_records`] (payload errors, not fatal).
pub(crate) fn batch_frame(count: u32, records: Vec<u8>) -> Result<Frame, ProtoError> {
    TimestepBatch::from_records(count, records).map(Frame::TimestepBatch)
}

/// Parse the payload of a frame of type `ty` (the body without its type byte).
///
/// # Errors
/// Non-fatal payload errors naming the frame and field.
pub fn parse_payload(ty: FrameType, payload: &[u8]) -> Result<Frame, ProtoError> {
    let mut r = Reader::new(payload, ty.name());
    let frame = match ty {
        FrameType::Hello => Frame::Hello {
            version: r.u16("protocol_version")?,
            client_name: r.str16("client_name")?,
        },
        FrameType::HelloOk => Frame::HelloOk {
            version: r.u16("protocol_version")?,
            server_name: r.str16("server_name")?,
            max_frame_bytes: r.u32("max_frame_bytes")?,
        },
        FrameType::Open => Frame::Open(parse_open(&mut r)?),
        FrameType::Timestep => Frame::Timestep(parse_timestep(&mut r)?),
        FrameType::TimestepBatch => parse_batch(&mut r, Vec::new())?,
        FrameType::Close => Frame::Close {
            outcome: parse_outcome(&mut r)?,
        },
        FrameType::Flush => Frame::Flush,
        FrameType::ShmAttach => {
            let slot_size = r.u32("slot_size")?;
            let slot_count = r.u32("slot_count")?;
            // The trailing policy byte is optional: without it the policy is `block`.
            let policy = if r.remaining() > 0 {
                let c = r.u8("policy")?;
                Some(RingPolicy::from_code(c).ok_or_else(|| {
                    r.bad_value(
                        "policy",
                        c.into(),
                        "0 (block), 1 (drop_newest) or 2 (drop_oldest)",
                    )
                })?)
            } else {
                None
            };
            Frame::ShmAttach {
                slot_size,
                slot_count,
                policy,
            }
        }
        FrameType::EpisodeOpen => Frame::EpisodeOpen(EpisodeOpen {
            episode_id: r.str16("episode_id")?,
            env_id: r.str16("env_id")?,
            metadata_json: r.str32("metadata_json")?,
        }),
        FrameType::StreamOpen => {
            let episode_id = r.str16("episode_id")?;
            let stream = r.str16("stream")?;
            Frame::StreamOpen(Box::new(StreamOpen {
                episode_id,
                schema: parse_schema(&mut r, stream, String::new())?,
            }))
        }
        FrameType::Event => Frame::Event(parse_event(&mut r)?),
        FrameType::EpisodeClose => Frame::EpisodeClose {
            outcome: parse_outcome(&mut r)?,
        },
        FrameType::Counters => Frame::Counters(Counters::parse(&mut r)?),
        FrameType::Trigger => Frame::Trigger(Trigger::parse(&mut r)?),
        FrameType::Triggered => Frame::Triggered(Triggered::parse(&mut r)?),
        FrameType::Accepted => {
            let c = r.u8("what")?;
            let what = AcceptedWhat::from_code(c)
                .ok_or_else(|| r.bad_value("what", c.into(), AcceptedWhat::EXPECTED))?;
            Frame::Accepted {
                what,
                up_to_seq: r.u64("up_to_seq")?,
            }
        }
        FrameType::Durable => Frame::Durable {
            up_to_seq: r.u64("up_to_seq")?,
        },
        FrameType::Error => {
            let c = r.u16("code")?;
            let code = ErrorCode::from_u16(c)
                .ok_or_else(|| r.bad_value("code", c.into(), ErrorCode::EXPECTED))?;
            Frame::Error {
                code,
                message: r.str16("message")?,
            }
        }
    };
    r.finish()?;
    Ok(frame)
}

fn parse_timestep(r: &mut Reader<'_>) -> Result<Timestep, ProtoError> {
    if r.remaining() < RECORD_HEADER_BYTES {
        // Name the first field that is cut.
        let field = match r.remaining() {
            0..=7 => "seq",
            8..=15 => "t_ns",
            16..=19 => "reward",
            _ => "done",
        };
        return Err(ProtoError::Truncated {
            frame: r.frame(),
            field: field.to_owned(),
            need: RECORD_HEADER_BYTES,
            have: r.remaining(),
        });
    }
    let seq = r.u64("seq")?;
    let t_ns = r.i64("t_ns")?;
    let reward = r.f32("reward")?;
    let done = match r.u8("done")? {
        0 => false,
        1 => true,
        v => return Err(r.bad_value("done", v.into(), "0 or 1")),
    };
    Ok(Timestep {
        seq,
        t_ns,
        reward,
        done,
        payload: r.rest().to_vec(),
    })
}

fn parse_outcome(r: &mut Reader<'_>) -> Result<Outcome, ProtoError> {
    let c = r.u8("outcome")?;
    Outcome::from_code(c).ok_or_else(|| r.bad_value("outcome", c.into(), "0 or 1"))
}

fn parse_event(r: &mut Reader<'_>) -> Result<Event, ProtoError> {
    let t_ns = r.i64("t_ns")?;
    let k = r.u8("kind")?;
    let kind = EventKind::from_code(k)
        .ok_or_else(|| r.bad_value("kind", k.into(), crate::event::EVENT_KIND_EXPECTED))?;
    Ok(Event {
        t_ns,
        kind,
        label: r.str16("label")?,
        data: r.bytes32("data")?.to_vec(),
    })
}

fn parse_open(r: &mut Reader<'_>) -> Result<OpenEpisode, ProtoError> {
    let episode_id = r.str16("episode_id")?;
    let env_id = r.str16("env_id")?;
    parse_schema(r, episode_id, env_id)
}

/// The schema fields `OPEN` and `STREAM_OPEN` share (from `timebase_kind` to
/// `metadata_json`), into an [`OpenEpisode`] with the given ids.
fn parse_schema(
    r: &mut Reader<'_>,
    episode_id: String,
    env_id: String,
) -> Result<OpenEpisode, ProtoError> {
    let kind = r.u8("timebase_kind")?;
    let hz = r.f64("tick_hz")?;
    let timebase = match kind {
        0 => TimebaseSpec::Ticks { tick_hz: hz },
        1 => TimebaseSpec::TimestampsNs { nominal_hz: hz },
        v => return Err(r.bad_value("timebase_kind", v.into(), "0 (ticks) or 1 (timestamps_ns)")),
    };
    let d = r.u8("durability")?;
    let durability = durability_from_code(d)
        .ok_or_else(|| r.bad_value("durability", d.into(), "0 (ack) or 1 (chunk)"))?;
    let count = r.u16("channel_count")?;
    // Each channel is at least 9 bytes: never reserve more than the payload can hold.
    let mut channels = Vec::with_capacity(usize::from(count).min(r.remaining() / 9));
    for i in 0..count {
        let c = parse_channel(r).map_err(|e| e.in_field(&format!("channels[{i}]")))?;
        channels.push(c);
    }
    let metadata_json = r.str32("metadata_json")?;
    Ok(OpenEpisode {
        episode_id,
        env_id,
        timebase,
        durability,
        channels,
        metadata_json,
    })
}

fn parse_channel(r: &mut Reader<'_>) -> Result<ChannelSpec, ProtoError> {
    let name = r.str16("name")?;
    let l = r.u8("lane")?;
    let lane = lane_from_code(l)
        .ok_or_else(|| r.bad_value("lane", l.into(), "0 (signal) or 1 (action)"))?;
    let d = r.u8("dtype")?;
    let dtype = dtype_from_code(d).ok_or_else(|| r.bad_value("dtype", d.into(), "0..=12"))?;
    let ndim = r.u8("ndim")?;
    let mut shape = Vec::with_capacity(usize::from(ndim).min(r.remaining() / 4));
    for _ in 0..ndim {
        shape.push(r.u32("dims")?);
    }
    let c = r.u8("codec")?;
    let level = r.i8("codec_level")?;
    let codec = CodecChoice::from_code(c, level).ok_or_else(|| {
        r.bad_value(
            "codec",
            c.into(),
            "0 (default), 1 (none), 2 (lz4), 3 (zstd)",
        )
    })?;
    let modality = r.str16("modality")?;
    Ok(ChannelSpec {
        name,
        lane,
        dtype,
        shape,
        codec,
        modality: if modality.is_empty() {
            None
        } else {
            Some(modality)
        },
    })
}
