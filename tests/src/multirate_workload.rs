//! The issue's multi-rate workload, for the producer processes of
//! `multirate_three_producers_*`: joints at 1 kHz (three `f32[7]` channels), an IMU at
//! 200 Hz (`f32[10]`), two cameras at 30 Hz (`u8[480,640,3]` each, one stream), and events
//! at about 1 Hz of data time from every producer.
//!
//! Every value, timestamp and event is a pure function of the stream and the step, so the
//! test recomputes what was sent. `ingest-adapters/python/tests/multirate_workload.py`
//! computes exactly the same in Python (the two must change together); the values are
//! chosen to be exact in f32 so both languages give the same bits.
//!
//! The producers (`src/bin/multirate_producer.rs` and the Python module run as a script)
//! share one command line and one output protocol, one line per fact, flushed at once:
//!
//! ```text
//! PRODUCER SOCKET EPISODE KIND STEPS T0_NS [--shm] [--pause-at K]
//! joined                      after ACCEPTED{STREAM_OPEN}
//! event SEQ STEP              an event sent at STEP was acknowledged with SEQ
//! paused DURABLE              (with --pause-at) K steps pushed and durable; waits for a stdin line
//! closed TIMESTEPS DURABLE    after ACCEPTED{CLOSE}
//! ```

use serde_json::{json, Value};
use wshard::episode::{DType, Lane};
use wshard::episode_dir::events::EventData;
use wshard_client::{ChannelSpec, CodecChoice, Durability, Event, StreamOpen, TimebaseSpec};

/// The first timestamp of the workload (a stream's `T0_NS` argument is relative to nothing:
/// the tests pass this plus an offset).
pub const T0_NS: i64 = 1_700_000_000_000_000_000;

/// Nanoseconds per millisecond.
pub const MS_NS: i64 = 1_000_000;

/// Height, width and colour planes of a camera frame.
pub const CAMERA_SHAPE: [u32; 3] = [480, 640, 3];

/// Bytes of one camera frame.
pub const CAMERA_FRAME_BYTES: usize = 480 * 640 * 3;

/// A camera byte repeats every this many bytes within a frame (a prime, so a shift by a
/// power of two is seen).
const CAMERA_PATTERN: usize = 251;

/// Jitter step of the camera timestamps (the driver's clock is not a fixed rate).
const CAMERA_JITTER_NS: i64 = 250_000;

/// The streams of the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `joints`: 1 kHz ticks; `q`, `dq` (signal) and `tau` (action), `f32[7]` each.
    Joints,
    /// `imu`: 200 Hz ticks; `imu` `f32[10]`.
    Imu,
    /// `cameras`: per-step timestamps, nominally 30 Hz; `cam_left`, `cam_right`
    /// `u8[480,640,3]`.
    Cameras,
}

impl Kind {
    /// Every kind, in the order the tests list them.
    pub const ALL: [Kind; 3] = [Kind::Joints, Kind::Imu, Kind::Cameras];

