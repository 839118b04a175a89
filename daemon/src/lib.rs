//! `wshard-recorder`: the daemon `wshardd`. The operator CLI `wshard` is the `wshard-cli`
//! package (`cli/`), which calls this library's recovery and journal code. Durability
//! syscalls and the episode directory layout are the `wshard-storage` crate's (`fsio`,
//! `layout`), which the daemon, the CLI and the imports share.
//!
//! ## Layout
//! Top to bottom: each module calls only modules listed after it (checked: no two modules
//! use each other).
//! - [`server`]: `run`, the daemon's main loop: recovery, the sockets, the ingest and control
//!   threads, reload and shutdown.
//! - [`control`]: the operator's control socket (status, episodes, close, trigger, Prometheus
//!   metrics).
//! - `ingest`: the Unix socket: listener, the connection state machine, the socket and
//!   shared-memory transports.
//! - [`runtime`]: process-level services ingest and control share: the server context and
//!   the settings from the config, access, disk, sockets, the data directory lock, systemd.
//! - [`flight`]: the flight recorder's trigger windows: the `trigger` entry, the pending
//!   windows' durable records, the window threads, their resumption at start.
//! - [`upload`]: the robot's uploader: the durable upload queue of finished episodes, the
//!   upload thread, retention and the quota (`[publish]`).
//! - `registry`: the open episodes and daemon counters, for status and metrics.
//! - [`multi`]: an open multi-stream episode: its index, streams and events (protocol v2).
//! - [`recovery`]: replaying journals after a crash.
//! - [`session`]: one recording episode: the writer (group commit, rotation), chunk writer
//!   and finisher threads, its memory budget.
//! - [`episode_files`]: the index, events and annotations files of an episode directory.
//! - [`journal`]: the per-episode journal (LevelDB-log framing with CRC32C).
//! - [`chunk`]: the open chunk's columns; writing a chunk file durably; the manifest commit.
//! - [`episode`]: an episode's schema.
//! - [`error`]: the storage errors of the write path.
//!
//! The timestep record layout is the protocol crate's ([`wshard_ingest_proto::record`]).

pub mod chunk;
pub mod control;
pub mod episode;
pub mod episode_files;
pub mod error;
pub mod flight;
pub(crate) mod ingest;
pub mod journal;
pub mod multi;
pub mod recovery;
pub(crate) mod registry;
pub mod runtime;
pub mod server;
pub mod session;
pub mod upload;
