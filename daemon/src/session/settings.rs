//! The knobs a session runs with, resolved from the config by the server.

use std::time::Duration;

use wshard::episode::EpisodeWriteOptions;
use wshardd_config::FsyncPolicy;

use super::cut_reason::CutReason;

/// When the open chunk is sealed and written (see `rotation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rotation {
    pub max_timesteps: u64,
    /// `rotation.max_bytes`: the episode's chunk memory budget, which its chunks share
    /// (what one chunk may hold is `super::chunk_byte_limit`).
    pub max_bytes: u64,
    pub max_age: Duration,
}

/// `[rolling]`: every single-stream episode is split (see `super::parts`) as soon as its
/// current part holds at least `max_bytes` of timestep payload or spans at least
/// `max_duration_ns` of `t_ns`; 0 turns a bound off (both 0: rolling is off).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rolling {
    pub max_bytes: u64,
    pub max_duration_ns: u64,
}

impl Rolling {
    /// Whether a part of `bytes` payload bytes spanning `span_ns` must be cut.
    #[must_use]
    pub fn is_due(&self, bytes: u64, span_ns: u64) -> bool {
        self.due(bytes, span_ns).is_some()
    }

    /// The bound a part of `bytes` payload bytes spanning `span_ns` reached (`max_bytes`
    /// first when both), if any.
    #[must_use]
    pub fn due(&self, bytes: u64, span_ns: u64) -> Option<CutReason> {
        if self.max_bytes > 0 && bytes >= self.max_bytes {
            Some(CutReason::MaxBytes)
        } else if self.max_duration_ns > 0 && span_ns >= self.max_duration_ns {
            Some(CutReason::MaxDuration)
        } else {
            None
        }
    }

    /// Whether either bound is set.
    #[must_use]
    pub fn is_on(&self) -> bool {
        self.max_bytes > 0 || self.max_duration_ns > 0
    }
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
    /// `limits.max_episode_id_bytes`: the id of a split part must fit it.
    pub max_episode_id_bytes: usize,
    /// `[rolling]`.
    pub rolling: Rolling,
    /// Where the finisher hands each finalized episode (the uploader; disconnected when
    /// `[publish]` is off).
    pub handoff: crate::upload::Handoff,
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
            max_episode_id_bytes: wshard_storage::layout::MAX_EPISODE_ID_BYTES,
            rolling: Rolling::default(),
            handoff: crate::upload::Handoff::default(),
        }
    }
}
