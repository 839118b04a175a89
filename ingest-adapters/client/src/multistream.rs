//! Multi-stream episodes (protocol version 2): [`MultiStreamEpisode`], the owner's handle
//! ([`Client::open_multistream_episode`]), and joining an episode with a stream
//! ([`Client::join_stream`]), whose timesteps an [`EpisodeWriter`] pushes.

use std::sync::atomic::Ordering;

use wshard_ingest_proto::{EpisodeOpen, Event, Frame, FrameType, Outcome, StreamOpen};

use crate::trigger::{FlightTrigger, TriggerWindow};

use crate::client::Client;
use crate::episode::EpisodeWriter;
use crate::error::{ClientError, Result};
use crate::transport::Transport;

impl Client {
    /// Create a multi-stream episode owned by this connection: check it, send
    /// `EPISODE_OPEN`, wait for `ACCEPTED`. Producers (this connection too, through
    /// [`MultiStreamEpisode::join_stream`]) then join it with streams.
    ///
    /// # Errors
    /// [`ClientError::NeedsVersion`] on a version 1 connection; [`ClientError::Schema`]
    /// for a bad id or metadata (nothing sent); [`ClientError::Server`] when the server
    /// refuses it (`EPISODE_EXISTS`, `ALREADY_OPEN`, `DISK_LOW`, ...);
    /// [`ClientError::Closed`], [`ClientError::Io`], [`ClientError::Timeout`].
    pub fn open_multistream_episode(
        &mut self,
        spec: EpisodeOpen,
    ) -> Result<MultiStreamEpisode<'_>> {
        self.require_version(FrameType::EpisodeOpen)?;
        self.check_usable()?;
        spec.validate(&self.schema_limits())
            .map_err(ClientError::Schema)?;
        let frame = Frame::EpisodeOpen(spec);
        self.request(
            &frame,
            "ACCEPTED{EPISODE_OPEN}",
            |st| st.episode_opens,
            |_| (),
        )?;
        let Frame::EpisodeOpen(spec) = frame else {
            return Err(ClientError::Unexpected("EPISODE_OPEN frame changed".into()));
        };
        Ok(MultiStreamEpisode {
            client: self,
            episode_id: spec.episode_id,
            closed: false,
        })
    }

    /// Join the open multi-stream episode `spec.episode_id` with the stream `spec`
    /// (`STREAM_OPEN`), its timesteps on the socket. The writer pushes, flushes and closes
    /// the stream exactly as an episode of its own: seqs and `DURABLE` count the stream's
    /// timesteps from 0, [`EpisodeWriter::close`] ends the stream.
    ///
    /// # Errors
    /// [`ClientError::NeedsVersion`] on a version 1 connection; [`ClientError::Schema`]
    /// when the episode id, the stream name or the schema breaks the protocol's rules
    /// (nothing sent); [`ClientError::Server`] when the server refuses it
    /// (`UNKNOWN_EPISODE`, `EPISODE_CLOSED`, `STREAM_EXISTS`, `BAD_SCHEMA`,
    /// `ALREADY_OPEN`, ...); [`ClientError::Closed`], [`ClientError::Io`],
    /// [`ClientError::Timeout`].
    pub fn join_stream(&mut self, spec: StreamOpen) -> Result<EpisodeWriter<'_>> {
        self.join_stream_with(spec, Transport::Socket)
    }

    /// [`Client::join_stream`] with the timesteps' transport chosen, as
    /// [`Client::open_episode_with`]: with [`Transport::Shm`] the ring is attached right
    /// after `ACCEPTED{STREAM_OPEN}` (if that fails, the stream is closed `aborted`).
    ///
    /// # Errors
    /// As [`Client::join_stream`]; [`ClientError::Shm`], [`ClientError::Server`]
    /// (`BAD_SHM`) for the ring.
    pub fn join_stream_with(
        &mut self,
        spec: StreamOpen,
        transport: Transport,
    ) -> Result<EpisodeWriter<'_>> {
        self.require_version(FrameType::StreamOpen)?;
        self.check_usable()?;
        spec.validate(&self.schema_limits())
            .map_err(ClientError::Schema)?;
        let frame = Frame::StreamOpen(Box::new(spec));
        self.request(
            &frame,
            "ACCEPTED{STREAM_OPEN}",
            |st| st.stream_opens,
            |_| (),
        )?;
        let Frame::StreamOpen(spec) = frame else {
            return Err(ClientError::Unexpected("STREAM_OPEN frame changed".into()));
        };
        EpisodeWriter::start(self, spec.schema, transport)
    }
}

