//! Deterministic test data: every byte of a timestep is a pure function of its `seq` and
//! the channel, so any timestep found on disk can be checked bit-exactly without keeping
//! what was sent.

use std::ops::Range;

use wshard::episode::{DType, Episode, Lane};
use wshard_client::{
    ChannelSpec, CodecChoice, Durability, EpisodeWriter, OpenEpisode, Step, TimebaseSpec,
};

use crate::rng::mix64;

/// `env_id` of every test episode.
pub const ENV_ID: &str = "wshard-e2e/franka-sim";

/// The metadata object every test episode carries.
pub const METADATA_JSON: &str = r#"{"operator":"e2e","rig":{"arm":"franka","cams":1}}"#;

/// The standard schema: five channels covering both lanes, five dtypes, scalars and
/// tensors, every codec choice and a modality. 233 payload bytes per timestep.
#[must_use]
pub fn channels() -> Vec<ChannelSpec> {
    vec![
        ChannelSpec::new("joints", Lane::Signal, DType::F32, vec![7]),
        ChannelSpec::new("cam/rgb", Lane::Signal, DType::U8, vec![8, 8, 3])
            .with_codec(CodecChoice::Lz4)
            .with_modality("rgb"),
        ChannelSpec::new("gripper", Lane::Action, DType::F64, vec![]).with_codec(CodecChoice::None),
        ChannelSpec::new("contacts", Lane::Signal, DType::I16, vec![2])
            .with_codec(CodecChoice::Zstd { level: 1 }),
        ChannelSpec::new("valid", Lane::Signal, DType::Bool, vec![]),
    ]
}

/// A one-channel schema (`state`, f32 x 4 = 16 bytes per timestep) for raw frames.
#[must_use]
pub fn small_channels() -> Vec<ChannelSpec> {
    vec![ChannelSpec::new("state", Lane::Signal, DType::F32, vec![4])]
}

/// An `OPEN` for `id` with `channels`, ticks at 100 Hz, metadata [`METADATA_JSON`].
#[must_use]
pub fn open_spec(id: &str, channels: &[ChannelSpec], durability: Durability) -> OpenEpisode {
    let mut spec = OpenEpisode::new(id, ENV_ID, TimebaseSpec::Ticks { tick_hz: 100.0 })
        .with_durability(durability)
        .with_metadata_json(METADATA_JSON);
    spec.channels = channels.to_vec();
    spec
}

/// `t_ns` of timestep `seq`: 100 Hz with a little deterministic jitter.
#[must_use]
pub fn t_ns(seq: u64) -> i64 {
    let seq = i64::try_from(seq).unwrap_or(i64::MAX / 2);
    1_700_000_000_000_000_000 + seq * 10_000_000 + (seq % 7) * 1_001
}

/// `reward` of timestep `seq`.
#[must_use]
pub fn reward(seq: u64) -> f32 {
    (seq % 1000) as f32 * 0.25 - 3.0
}

/// `done` of timestep `seq`.
#[must_use]
pub fn done(seq: u64) -> bool {
    seq % 50 == 49
}

/// Number of elements of a per-timestep shape.
#[must_use]
pub fn elements(shape: &[u32]) -> usize {
    shape.iter().map(|&d| d as usize).product()
}

/// The payload of channel `index` (of `dtype`, `elements` values) at timestep `seq`:
/// finite values for floats, 0/1 for bool, hash bytes otherwise.
#[must_use]
pub fn channel_payload(seq: u64, index: usize, dtype: DType, elements: usize) -> Vec<u8> {
    let base = mix64(seq.wrapping_mul(0x0000_0100_0000_01B3) ^ ((index as u64) << 56));
    let mut out = Vec::with_capacity(elements * dtype.size());
    for e in 0..elements {
        let h = mix64(base ^ e as u64);
        match dtype {
            DType::F32 => out.extend_from_slice(&((h % 2_000_001) as f32 / 1000.0).to_le_bytes()),
            DType::F64 => {
                out.extend_from_slice(&((h % 2_000_000_001) as f64 / 1e6 - 1000.0).to_le_bytes());
            }
            DType::Bool => out.push((h & 1) as u8),
            other => out.extend_from_slice(&h.to_le_bytes()[..other.size()]),
        }
    }
    out
}

/// Every channel's payload at `seq`, in schema order.
#[must_use]
pub fn step_payloads(seq: u64, channels: &[ChannelSpec]) -> Vec<Vec<u8>> {
    channels
        .iter()
        .enumerate()
        .map(|(i, c)| channel_payload(seq, i, c.dtype, elements(&c.shape)))
        .collect()
}

/// The payloads at `seq` back to back (what a `TIMESTEP` frame carries).
#[must_use]
pub fn packed_payload(seq: u64, channels: &[ChannelSpec]) -> Vec<u8> {
    step_payloads(seq, channels).concat()
}

