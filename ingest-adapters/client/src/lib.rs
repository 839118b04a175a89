//! Blocking Rust client for `wshardd`, wire protocol v1 (docs/PROTOCOL.md).
//!
//! ```no_run
//! use wshard::episode::{DType, Lane};
//! use wshard_client::{ChannelSpec, Client, OpenEpisode, Outcome, TimebaseSpec};
//!
//! # fn main() -> Result<(), wshard_client::ClientError> {
//! let mut client = Client::connect("/run/wshardd/ingest.sock", "teleop-loop/0.3")?;
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

pub use client::{Client, ClientOptions};
pub use episode::{CloseSummary, EpisodeWriter, Step};
pub use error::{ClientError, Result};
pub use reader::ServerInfo;
pub use wshard_ingest_proto::{
    ChannelSpec, CodecChoice, Durability, ErrorCode, OpenEpisode, Outcome, TimebaseSpec,
};
