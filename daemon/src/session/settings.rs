//! The knobs a session runs with, resolved from the config by the server.

use std::time::Duration;

use wshard::episode::EpisodeWriteOptions;
use wshardd_config::FsyncPolicy;

/// When the open chunk is sealed and written (see `rotation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rotation {
    pub max_timesteps: u64,
    /// `rotation.max_bytes`: the episode's chunk memory budget, which its chunks share
    /// (what one chunk may hold is `super::chunk_byte_limit`).
    pub max_bytes: u64,
    pub max_age: Duration,
}

/// Everything a session needs besides its schema.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionSettings {
    /// When the journal is fsynced (the config's `fsync.*`).
    pub fsync: FsyncPolicy,
    pub rotation: Rotation,
    /// Frames queued between the connection and the writer before the reader blocks.
    pub queue_frames: usize,
    /// Bytes of records queued between the connection and the writer before the reader
    /// blocks (`queues.max_pending_bytes`; one larger frame passes alone).
    pub queue_bytes: u64,
    pub compression_workers: usize,
    pub write_options: EpisodeWriteOptions,
    /// Reserve each chunk file's exact size with `fallocate` before writing it (`disk.preallocate`).
    pub preallocate: bool,
}

impl Default for SessionSettings {
    fn default() -> Self {
        Self {
            fsync: FsyncPolicy::Interval(Duration::from_millis(10)),
            rotation: Rotation {
                max_timesteps: 100_000,
                // The config's default.
                max_bytes: 256 << 20,
                max_age: Duration::from_secs(60),
            },
            queue_frames: 64,
            queue_bytes: 64 << 20,
            compression_workers: 2,
            write_options: EpisodeWriteOptions::default(),
            preallocate: true,
        }
    }
}
