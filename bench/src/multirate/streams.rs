//! The three producers of the multi-rate workload: what each records, at which rate, and
//! the bytes of each of its timesteps (generated before any timer starts).
//!
//! | role | rate | channels | transport | durability |
//! |---|---|---|---|---|
//! | `joints` | 1 kHz | `joint_pos`, `joint_vel`, `action` f32 `[7]` (zstd-3) | socket | ack |
//! | `imu` | 200 Hz | `imu` f32 `[10]` (zstd-3), plus one event a second | socket | ack |
//! | `cameras` | 30 Hz | `cam0`, `cam1` u8 `[480,640,3]` (none) | shared memory | chunk |
//!
//! Joints and camera bytes are the shared workload's (`teleop-workload`); the IMU's are
//! splitmix64 noise around a slow sine, the workload's own generators.

use teleop_workload as tw;
use wshard::episode::{DType, Lane};
use wshard_client::{ChannelSpec, CodecChoice, Durability, RingPolicy, Transport};

use crate::error::{fail, Result};
use crate::record::data::{CameraWindow, JointsData};

/// IMU period: 200 Hz.
pub const IMU_PERIOD_NS: i64 = 5_000_000;
/// IMU values per step.
pub const IMU_VALUES: usize = 10;
/// One event every this many IMU steps (1 Hz).
pub const IMU_STEPS_PER_EVENT: u64 = 200;
const IMU_SEED: u64 = 0x494D_5500_0000_0004; // "IMU\0\0\0\0\4"

/// A producer of the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Joints,
    Imu,
    Cameras,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Joints, Role::Imu, Role::Cameras];

    pub fn name(self) -> &'static str {
        match self {
            Self::Joints => "joints",
            Self::Imu => "imu",
            Self::Cameras => "cameras",
        }
    }

    pub fn parse(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| {
                fail(format!(
                    "unknown producer role `{s}` (joints, imu, cameras)"
                ))
            })
    }

    pub fn period_ns(self) -> i64 {
        match self {
            Self::Joints => tw::JOINTS_PERIOD_NS,
            Self::Imu => IMU_PERIOD_NS,
            Self::Cameras => tw::CAMERAS_PERIOD_NS,
        }
    }

    pub fn hz(self) -> f64 {
        1e9 / self.period_ns() as f64
    }

    /// Timesteps in `seconds` of data.
    pub fn steps(self, seconds: f64) -> u64 {
        (seconds * self.hz()).round().max(1.0) as u64
    }

    /// Payload bytes of one timestep: channel bytes plus the 8-byte timestamp.
    pub fn record_bytes(self) -> u64 {
        match self {
            Self::Joints => tw::JOINTS_RECORD_BYTES as u64,
            Self::Imu => 8 + 4 * IMU_VALUES as u64,
            Self::Cameras => 8 + 2 * tw::FRAME_BYTES as u64,
        }
    }

    pub fn transport(self) -> Transport {
        match self {
            Self::Cameras => Transport::Shm {
                slot_bytes: 0,
                slots: 0,
                policy: RingPolicy::Block,
            },
            _ => Transport::Socket,
        }
    }

    pub fn durability(self) -> Durability {
        match self {
            Self::Cameras => Durability::Chunk,
            _ => Durability::Ack,
        }
    }

    pub fn channels(self) -> Vec<ChannelSpec> {
        let zstd3 = CodecChoice::Zstd { level: 3 };
        match self {
            Self::Joints => JointsData::channels(zstd3),
            Self::Imu => {
                vec![
                    ChannelSpec::new("imu", Lane::Signal, DType::F32, vec![IMU_VALUES as u32])
                        .with_codec(zstd3),
                ]
            }
            Self::Cameras => {
                let mut c = CameraWindow::channels(CodecChoice::None);
                c.retain(|ch| ch.name != "joint_pos");
                c
            }
        }
    }
}

/// The generated timesteps of one role.
pub enum RoleData {
    Joints(JointsData),
    Imu(Vec<[u8; 4 * IMU_VALUES]>),
    Cameras(CameraWindow),
}

impl RoleData {
    /// Generate `steps` timesteps of `role` (cameras: a window of 64 distinct frames, cycled).
    pub fn build(role: Role, steps: u64) -> Self {
        match role {
            Role::Joints => Self::Joints(JointsData::build(steps)),
            Role::Imu => Self::Imu((0..steps).map(imu_step).collect()),
            Role::Cameras => Self::Cameras(CameraWindow::build(64)),
        }
    }

    /// Timestamp of step `i` (every role starts at the workload's `T0_NS`).
    pub fn t_ns(&self, role: Role, i: u64) -> i64 {
        tw::T0_NS + role.period_ns() * i as i64
    }

    /// The channel payloads of step `i`.
    pub fn payloads(&self, i: u64) -> Vec<&[u8]> {
        match self {
            Self::Joints(d) => d.step(i).1.to_vec(),
            Self::Imu(v) => vec![&v[i as usize][..]],
            Self::Cameras(c) => {
                let (_, _, c0, c1) = c.step(i);
                vec![c0, c1]
            }
        }
    }
}

/// IMU step `i`: accelerometer, gyro, magnetometer-ish values around a slow sine.
fn imu_step(i: u64) -> [u8; 4 * IMU_VALUES] {
    let mut out = [0u8; 4 * IMU_VALUES];
    for (k, v) in out.chunks_exact_mut(4).enumerate() {
        let base = tw::sin_det(i as f64 * 0.01 + k as f64);
        let noise = tw::unit(tw::splitmix64(IMU_SEED, i * IMU_VALUES as u64 + k as u64)) - 0.5;
        v.copy_from_slice(&((base + 0.01 * noise) as f32).to_le_bytes());
    }
    out
}
