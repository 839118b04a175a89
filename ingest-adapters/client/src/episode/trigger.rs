//! Flight triggers sent by the producer of an episode or stream (protocol version 2).

use super::EpisodeWriter;
use crate::error::Result;
use crate::trigger::{FlightTrigger, TriggerWindow};

impl EpisodeWriter<'_> {
    /// Send a flight trigger (`TRIGGER`) beside this stream or episode and wait for the
    /// window episode's name (`TRIGGERED`). Pending timesteps are not sent by it: push
    /// (or flush) the steps the window must hold first. Needs a protocol version 2
    /// connection.
    ///
    /// # Errors
    /// [`crate::ClientError::NeedsVersion`] on a version 1 connection;
    /// [`crate::ClientError::Server`] when the server refuses the trigger (its message
    /// starts `TRIGGER:`; the recording carries on), or for an `ERROR` about the
    /// timesteps, which fails the episode as in [`EpisodeWriter::push`];
    /// [`crate::ClientError::EpisodeFailed`], [`crate::ClientError::Closed`],
    /// [`crate::ClientError::Io`], [`crate::ClientError::Timeout`].
    pub fn trigger(&mut self, trigger: &FlightTrigger) -> Result<TriggerWindow> {
        self.check_usable()?;
        let r = self.client.send_trigger(trigger);
        self.note(r)?
    }
}
