//! The timesteps the `record` benchmark pushes, generated before any timer starts.
//!
//! - joints: every record of the run, `steps x 92` bytes (`teleop_workload::joints_step`),
//!   generated in full on all cores (the workload continues its formulas past step 1 M).
//! - cameras: the frames are far too slow to generate on the fly (see
//!   [`CameraWindow::build`], which measures it) and 3,000 steps are 5.5 GB, so a window of
//!   distinct steps is generated and cycled: step `k` sends the frames of step `k % window`,
//!   with its own timestamp and `joint_pos` (cheap, computed per step). The window is larger
//!   than a chunk, so no compressed block ever sees a frame twice.

use std::time::{Duration, Instant};

use teleop_workload as tw;
use wshard::episode::{DType, Lane};
use wshard_client::{ChannelSpec, CodecChoice};

/// Record bytes of one joints step.
pub const JOINTS_RECORD: usize = tw::JOINTS_RECORD_BYTES;

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Fill `buf` (whole `item`-byte items) on all cores; `f(index, item)`.
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

/// All records of a joints run: `t_ns i64 | joint_pos | joint_vel | action`.
pub struct JointsData {
    pub records: Vec<u8>,
}

impl JointsData {
    pub fn build(steps: u64) -> Self {
        let mut records = vec![0u8; steps as usize * JOINTS_RECORD];
        par_fill(&mut records, JOINTS_RECORD, |i, out| {
            out.copy_from_slice(&tw::joints_step(i).record());
        });
        Self { records }
    }

    pub fn steps(&self) -> u64 {
        (self.records.len() / JOINTS_RECORD) as u64
    }

    /// Timestamp and the three channel payloads of step `i`.
    #[inline]
    pub fn step(&self, i: u64) -> (i64, [&[u8]; 3]) {
        let r = &self.records[i as usize * JOINTS_RECORD..(i as usize + 1) * JOINTS_RECORD];
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&r[0..8]);
        (i64::from_le_bytes(ts), [&r[8..36], &r[36..64], &r[64..92]])
    }

    /// The joints schema with `codec` on every channel.
    pub fn channels(codec: CodecChoice) -> Vec<ChannelSpec> {
        let shape = vec![tw::JOINTS as u32];
        vec![
            ChannelSpec::new("joint_pos", Lane::Signal, DType::F32, shape.clone())
                .with_codec(codec),
            ChannelSpec::new("joint_vel", Lane::Signal, DType::F32, shape.clone())
                .with_codec(codec),
            ChannelSpec::new("action", Lane::Action, DType::F32, shape).with_codec(codec),
        ]
    }
}

/// A window of distinct camera frames, cycled.
pub struct CameraWindow {
    /// `window` frames of cam0, then of cam1, each `FRAME_BYTES`.
    cam0: Vec<u8>,
    cam1: Vec<u8>,
    pub window: u64,
    /// Wall time the window took to generate, to show why it is not generated on the fly.
    pub generate: Duration,
}

impl CameraWindow {
    pub fn build(window: u64) -> Self {
        let n = window as usize * tw::FRAME_BYTES;
        let mut cam0 = vec![0u8; n];
        let mut cam1 = vec![0u8; n];
        let t = Instant::now();
        par_fill(&mut cam0, tw::FRAME_BYTES, |k, out| {
            tw::camera_frame(0, k, out)
        });
        par_fill(&mut cam1, tw::FRAME_BYTES, |k, out| {
            tw::camera_frame(1, k, out)
        });
        Self {
            cam0,
            cam1,
            window,
            generate: t.elapsed(),
        }
    }

    /// Record MB/s the generator reaches on all cores: the ceiling of on-the-fly generation.
    pub fn generator_mb_s(&self) -> f64 {
        let bytes = self.window * tw::CAMERAS_RECORD_BYTES as u64;
        bytes as f64 / self.generate.as_secs_f64().max(1e-9) / 1e6
    }

    /// Timestamp, `joint_pos` bytes and the two frames of step `k`.
    #[inline]
    pub fn step(&self, k: u64) -> (i64, [u8; tw::JOINT_VEC_BYTES], &[u8], &[u8]) {
        let f = (k % self.window) as usize * tw::FRAME_BYTES;
        (
            tw::cameras_ts_ns(k),
            tw::vec_bytes(&tw::cameras_joint_pos(k)),
            &self.cam0[f..f + tw::FRAME_BYTES],
            &self.cam1[f..f + tw::FRAME_BYTES],
        )
    }

    /// The cameras schema with `codec` on every channel.
    pub fn channels(codec: CodecChoice) -> Vec<ChannelSpec> {
        let shape = vec![tw::CAM_H as u32, tw::CAM_W as u32, tw::CAM_C as u32];
        vec![
            ChannelSpec::new("cam0", Lane::Signal, DType::U8, shape.clone())
                .with_codec(codec)
                .with_modality("rgb"),
            ChannelSpec::new("cam1", Lane::Signal, DType::U8, shape)
                .with_codec(codec)
                .with_modality("rgb"),
            ChannelSpec::new(
                "joint_pos",
                Lane::Signal,
                DType::F32,
                vec![tw::JOINTS as u32],
            )
            .with_codec(codec),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_match_the_workload_records() {
        let j = JointsData::build(5);
        let (t, p) = j.step(3);
        let r = tw::joints_step(3).record();
        assert_eq!(t, tw::joints_step(3).ts_ns);
        assert_eq!([p[0], p[1], p[2]].concat(), r[8..92].to_vec());

        let w = CameraWindow::build(2);
        let mut rec = Vec::new();
        tw::cameras_record(3, &mut rec);
        let (t, jp, c0, c1) = w.step(3);
        assert_eq!(t, tw::cameras_ts_ns(3));
        assert_eq!(&jp[..], &rec[tw::CAMJP_RANGE]);
        // Frames cycle: step 3 of a 2-step window sends the frames of step 1.
        let mut rec1 = Vec::new();
        tw::cameras_record(1, &mut rec1);
        assert_eq!(c0, &rec1[tw::CAM0_RANGE]);
        assert_eq!(c1, &rec1[tw::CAM1_RANGE]);
    }
}
