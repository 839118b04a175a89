//! The benchmark episodes, built in memory from the shared teleop workloads
//! (`teleop-workload`) before any timer starts.
//!
//! - cameras: `signal/cam0`, `signal/cam1` (u8 `[480, 640, 3]`), `signal/joint_pos` (f32 `[7]`).
//! - joints: `signal/joint_pos`, `signal/joint_vel` (f32 `[7]`), `action/action` (f32 `[7]`).
//!
//! Both carry `reward` (zeros), `done` (last step 1) and `time/timestamps_ns`
//! (timebase `timestamps_ns`). Payload bytes are the workload's record bytes: channel bytes plus
//! one 8-byte timestamp per step.

use teleop_workload as tw;
use wshard::episode::{Channel, DType, Episode, Lane, Timebase};

use crate::error::Result;

/// Which workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Cameras,
    Joints,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Cameras => "cameras",
            Self::Joints => "joints",
        }
    }

    /// Record (payload) bytes per timestep.
    pub fn record_bytes(self) -> u64 {
        match self {
            Self::Cameras => tw::CAMERAS_RECORD_BYTES as u64,
            Self::Joints => tw::JOINTS_RECORD_BYTES as u64,
        }
    }

    /// Timesteps whose payload fits in `bytes` (at least one).
    pub fn steps_for(self, bytes: u64) -> u64 {
        (bytes / self.record_bytes()).max(1)
    }
}

/// A built episode with its payload accounting.
#[derive(Debug)]
pub struct Workload {
    pub kind: Kind,
    pub episode: Episode,
}

impl Workload {
    pub fn steps(&self) -> u64 {
        self.episode.length
    }

    /// Payload bytes as the shared benchmarks count them.
    pub fn payload_bytes(&self) -> u64 {
        self.steps() * self.kind.record_bytes()
    }

    /// Build `steps` timesteps of `kind`.
    ///
    /// # Errors
    /// When the episode does not validate (a bug in this file).
    pub fn build(kind: Kind, steps: u64) -> Result<Self> {
        let episode = match kind {
            Kind::Cameras => cameras(steps),
            Kind::Joints => joints(steps),
        };
        episode.validate()?;
        Ok(Self { kind, episode })
    }
}

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

fn finish(ep: &mut Episode, ts: Vec<i64>) {
    let t = ts.len();
    ep.set_reward(vec![0.0; t]);
    let mut done = vec![false; t];
    if let Some(last) = done.last_mut() {
        *last = true;
    }
    ep.set_done(done);
    ep.timestamps_ns = Some(ts);
}

/// Fill `buf` (a whole number of `item`-byte items) in parallel; `f(index, item_bytes)`.
fn par_fill(buf: &mut [u8], item: usize, f: impl Fn(u64, &mut [u8]) + Sync) {
    let items = buf.len() / item;
    let per = items.div_ceil(threads()).max(1);
    let f = &f;
    std::thread::scope(|s| {
        for (t, part) in buf.chunks_mut(per * item).enumerate() {
            s.spawn(move || {
                for (j, out) in part.chunks_exact_mut(item).enumerate() {
                    f((t * per + j) as u64, out);
                }
            });
        }
    });
}

fn cameras(steps: u64) -> Episode {
    let t = steps as usize;
    let mut cam0 = vec![0u8; t * tw::FRAME_BYTES];
    let mut cam1 = vec![0u8; t * tw::FRAME_BYTES];
    par_fill(&mut cam0, tw::FRAME_BYTES, |k, out| {
        tw::camera_frame(0, k, out)
    });
    par_fill(&mut cam1, tw::FRAME_BYTES, |k, out| {
        tw::camera_frame(1, k, out)
    });
    let mut joint_pos = vec![0u8; t * tw::JOINT_VEC_BYTES];
    par_fill(&mut joint_pos, tw::JOINT_VEC_BYTES, |k, out| {
        out.copy_from_slice(&tw::vec_bytes(&tw::cameras_joint_pos(k)));
    });
    let shape = vec![tw::CAM_H as u64, tw::CAM_W as u64, tw::CAM_C as u64];
    let mut ep = Episode::new(
        "bench-cameras",
        "teleop-workload/cameras",
        Timebase::TimestampsNs {
            dt_ns: tw::CAMERAS_PERIOD_NS as u64,
        },
    );
    ep.push_channel(Channel::new(
        "cam0",
        Lane::Signal,
        DType::U8,
        shape.clone(),
        cam0,
    ));
    ep.push_channel(Channel::new("cam1", Lane::Signal, DType::U8, shape, cam1));
    ep.push_channel(Channel::new(
        "joint_pos",
        Lane::Signal,
        DType::F32,
        vec![tw::JOINTS as u64],
        joint_pos,
    ));
    finish(&mut ep, (0..steps).map(tw::cameras_ts_ns).collect());
    ep
}

