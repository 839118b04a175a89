//! Producer counters sent by the producer of a stream or episode (protocol version 2).

use wshard_ingest_proto::{Counters, Frame, FrameType};

use super::EpisodeWriter;
use crate::error::{ClientError, Result};

impl EpisodeWriter<'_> {
    /// Send the producer's own counters (`COUNTERS`): each `(name, value)` replaces the
    /// value the daemon keeps for that name in this stream (or episode), shown in its
    /// `status` and metrics until the stream ends. Names are `[a-z0-9_]{1,32}`, unique,
    /// at most 32 per call. Nothing is answered and nothing waits: the frame goes out at
    /// once (pending timesteps are not sent by it), and is not durable.
    ///
    /// # Errors
    /// [`ClientError::NeedsVersion`] on a version 1 connection, [`ClientError::Counters`]
    /// naming the counter (or the count) that breaks the rules (nothing sent);
    /// [`ClientError::EpisodeFailed`], [`ClientError::Server`] (an earlier `ERROR`),
    /// [`ClientError::Closed`], [`ClientError::Io`].
    pub fn send_counters(&mut self, counters: &[(&str, u64)]) -> Result<()> {
        self.client.require_version(FrameType::Counters)?;
        self.check_usable()?;
        let frame = Counters::new(counters.iter().copied());
        frame.validate().map_err(ClientError::Counters)?;
        let r = self.client.send(&Frame::Counters(frame));
        self.note(r)
    }
}
