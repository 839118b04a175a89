//! Blocking Rust client for `wshardd`, wire protocol v1 (docs/PROTOCOL.md).
//!
//! ```no_run
//! use wshard::episode::{DType, Lane};
//! use wshard_client::{ChannelSpec, Client, OpenEpisode, Outcome, TimebaseSpec};
//!
//! # fn main() -> Result<(), wshard_client::ClientError> {
//! let mut client = Client::connect("/run/wshardd/wshardd.sock", "teleop-loop/0.3")?;
//! let spec = OpenEpisode::new("ep-0001", "Franka-teleop", TimebaseSpec::Ticks { tick_hz: 30.0 })
//!     .channel(ChannelSpec::new("joints", Lane::Signal, DType::F32, vec![7]))
//!     .channel(ChannelSpec::new("gripper", Lane::Action, DType::F32, vec![]));
//! let mut episode = client.open_episode(spec)?;
//! for i in 0..300u32 {
//!     let joints = [0.1f32 * i as f32; 7].map(f32::to_le_bytes).concat();
//!     let gripper = 1.0f32.to_le_bytes();
//!     episode.push(i64::from(i) * 33_333_333, 0.0, i == 299, &[&joints, &gripper])?;
//! }
//! episode.flush()?; // returns once the server reports every step durable
//! let summary = episode.close(Outcome::Completed)?;
//! assert_eq!(summary.timesteps, 300);
//! # Ok(()) }
//! ```
//!
//! ## Shared-memory transport
//!
//! For camera-heavy episodes the timesteps can skip the socket: open the episode with
//! [`Client::open_episode_with`] and [`Transport::Shm`]. The client creates a sealed memfd
//! ring and two eventfds, sends them with `SHM_ATTACH` and waits for the server's
//! `ACCEPTED`; from then on each batch is copied into one slot of the ring (a batch never
//! exceeds a slot) and `FLUSH`, `CLOSE` and the server's `DURABLE` / `ERROR` still use the
//! socket. The API is the same (`push`, `push_batch`, `flush`, `wait_durable`,
//! `durable_seq`, `close`), and so are the durability guarantees. When the ring is full,
//! pushing blocks until the server frees a slot, a server `ERROR` arrives, or the timeout
//! ends. [`Transport::shm()`] sizes a slot from the schema (room for `max(1, 256 KiB /
//! record)` timesteps, rounded up to 64 bytes) and uses 64 slots, fewer (down to 8) when
//! that would make the ring larger than 16 MiB (camera frames: 8 slots of one frame).
//!
//! A real-time loop that must never block can choose a drop policy instead
//! ([`Transport::shm_with`], or `policy` in [`Transport::Shm`]): on a full ring,
//! [`RingPolicy::DropNewest`] drops the batch being sent and [`RingPolicy::DropOldest`]
//! the oldest batch the server has not taken yet. Dropped timesteps keep their seqs (the
//! next one recorded has a later seq; the server records the gap in the episode), are
//! counted by [`EpisodeWriter::dropped_steps`], and are never `DURABLE`: `flush` and
//! `wait_durable` wait for what was actually sent.
//!
//! ```no_run
//! # use wshard::episode::{DType, Lane};
//! # use wshard_client::{ChannelSpec, Client, OpenEpisode, Outcome, TimebaseSpec, Transport};
//! # fn main() -> Result<(), wshard_client::ClientError> {
//! let mut client = Client::connect("/run/wshardd/wshardd.sock", "camera-rig/0.1")?;
//! let spec = OpenEpisode::new("ep-0002", "cams", TimebaseSpec::Ticks { tick_hz: 30.0 })
//!     .channel(ChannelSpec::new("cam/rgb", Lane::Signal, DType::U8, vec![480, 640, 3]));
//! let mut episode = client.open_episode_with(spec, Transport::shm())?;
//! let frame = vec![0u8; 480 * 640 * 3];
//! for i in 0..90i64 {
//!     episode.push(i * 33_333_333, 0.0, i == 89, &[&frame])?;
//! }
//! episode.flush()?;
//! episode.close(Outcome::Completed)?;
//! # Ok(()) }
//! ```
//!
//! The ring module is the only `unsafe` code of the crate.
//!
//! Design: the caller's thread encodes steps straight into one pending `TIMESTEP_BATCH`
//! frame and writes it to the socket; a background reader thread consumes the server's
//! asynchronous `DURABLE` / `ERROR` / `ACCEPTED` frames and publishes them through a
//! mutex and condvar (see [`Client`]). A reader thread was chosen over non-blocking
//! polling because the server may answer at any time, including while a large batch
//! write is blocked, and a thread keeps that simple and the receive side drained.

mod client;
mod episode;
mod error;
mod reader;
mod shm;

pub use client::{Client, ClientOptions, Transport};
pub use episode::{CloseSummary, EpisodeWriter, Step};
pub use error::{ClientError, Result};
pub use reader::ServerInfo;
pub use wshard_ingest_proto::{
    ChannelSpec, CodecChoice, Durability, ErrorCode, OpenEpisode, Outcome, RingPolicy, TimebaseSpec,
};