    /// The kind named `s` (its stream name).
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }

    /// The stream name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Kind::Joints => "joints",
            Kind::Imu => "imu",
            Kind::Cameras => "cameras",
        }
    }

    /// The rate: ticks per second, or the cameras' nominal rate.
    #[must_use]
    pub fn hz(self) -> f64 {
        match self {
            Kind::Joints => 1000.0,
            Kind::Imu => 200.0,
            Kind::Cameras => 30.0,
        }
    }

    /// The stream's clock.
    #[must_use]
    pub fn timebase(self) -> TimebaseSpec {
        match self {
            Kind::Joints | Kind::Imu => TimebaseSpec::Ticks { tick_hz: self.hz() },
            Kind::Cameras => TimebaseSpec::TimestampsNs {
                nominal_hz: self.hz(),
            },
        }
    }

    /// The index's name of the clock.
    #[must_use]
    pub fn timebase_name(self) -> &'static str {
        match self {
            Kind::Joints | Kind::Imu => "ticks",
            Kind::Cameras => "timestamps_ns",
        }
    }

    /// The channels, in schema order (codecs vary: the server's default, LZ4, none).
    #[must_use]
    pub fn channels(self) -> Vec<ChannelSpec> {
        match self {
            Kind::Joints => vec![
                ChannelSpec::new("q", Lane::Signal, DType::F32, vec![7]),
                ChannelSpec::new("dq", Lane::Signal, DType::F32, vec![7])
                    .with_codec(CodecChoice::Lz4),
                ChannelSpec::new("tau", Lane::Action, DType::F32, vec![7])
                    .with_codec(CodecChoice::None),
            ],
            Kind::Imu => vec![ChannelSpec::new("imu", Lane::Signal, DType::F32, vec![10])],
            Kind::Cameras => ["cam_left", "cam_right"]
                .into_iter()
                .map(|n| {
                    ChannelSpec::new(n, Lane::Signal, DType::U8, CAMERA_SHAPE.to_vec())
                        .with_codec(CodecChoice::None)
                        .with_modality("rgb")
                })
                .collect(),
        }
    }

    /// The `STREAM_OPEN` of this kind in `episode`.
    #[must_use]
    pub fn stream_open(self, episode: &str) -> StreamOpen {
        let mut s =
            StreamOpen::new(episode, self.name(), self.timebase()).with_durability(Durability::Ack);
        for c in self.channels() {
            s = s.channel(c);
        }
        s
    }

    /// `t_ns` of `step` for a stream starting at `t0`.
    #[must_use]
    pub fn t_ns(self, t0: i64, step: u64) -> i64 {
        let s = i64::try_from(step).unwrap_or(i64::MAX / 2);
        match self {
            Kind::Joints => t0 + s * MS_NS,
            Kind::Imu => t0 + s * 5 * MS_NS,
            Kind::Cameras => t0 + s * 33_333_333 + (s % 4) * CAMERA_JITTER_NS,
        }
    }

    /// The little-endian bytes of channel `channel` (schema order) at `step`.
    #[must_use]
    pub fn value(self, channel: usize, step: u64) -> Vec<u8> {
        // Every float below is a multiple of 1/8 under 2^20: exact in f32 and f64.
        let s = step as f64;
        let c = channel as f64;
        let f32s = |n: usize, f: &dyn Fn(f64) -> f64| -> Vec<u8> {
            (0..n)
                .flat_map(|e| (f(e as f64) as f32).to_le_bytes())
                .collect()
        };
        match self {
            Kind::Joints => f32s(7, &|e| s * 0.25 - (c * 8.0 + e) * 1.5),
            Kind::Imu => f32s(10, &|e| s * 0.5 + e * 0.125 - 100.0),
            Kind::Cameras => {
                let offset = (3 * step + 101 * channel as u64) % 256;
                (0..CAMERA_FRAME_BYTES)
                    .map(|i| ((i % CAMERA_PATTERN) as u64 + offset) as u8)
                    .collect()
            }
        }
    }

    /// Every channel's bytes at `step`, in schema order.
    #[must_use]
    pub fn payloads(self, step: u64) -> Vec<Vec<u8>> {
        (0..self.channels().len())
            .map(|c| self.value(c, step))
            .collect()
    }

    /// Steps between two events: about one per second of data time.
    #[must_use]
    pub fn event_every(self) -> u64 {
        match self {
            Kind::Joints => 1000,
            Kind::Imu => 200,
            Kind::Cameras => 30,
        }
    }

    /// Whether the producer sends an event right after pushing `step` (half-way into each
    /// second of its data).
    #[must_use]
    pub fn has_event(self, step: u64) -> bool {
        step % self.event_every() == self.event_every() / 2
    }

    /// The steps below `steps` with an event.
    #[must_use]
    pub fn event_steps(self, steps: u64) -> Vec<u64> {
        (0..steps).filter(|&s| self.has_event(s)).collect()
    }

    /// The label of this kind's events.
    #[must_use]
    pub fn event_label(self) -> &'static str {
        match self {
            Kind::Joints => "button",
            Kind::Imu => "contact",
            Kind::Cameras => "frame_tag",
        }
    }

    /// The data of the event at `step`, as the events file holds it: text for joints, JSON
    /// for the IMU, binary for the cameras.
    #[must_use]
    pub fn event_data(self, step: u64) -> EventData {
        match self {
            Kind::Joints => EventData::Text(format!("joints button at step {step}")),
            Kind::Imu => EventData::Json(json!({"force": [1.5, -2.25], "imu_step": step})),
            Kind::Cameras => {
                let mut b = vec![0x00, 0xff, (step & 0xff) as u8, ((step >> 8) & 0xff) as u8];
                b.extend_from_slice(b"cam");
                EventData::Binary(b)
            }
        }
    }

    /// The `EVENT` a producer sends at `step`.
    #[must_use]
    pub fn event(self, t0: i64, step: u64) -> Event {
        let t = self.t_ns(t0, step);
        match self.event_data(step) {
            EventData::Text(s) => Event::text(t, self.event_label(), s),
            EventData::Json(v) => Event::json(t, self.event_label(), v.to_string()),
            EventData::Binary(b) => Event::binary(t, self.event_label(), b),
        }
    }
}

/// The JSON value of the owner's closing event.
#[must_use]
pub fn success_json() -> Value {
    json!({"success": true, "note": "placed"})
}