/// Joint workload. The workload defines 1,000,000 steps; larger episodes continue the same
/// formulas past that index (every value is a pure function of the step index).
fn joints(steps: u64) -> Episode {
    let t = steps as usize;
    let vb = tw::JOINT_VEC_BYTES;
    let mut pos = vec![0u8; t * vb];
    let mut vel = vec![0u8; t * vb];
    let mut act = vec![0u8; t * vb];
    let per = t.div_ceil(threads()).max(1);
    std::thread::scope(|s| {
        let parts = pos
            .chunks_mut(per * vb)
            .zip(vel.chunks_mut(per * vb))
            .zip(act.chunks_mut(per * vb));
        for (n, ((p, v), a)) in parts.enumerate() {
            s.spawn(move || {
                let rows = p
                    .chunks_exact_mut(vb)
                    .zip(v.chunks_exact_mut(vb))
                    .zip(a.chunks_exact_mut(vb));
                for (j, ((p, v), a)) in rows.enumerate() {
                    let st = tw::joints_step((n * per + j) as u64);
                    p.copy_from_slice(&tw::vec_bytes(&st.joint_pos));
                    v.copy_from_slice(&tw::vec_bytes(&st.joint_vel));
                    a.copy_from_slice(&tw::vec_bytes(&st.action));
                }
            });
        }
    });
    let shape = vec![tw::JOINTS as u64];
    let mut ep = Episode::new(
        "bench-joints",
        "teleop-workload/joints",
        Timebase::TimestampsNs {
            dt_ns: tw::JOINTS_PERIOD_NS as u64,
        },
    );
    ep.push_channel(Channel::new(
        "joint_pos",
        Lane::Signal,
        DType::F32,
        shape.clone(),
        pos,
    ));
    ep.push_channel(Channel::new(
        "joint_vel",
        Lane::Signal,
        DType::F32,
        shape.clone(),
        vel,
    ));
    ep.push_channel(Channel::new("action", Lane::Action, DType::F32, shape, act));
    let ts = (0..steps)
        .map(|i| tw::T0_NS + i as i64 * tw::JOINTS_PERIOD_NS)
        .collect();
    finish(&mut ep, ts);
    ep
}

/// The raw bytes the episode's data blocks hold, for the plain baseline: each channel, then
/// `reward` (f32), `done` (u8) and the timestamps (i64), i.e. exactly what a codec-none WShard
/// file stores minus its header, index, meta JSON and alignment padding. That is the payload
/// plus 5 bytes per step of reward and done. The little-endian buffers are built here, before
/// any timer starts; the channels are borrowed.
pub struct RawBlocks<'a> {
    pub channels: Vec<&'a [u8]>,
    pub owned: Vec<Vec<u8>>,
}

impl<'a> RawBlocks<'a> {
    pub fn of(ep: &'a Episode) -> Self {
        let reward = ep.reward.iter().flat_map(|r| r.to_le_bytes()).collect();
        let done = ep.done.iter().map(|&d| u8::from(d)).collect();
        let ts = ep
            .timestamps_ns
            .iter()
            .flatten()
            .flat_map(|t| t.to_le_bytes())
            .collect();
        Self {
            channels: ep.channels.iter().map(|c| c.data.as_slice()).collect(),
            owned: vec![reward, done, ts],
        }
    }

    /// All the slices, in the episode's block order.
    pub fn parts(&self) -> Vec<&[u8]> {
        let mut v = self.channels.clone();
        v.extend(self.owned.iter().map(Vec::as_slice));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_matches_records() {
        for kind in [Kind::Cameras, Kind::Joints] {
            let w = Workload::build(kind, 5).unwrap();
            let raw = RawBlocks::of(&w.episode);
            let total: usize = raw.parts().iter().map(|p| p.len()).sum();
            // Payload plus 4 B reward and 1 B done per step.
            assert_eq!(total as u64, w.payload_bytes() + 5 * w.steps());
        }
    }

    #[test]
    fn bytes_match_the_workload_records() {
        let w = Workload::build(Kind::Cameras, 3).unwrap();
        let mut rec = Vec::new();
        tw::cameras_record(2, &mut rec);
        let f = tw::FRAME_BYTES;
        assert_eq!(
            &w.episode.channels[0].data[2 * f..3 * f],
            &rec[tw::CAM0_RANGE]
        );
        assert_eq!(
            &w.episode.channels[1].data[2 * f..3 * f],
            &rec[tw::CAM1_RANGE]
        );
        let j = Workload::build(Kind::Joints, 4).unwrap();
        let r = tw::joints_step(3).record();
        assert_eq!(&j.episode.channels[2].data[3 * 28..4 * 28], &r[64..92]);
    }
}
