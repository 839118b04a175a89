//! Blocking Rust client for `wshardd`, wire protocol versions 1 and 2 (docs/PROTOCOL.md).
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
//! The crate has no `unsafe` code: the ring's mapping (the atomic control words, the slot
//! copies) is `wshard_shm_ring::MappedRing`, which the daemon consumes the ring through too.
//!
//! ## Multi-stream episodes and events (protocol version 2)
//!
//! A robot is not one clock: several producers (processes, or connections of one) can
//! record one episode, each as a **stream** with its own clock and channels. Connect with
//! [`Client::connect_v2`] (or [`ClientOptions::protocol_version`]); one connection creates
//! the episode ([`Client::open_multistream_episode`], it then owns it), producers join it
//! ([`Client::join_stream`], [`Client::join_stream_with`] for the shared-memory ring, or
//! [`MultiStreamEpisode::join_stream`] on the owner's connection) and get an
//! [`EpisodeWriter`] that works exactly as for a version 1 episode: its seqs and `DURABLE`
//! count the stream's timesteps, `close` ends the stream. Events (text, JSON, binary) are
//! sent with [`MultiStreamEpisode::send_event`] or [`EpisodeWriter::send_event`], each
//! durable when it returns its seq. The owner's [`MultiStreamEpisode::close`] ends the
//! joins; the episode finalizes once every stream has ended.
//!
//! Flight triggers ([`Client::trigger`], [`EpisodeWriter::trigger`],
//! [`MultiStreamEpisode::trigger`] with a [`FlightTrigger`]) have the daemon persist the
//! window `[t - pre, t + post]` of its flight streams as an episode, named at once in the
//! returned [`TriggerWindow`]; any version 2 connection may send one (docs/PROTOCOL.md,
//! "TRIGGER").
//!
//! ```no_run
//! # use wshard::episode::{DType, Lane};
//! # use wshard_client::{ChannelSpec, Client, EpisodeOpen, Event, Outcome, StreamOpen, TimebaseSpec};
//! # fn main() -> Result<(), wshard_client::ClientError> {
//! let mut owner = Client::connect_v2("/run/wshardd/wshardd.sock", "teleop/0.3")?;
//! let mut episode = owner.open_multistream_episode(EpisodeOpen::new("ep-0003", "Franka"))?;
//! episode.send_event(Event::text(0, "instruction", "pick up the red cube"))?;
//!
//! // In the camera process (any process), on its own connection:
//! let mut cams = Client::connect_v2("/run/wshardd/wshardd.sock", "cameras/0.1")?;
//! let spec = StreamOpen::new("ep-0003", "cam", TimebaseSpec::TimestampsNs { nominal_hz: 30.0 })
//!     .channel(ChannelSpec::new("rgb", Lane::Signal, DType::U8, vec![480, 640, 3]));
//! let mut stream = cams.join_stream(spec)?;
//! stream.push(33_333_333, 0.0, false, &[&vec![0u8; 480 * 640 * 3]])?;
//! stream.close(Outcome::Completed)?; // the stream ends
//!
//! let still_recording = episode.close(Outcome::Completed)?; // 0: finalized
//! # let _ = still_recording; Ok(()) }
//! ```
//!
//! Design: the caller's thread encodes steps straight into one pending `TIMESTEP_BATCH`
//! frame and writes it to the socket; a background reader thread consumes the server's
//! asynchronous `DURABLE` / `ERROR` / `ACCEPTED` frames and publishes them through a
//! mutex and condvar (see [`Client`]). A reader thread was chosen over non-blocking
//! polling because the server may answer at any time, including while a large batch
//! write is blocked, and a thread keeps that simple and the receive side drained.

// The modules, top to bottom; each uses only modules listed after it:
// - `multistream` (version 2: creating and joining multi-stream episodes) and `open_episode`
//   (version 1 episodes): the `Client` methods that open something and return its handle;
// - `episode`: `EpisodeWriter`, pushing one episode's (or stream's) timesteps;
// - `events`: sending an `EVENT` on the connection; `trigger`: sending a `TRIGGER`;
// - `client`: `Client`, the connection: handshake, sending frames, waiting for answers;
// - `shm`: the producer side of the shared-memory ring; `transport`: the socket-or-ring
//   choice;
// - `reader`: the reader thread and the state it shares; `socket_write`: vectored writes
//   and frames with fds; `error`.
mod client;
mod episode;
mod error;
mod events;
mod flight;
mod multistream;
mod open_episode;
mod reader;
mod shm;
mod socket_write;
mod transport;
mod trigger;

pub use client::{Client, ClientOptions};
pub use episode::{CloseSummary, EpisodeWriter, Step};
pub use error::{ClientError, Result};
pub use flight::{FlightMode, FLIGHT_KEY, LATCHED_KEY};
pub use multistream::MultiStreamEpisode;
pub use reader::ServerInfo;
pub use transport::Transport;
pub use trigger::{FlightTrigger, TriggerWindow};
pub use wshard_ingest_proto::{
    ChannelSpec, CodecChoice, Durability, EpisodeOpen, ErrorCode, Event, EventKind, OpenEpisode,
    Outcome, ProtocolVersion, RingPolicy, StreamOpen, TimebaseSpec,
};
