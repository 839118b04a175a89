//! Encoding frames (little-endian, as docs/PROTOCOL.md lays them out).

use crate::error::ProtoError;
use crate::frame::Frame;
use crate::frame_header::{code, LEN_BYTES};
use crate::record::push_step_record;
use crate::schema::{dtype_code, durability_code, lane_code, OpenEpisode};
use crate::wire::{put_bytes32, put_str16, put_str32, too_long};

/// Append `frame` to `out`.
///
/// # Errors
/// [`ProtoError::TooLong`] when a string does not fit its length prefix, a list does not
/// fit its count or the body exceeds `u32::MAX`; `out` is then left as it was. Frames built
/// with [`Frame::error`] and schemas that pass [`OpenEpisode::validate`] always encode.
pub fn encode(frame: &Frame, out: &mut Vec<u8>) -> Result<(), ProtoError> {
    let start = out.len();
    let result = encode_inner(frame, out, start);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// Encode into a new buffer.
///
/// # Errors
/// As [`encode`].
pub fn encode_to_vec(frame: &Frame) -> Result<Vec<u8>, ProtoError> {
    let mut out = Vec::new();
    encode(frame, &mut out)?;
    Ok(out)
}

fn encode_inner(frame: &Frame, out: &mut Vec<u8>, start: usize) -> Result<(), ProtoError> {
    let ty = frame.frame_type();
    let name = ty.name();
    out.extend_from_slice(&[0u8; LEN_BYTES]);
    out.push(ty.code());
    match frame {
        Frame::Hello {
            version,
            client_name,
        } => {
            out.extend_from_slice(&version.to_le_bytes());
            put_str16(out, client_name, name, "client_name")?;
        }
        Frame::HelloOk {
            version,
            server_name,
            max_frame_bytes,
        } => {
            out.extend_from_slice(&version.to_le_bytes());
            put_str16(out, server_name, name, "server_name")?;
            out.extend_from_slice(&max_frame_bytes.to_le_bytes());
        }
        Frame::Open(open) => {
            put_str16(out, &open.episode_id, name, "episode_id")?;
            put_str16(out, &open.env_id, name, "env_id")?;
            encode_schema(open, out, name)?;
        }
        Frame::EpisodeOpen(ep) => {
            put_str16(out, &ep.episode_id, name, "episode_id")?;
            put_str16(out, &ep.env_id, name, "env_id")?;
            put_str32(out, &ep.metadata_json, name, "metadata_json")?;
        }
        Frame::StreamOpen(s) => {
            put_str16(out, &s.episode_id, name, "episode_id")?;
            put_str16(out, s.stream(), name, "stream")?;
            encode_schema(&s.schema, out, name)?;
        }
        Frame::Event(e) => {
            out.extend_from_slice(&e.t_ns.to_le_bytes());
            out.push(e.kind.code());
            put_str16(out, &e.label, name, "label")?;
            put_bytes32(out, &e.data, name, "data")?;
        }
        Frame::EpisodeClose { outcome } => out.push(outcome.code()),
        Frame::Counters(c) => c.encode(out)?,
        Frame::Trigger(t) => t.encode(out)?,
        Frame::Triggered(t) => t.encode(out)?,
        Frame::Timestep(s) => {
            push_step_record(out, s.seq, s.t_ns, s.reward, s.done, &[&s.payload]);
        }
        Frame::TimestepBatch(b) => {
            out.extend_from_slice(&b.count().to_le_bytes());
            out.extend_from_slice(b.records());
        }
        Frame::Close { outcome } => out.push(outcome.code()),
        Frame::Flush => {}
        Frame::ShmAttach {
            slot_size,
            slot_count,
            policy,
        } => {
            out.extend_from_slice(&slot_size.to_le_bytes());
            out.extend_from_slice(&slot_count.to_le_bytes());
            if let Some(p) = policy {
                out.push(p.code());
            }
        }
        Frame::Accepted { what, up_to_seq } => {
            out.push(what.code());
            out.extend_from_slice(&up_to_seq.to_le_bytes());
        }
        Frame::Durable { up_to_seq } => out.extend_from_slice(&up_to_seq.to_le_bytes()),
        Frame::Error { code, message } => {
            out.extend_from_slice(&code.code().to_le_bytes());
            put_str16(out, message, name, "message")?;
        }
    }
    let body = out.len() - start - LEN_BYTES;
    let body_len =
        u32::try_from(body).map_err(|_| too_long(name, "body_len", body, 0xFFFF_FFFF))?;
    out[start..start + LEN_BYTES].copy_from_slice(&body_len.to_le_bytes());
    Ok(())
}

/// The schema fields `OPEN` and `STREAM_OPEN` share, from `timebase_kind` to
/// `metadata_json` (the ids before them are the caller's).
fn encode_schema(
    open: &OpenEpisode,
    out: &mut Vec<u8>,
    frame: &'static str,
) -> Result<(), ProtoError> {
    out.push(open.timebase.kind_code());
    out.extend_from_slice(&open.timebase.hz().to_le_bytes());
    out.push(durability_code(open.durability));
    let n = open.channels.len();
    let count = u16::try_from(n).map_err(|_| too_long(frame, "channel_count", n, 0xFFFF))?;
    out.extend_from_slice(&count.to_le_bytes());
    for (i, c) in open.channels.iter().enumerate() {
        let field = |f: &str| format!("channels[{i}].{f}");
        put_str16(out, &c.name, frame, &field("name"))?;
        out.push(lane_code(c.lane));
        out.push(dtype_code(c.dtype));
        let ndim = u8::try_from(c.shape.len())
            .map_err(|_| too_long(frame, &field("ndim"), c.shape.len(), 0xFF))?;
        out.push(ndim);
        for d in &c.shape {
            out.extend_from_slice(&d.to_le_bytes());
        }
        out.push(c.codec.code());
        out.extend_from_slice(&c.codec.level().to_le_bytes());
        put_str16(
            out,
            c.modality.as_deref().unwrap_or(""),
            frame,
            &field("modality"),
        )?;
    }
    put_str32(out, &open.metadata_json, frame, "metadata_json")
}

/// Append a `TIMESTEP` frame for one step; `payloads` in schema order, back to back.
///
/// # Errors
/// [`ProtoError::TooLong`] when the body exceeds `u32::MAX` (`out` is left as it was).
pub fn encode_timestep(
    out: &mut Vec<u8>,
    seq: u64,
    t_ns: i64,
    reward: f32,
    done: bool,
    payloads: &[&[u8]],
) -> Result<(), ProtoError> {
    let start = out.len();
    out.extend_from_slice(&[0u8; LEN_BYTES]);
    out.push(code::TIMESTEP);
    push_step_record(out, seq, t_ns, reward, done, payloads);
    let body = out.len() - start - LEN_BYTES;
    match u32::try_from(body) {
        Ok(body_len) => {
            out[start..start + LEN_BYTES].copy_from_slice(&body_len.to_le_bytes());
            Ok(())
        }
        Err(_) => {
            out.truncate(start);
            Err(too_long("TIMESTEP", "body_len", body, 0xFFFF_FFFF))
        }
    }
}
