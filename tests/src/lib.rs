//! Helpers for the end-to-end tests: find the built binaries, run a daemon in a temporary
//! directory, kill it, restart it; deterministic test data; raw protocol connections; and
//! checks of what ends up on disk.
//!
//! - [`abuse`]: bad schemas, hostile ids and message checks for the protocol-abuse tests.
//! - [`bins`]: where the `wshardd` and `wshard` binaries are.
//! - [`daemon`]: [`Daemon`], one `wshardd` process with its own config, data dir and log.
//! - [`data`]: the test schema and payloads as a pure function of `(seq, channel)`.
//! - [`multi`]: multi-stream episodes over raw version 2 connections, and their index,
//!   events and streams read back.
//! - [`multirate_workload`]: the multi-rate workload (joints, IMU, cameras, events)
//!   as pure functions of the stream and step, for the producer processes.
//! - [`check`]: reading episodes back, `wshard verify`, leftover files, quarantine.
//! - [`producer`]: producer processes (Rust and Python clients) of a multi-stream episode,
//!   their output read line by line.
//! - [`privileged`]: root-only helpers: a small tmpfs and a ballast file filling it.
//! - [`raw`]: a bare socket speaking frames, for protocol abuse.
//! - [`remote`]: helpers of the remote-read, cache and dataset tests (`publish_remote_*`,
//!   `publish_cache_*`, `publish_dataset_*`).
//! - [`rng`]: a small seeded RNG (SplitMix64), so every run does the same.
//! - [`s3`]: [`s3::S3Server`], a real S3-compatible server (s3s-fs) for the publish tests.
//! - [`shm`]: shared-memory rings written by hand (through the memfd, no mapping), for the
//!   hostile-producer tests.
//! - [`workload`]: clients streaming episodes until the daemon dies, and what must survive.

pub mod abuse;
pub mod azurite;
pub mod bins;
pub mod check;
pub mod control_cli;
pub mod daemon;
pub mod data;
pub mod fixtures;
pub mod flight;
pub mod multi;
pub mod multirate_workload;
pub mod parts;
pub mod privileged;
pub mod producer;
pub mod raw;
pub mod remote;
pub mod rng;
pub mod s3;
pub mod shm;
pub mod upload;
pub mod workload;

pub use daemon::{Daemon, DaemonOptions};
pub use rng::Rng;

/// Generous bound for anything the daemon should do "soon" (start, answer, exit).
pub const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