/// Payload bytes of one timestep of `channels`.
#[must_use]
pub fn step_bytes(channels: &[ChannelSpec]) -> usize {
    channels
        .iter()
        .map(|c| c.dtype.size() * elements(&c.shape))
        .sum()
}

/// Push the next `n` timesteps (from the writer's `next_seq`) in one `push_batch`.
///
/// # Errors
/// Whatever the client reports.
pub fn push_steps(
    w: &mut EpisodeWriter<'_>,
    channels: &[ChannelSpec],
    n: u64,
) -> wshard_client::Result<Range<u64>> {
    let first = w.next_seq();
    let data: Vec<Vec<Vec<u8>>> = (first..first + n)
        .map(|s| step_payloads(s, channels))
        .collect();
    let refs: Vec<Vec<&[u8]>> = data
        .iter()
        .map(|p| p.iter().map(Vec::as_slice).collect())
        .collect();
    let steps: Vec<Step<'_>> = (first..)
        .zip(&refs)
        .map(|(s, r)| Step {
            t_ns: t_ns(s),
            reward: reward(s),
            done: done(s),
            payloads: r,
        })
        .collect();
    w.push_batch(&steps)
}

/// Check that `ep` has exactly the schema `channels` and that every one of its timesteps
/// (seq 0 .. `ep.length`) holds exactly what the generator produces.
///
/// # Errors
/// The first difference, naming the channel and seq.
pub fn check_steps(ep: &Episode, channels: &[ChannelSpec]) -> Result<(), String> {
    let names: Vec<&str> = ep.channels.iter().map(|c| c.id.as_str()).collect();
    let want: Vec<&str> = channels.iter().map(|c| c.name.as_str()).collect();
    if names != want {
        return Err(format!("channels {names:?}, expected {want:?}"));
    }
    let len = usize::try_from(ep.length).map_err(|e| e.to_string())?;
    for (i, (got, spec)) in ep.channels.iter().zip(channels).enumerate() {
        let shape: Vec<u64> = spec.shape.iter().map(|&d| u64::from(d)).collect();
        if got.dtype != spec.dtype || got.shape != shape || got.lane != spec.lane {
            return Err(format!(
                "channel {:?}: {:?} {:?} {:?}, expected {:?} {:?} {:?}",
                got.id, got.lane, got.dtype, got.shape, spec.lane, spec.dtype, shape
            ));
        }
        let n = elements(&spec.shape);
        let sz = n * spec.dtype.size();
        if got.data.len() != sz * len {
            return Err(format!(
                "channel {:?}: {} bytes for {len} timesteps of {sz} bytes",
                got.id,
                got.data.len()
            ));
        }
        for (seq, chunk) in (0u64..).zip(got.data.chunks_exact(sz.max(1))) {
            if chunk != channel_payload(seq, i, spec.dtype, n).as_slice() {
                return Err(format!("channel {:?}: seq {seq} differs", got.id));
            }
        }
    }
    if ep.reward.len() != len || ep.done.len() != len {
        return Err(format!(
            "{} rewards and {} dones for {len} timesteps",
            ep.reward.len(),
            ep.done.len()
        ));
    }
    let ts = ep
        .timestamps_ns
        .as_ref()
        .ok_or("no time/timestamps_ns block")?;
    if ts.len() != len {
        return Err(format!("{} timestamps for {len} timesteps", ts.len()));
    }
    for seq in 0..ep.length {
        let k = seq as usize;
        if ep.reward[k].to_bits() != reward(seq).to_bits() {
            return Err(format!("reward at seq {seq}: {}", ep.reward[k]));
        }
        if ep.done[k] != done(seq) {
            return Err(format!("done at seq {seq}: {}", ep.done[k]));
        }
        if ts[k] != t_ns(seq) {
            return Err(format!("t_ns at seq {seq}: {}", ts[k]));
        }
    }
    Ok(())
}

/// Push 600 timesteps as batches of 1, 7, 100, 333 and 59 then 100 single pushes (checking
/// each seq), flush (all 600 durable) and close completed (600 recorded, 600 durable).
///
/// # Panics
/// When any of those steps fails or answers otherwise: this is a test helper.
pub fn record_600_mixed_and_close(mut w: EpisodeWriter<'_>, ch: &[ChannelSpec]) {
    for n in [1, 7, 100, 333, 59] {
        push_steps(&mut w, ch, n).expect("push a batch");
    }
    for _ in 0..100 {
        let s = w.next_seq();
        let p = step_payloads(s, ch);
        let refs: Vec<&[u8]> = p.iter().map(Vec::as_slice).collect();
        assert_eq!(
            w.push(t_ns(s), reward(s), done(s), &refs)
                .expect("push one step"),
            s
        );
    }
    assert_eq!(w.flush().expect("flush"), 600);
    assert_eq!(w.durable_seq(), 600);
    let summary = w.close(wshard_client::Outcome::Completed).expect("close");
    assert_eq!((summary.timesteps, summary.durable_up_to), (600, 600));
}
