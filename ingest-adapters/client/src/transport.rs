//! [`Transport`]: how an episode's timesteps travel to the server, the socket or a
//! shared-memory ring, as the caller chooses it when the episode opens.

use wshard_ingest_proto::RingPolicy;

/// How an episode's timesteps travel to the server (chosen at
/// [`Client::open_episode_with`](crate::Client::open_episode_with)); control frames always
/// use the socket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    /// `TIMESTEP_BATCH` frames on the socket.
    #[default]
    Socket,
    /// A shared-memory ring (docs/PROTOCOL.md, "Shared-memory transport"): a sealed memfd
    /// of `slots` slots of `slot_bytes` bytes, one batch per slot.
    Shm {
        /// Bytes per slot (a multiple of 64, at least 64 + one timestep record, at most
        /// the server's `max_frame_bytes`); 0 = from the schema: room for
        /// `max(1, 256 KiB / record)` timesteps, rounded up to 64.
        slot_bytes: u32,
        /// Slots in the ring (2..=65536); 0 = 64.
        slots: u32,
        /// What a push does when the ring is full: wait for the server
        /// ([`RingPolicy::Block`], nothing is ever lost), or drop timesteps and carry on
        /// ([`RingPolicy::DropNewest`]: the batch being sent; [`RingPolicy::DropOldest`]:
        /// the oldest batch the server has not taken yet). Dropped timesteps keep their
        /// seqs (the server records the gaps); see
        /// [`EpisodeWriter::dropped_steps`](crate::EpisodeWriter::dropped_steps).
        policy: RingPolicy,
    },
}

impl Transport {
    /// The shared-memory ring with the default geometry and [`RingPolicy::Block`].
    #[must_use]
    pub const fn shm() -> Self {
        Self::Shm {
            slot_bytes: 0,
            slots: 0,
            policy: RingPolicy::Block,
        }
    }

    /// The shared-memory ring with the default geometry and `policy`.
    #[must_use]
    pub const fn shm_with(policy: RingPolicy) -> Self {
        Self::Shm {
            slot_bytes: 0,
            slots: 0,
            policy,
        }
    }
}
