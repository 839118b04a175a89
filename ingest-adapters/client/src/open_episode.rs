//! Opening a version 1 episode on a [`Client`] ([`Client::open_episode`],
//! [`Client::open_episode_with`]); its timesteps are pushed with the [`EpisodeWriter`] it
//! returns. (A stream of a multi-stream episode is opened in `multistream`.)

use wshard_ingest_proto::{Frame, OpenEpisode};

use crate::client::Client;
use crate::episode::EpisodeWriter;
use crate::error::{ClientError, Result};
use crate::transport::Transport;

impl Client {
    /// Open an episode: check the schema locally, send `OPEN`, wait for `ACCEPTED`.
    ///
    /// # Errors
    /// [`ClientError::Schema`] when the schema breaks the protocol's rules (nothing sent);
    /// [`ClientError::Server`] when the server refuses it (`BAD_SCHEMA`, `EPISODE_EXISTS`,
    /// ...) or for an earlier unreported `ERROR`; [`ClientError::Closed`],
    /// [`ClientError::Io`], [`ClientError::Timeout`].
    pub fn open_episode(&mut self, spec: OpenEpisode) -> Result<EpisodeWriter<'_>> {
        self.open_episode_with(spec, Transport::Socket)
    }

    /// [`Client::open_episode`] with the timesteps' transport chosen. With
    /// [`Transport::Shm`] the ring is created and attached (`SHM_ATTACH`) right after
    /// `ACCEPTED{OPEN}`; if that fails the episode is closed `aborted` and the error
    /// returned.
    ///
    /// # Errors
    /// As [`Client::open_episode`]; [`ClientError::Shm`] when the ring cannot be set up
    /// here, [`ClientError::Server`] (`BAD_SHM`) when the server refuses it.
    pub fn open_episode_with(
        &mut self,
        spec: OpenEpisode,
        transport: Transport,
    ) -> Result<EpisodeWriter<'_>> {
        self.check_usable()?;
        spec.validate(&self.schema_limits())
            .map_err(ClientError::Schema)?;
        let frame = Frame::Open(spec);
        self.request(&frame, "ACCEPTED{OPEN}", |st| st.opens, |_| ())?;
        let Frame::Open(spec) = frame else {
            return Err(ClientError::Unexpected("OPEN frame changed".into()));
        };
        EpisodeWriter::start(self, spec, transport)
    }
}