/// A multi-stream episode this connection owns (made by
/// [`Client::open_multistream_episode`]). The owner sends events, may record a stream of
/// the episode itself ([`MultiStreamEpisode::join_stream`]), and closes the episode: no
/// more streams may join, and it finalizes once every stream has ended.
///
/// Dropping it without [`MultiStreamEpisode::close`] closes the episode as `aborted`
/// (waiting up to the timeout for the answer; errors are ignored). A connection that ends
/// without either leaves the episode `interrupted`.
#[derive(Debug)]
pub struct MultiStreamEpisode<'c> {
    client: &'c mut Client,
    episode_id: String,
    closed: bool,
}

impl MultiStreamEpisode<'_> {
    /// The episode's id.
    #[must_use]
    pub fn episode_id(&self) -> &str {
        &self.episode_id
    }

    /// Send an event (`EVENT`) and wait until it is durable (`ACCEPTED{EVENT}`). Returns
    /// its seq among the episode's events (0, 1, 2, ...).
    ///
    /// # Errors
    /// [`ClientError::Event`] when its data is not what its kind says (nothing sent);
    /// [`ClientError::Server`] when the server refuses it (`LIMIT` over
    /// `limits.max_event_bytes`, `MALFORMED_FRAME`, `STORAGE`; the episode carries on),
    /// or for an earlier unreported `ERROR`; [`ClientError::Closed`], [`ClientError::Io`],
    /// [`ClientError::Timeout`].
    pub fn send_event(&mut self, event: Event) -> Result<u64> {
        self.client.send_event(event)?
    }

    /// Send a flight trigger (`TRIGGER`) and wait for the window episode's name
    /// (`TRIGGERED`), as [`Client::trigger`].
    ///
    /// # Errors
    /// As [`Client::trigger`].
    pub fn trigger(&mut self, trigger: &FlightTrigger) -> Result<TriggerWindow> {
        self.client.send_trigger(trigger)?
    }

    /// Join this episode with a stream on the owner's own connection (see
    /// [`Client::join_stream`]); the owner's handle is back once the stream's writer is
    /// closed or dropped.
    ///
    /// # Errors
    /// As [`Client::join_stream`].
    pub fn join_stream(&mut self, spec: StreamOpen) -> Result<EpisodeWriter<'_>> {
        self.join_stream_with(spec, Transport::Socket)
    }

    /// [`MultiStreamEpisode::join_stream`] with the transport chosen (see
    /// [`Client::join_stream_with`]).
    ///
    /// # Errors
    /// As [`Client::join_stream_with`].
    pub fn join_stream_with(
        &mut self,
        spec: StreamOpen,
        transport: Transport,
    ) -> Result<EpisodeWriter<'_>> {
        self.client.join_stream_with(spec, transport)
    }

    /// Close the episode (`EPISODE_CLOSE`): no more joins; it finalizes with `outcome`
    /// once every stream has ended. Returns the streams still recording when the server
    /// answered (0: the episode is finalized).
    ///
    /// # Errors
    /// [`ClientError::Server`] for an `ERROR` not yet reported or one answering the close;
    /// [`ClientError::Timeout`], [`ClientError::Closed`], [`ClientError::Io`].
    pub fn close(mut self, outcome: Outcome) -> Result<u64> {
        self.close_inner(outcome)
    }

    fn close_inner(&mut self, outcome: Outcome) -> Result<u64> {
        self.closed = true;
        // An error already reported is returned after the EPISODE_CLOSE went out, so the
        // server closes the episode regardless.
        let earlier = self.client.shared().take_error();
        let closed = self.client.request(
            &Frame::EpisodeClose { outcome },
            "ACCEPTED{EPISODE_CLOSE}",
            |st| st.episode_closes,
            |st| st.last_episode_close,
        );
        match earlier {
            Some(e) => Err(e),
            None => closed,
        }
    }
}

impl Drop for MultiStreamEpisode<'_> {
    fn drop(&mut self) {
        if !self.closed && !self.client.shared().ended.load(Ordering::Acquire) {
            let _ = self.close_inner(Outcome::Aborted);
        }
    }
}
