//! Events sent by the producer of an episode or stream (protocol version 2).

use wshard_ingest_proto::Event;

use super::EpisodeWriter;
use crate::error::Result;

impl EpisodeWriter<'_> {
    /// Send an event (`EVENT`) beside this stream or episode and wait until it is durable
    /// (`ACCEPTED{EVENT}`); returns its seq among the episode's events. Needs a protocol
    /// version 2 connection. Pending timesteps are not sent by it, and take no part in it:
    /// the event has its own `t_ns`, seq and acknowledgement.
    ///
    /// # Errors
    /// [`crate::ClientError::NeedsVersion`] on a version 1 connection,
    /// [`crate::ClientError::Event`] when its data is not what its kind says (nothing
    /// sent); [`crate::ClientError::Server`] when the server refuses the event (`LIMIT`,
    /// `MALFORMED_FRAME`, `STORAGE`: the recording carries on), or for an `ERROR` about
    /// the timesteps, which fails the episode as in [`EpisodeWriter::push`];
    /// [`crate::ClientError::EpisodeFailed`], [`crate::ClientError::Closed`],
    /// [`crate::ClientError::Io`], [`crate::ClientError::Timeout`].
    pub fn send_event(&mut self, event: Event) -> Result<u64> {
        self.check_usable()?;
        let r = self.client.send_event(event);
        self.note(r)?
    }
}
