//! The version 2 requests of a multi-stream episode: `EPISODE_OPEN` ([`EpisodeOpen`]) and
//! `STREAM_OPEN` ([`StreamOpen`]), with the stream-name rule and their checks against the
//! server's limits.

use crate::error::ProtoError;
use crate::frame_header::FrameType;
use crate::schema::{ChannelSpec, Durability, OpenEpisode, TimebaseSpec};
use crate::validate::{
    id_rule_broken, shown_id, validate_metadata_json, SchemaLimits, MAX_EPISODE_ID_BYTES,
};

/// Longest stream name, in bytes (a stream name is a directory name and the stem of its
/// files, like an episode id): the format library's limit, which readers apply too.
pub use wshard::episode_dir::names::MAX_STREAM_NAME_BYTES;

/// `EPISODE_OPEN`: create a multi-stream episode.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct EpisodeOpen {
    /// The episode id, under the same rules as `OPEN`'s.
    pub episode_id: String,
    /// Free text.
    pub env_id: String,
    /// A JSON object, or empty (= `{}`).
    pub metadata_json: String,
}

impl EpisodeOpen {
    /// An episode without metadata.
    #[must_use]
    pub fn new(episode_id: impl Into<String>, env_id: impl Into<String>) -> Self {
        Self {
            episode_id: episode_id.into(),
            env_id: env_id.into(),
            metadata_json: String::new(),
        }
    }

    /// Set the metadata JSON object text.
    #[must_use]
    pub fn with_metadata_json(mut self, metadata_json: impl Into<String>) -> Self {
        self.metadata_json = metadata_json.into();
        self
    }

    /// Check the id against `limits.max_episode_id_bytes` and the metadata.
    ///
    /// # Errors
    /// [`ProtoError::BadId`] (`BAD_EPISODE_ID`) for the id, [`ProtoError::BadRequest`]
    /// (`BAD_SCHEMA`) for metadata that is not a JSON object.
    pub fn validate(&self, limits: &SchemaLimits) -> Result<(), ProtoError> {
        const FRAME: FrameType = FrameType::EpisodeOpen;
        validate_request_episode_id(FRAME, &self.episode_id, limits)?;
        validate_metadata_json(&self.metadata_json).map_err(|e| in_request(FRAME, None, e))
    }
}

/// `STREAM_OPEN`: join the open multi-stream episode `episode_id` with one stream.
///
/// The stream's schema is the one `OPEN` carries, in an [`OpenEpisode`] whose
/// `episode_id` is the stream name (the id its chunks and manifest carry) and whose
/// `env_id` is not on the wire (empty after parsing; the episode's is the stream's).
#[derive(Clone, Debug, PartialEq)]
pub struct StreamOpen {
    /// The episode to join.
    pub episode_id: String,
    /// The stream: name (`schema.episode_id`), timebase, durability, channels, metadata.
    pub schema: OpenEpisode,
}

impl StreamOpen {
    /// A stream with no channels yet, durability `ack` and no metadata.
    #[must_use]
    pub fn new(
        episode_id: impl Into<String>,
        stream: impl Into<String>,
        timebase: TimebaseSpec,
    ) -> Self {
        Self {
            episode_id: episode_id.into(),
            schema: OpenEpisode::new(stream, "", timebase),
        }
    }

    /// The stream name.
    #[must_use]
    pub fn stream(&self) -> &str {
        &self.schema.episode_id
    }

    /// Append a channel.
    #[must_use]
    pub fn channel(mut self, channel: ChannelSpec) -> Self {
        self.schema = self.schema.channel(channel);
        self
    }

    /// Set the durability class.
    #[must_use]
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.schema = self.schema.with_durability(durability);
        self
    }

    /// Leave the durability class to the server's `durability.default`.
    #[must_use]
    pub fn with_server_default_durability(mut self) -> Self {
        self.schema = self.schema.with_server_default_durability();
        self
    }

    /// Set the stream's metadata JSON object text.
    #[must_use]
    pub fn with_metadata_json(mut self, metadata_json: impl Into<String>) -> Self {
        self.schema = self.schema.with_metadata_json(metadata_json);
        self
    }

    /// Check the episode id, the stream name and the schema (as `OPEN`'s) against
    /// `limits`.
    ///
    /// # Errors
    /// [`ProtoError::BadId`] (`BAD_EPISODE_ID`) for the episode id or the stream name
    /// (the message says `stream name`), [`ProtoError::BadRequest`] (`BAD_SCHEMA`) naming
    /// the stream and the field.
    pub fn validate(&self, limits: &SchemaLimits) -> Result<(), ProtoError> {
        const FRAME: FrameType = FrameType::StreamOpen;
        validate_request_episode_id(FRAME, &self.episode_id, limits)?;
        validate_stream_name(self.stream())?;
        self.schema
            .validate_schema(limits)
            .map_err(|e| in_request(FRAME, Some(self.stream()), e))
    }
}

/// Check a stream name: 1..=[`MAX_STREAM_NAME_BYTES`] bytes of `[A-Za-z0-9._-]`, not
/// starting with `.` (the episode-id rules).
///
/// # Errors
/// [`ProtoError::BadId`] (`BAD_EPISODE_ID`) saying `stream name` and the rule broken.
pub fn validate_stream_name(name: &str) -> Result<(), ProtoError> {
    match id_rule_broken(name, MAX_STREAM_NAME_BYTES) {
        None => Ok(()),
        Some(reason) => Err(ProtoError::BadId {
            frame: FrameType::StreamOpen.name(),
            what: "stream name",
            id: shown_id(name),
            reason,
        }),
    }
}

fn validate_request_episode_id(
    frame: FrameType,
    id: &str,
    limits: &SchemaLimits,
) -> Result<(), ProtoError> {
    let max = limits.max_episode_id_bytes.min(MAX_EPISODE_ID_BYTES);
    match id_rule_broken(id, max) {
        None => Ok(()),
        Some(reason) => Err(ProtoError::BadId {
            frame: frame.name(),
            what: "episode_id",
            id: shown_id(id),
            reason,
        }),
    }
}

/// An `OPEN` schema error as the error of `frame` (about `stream`, when given).
fn in_request(frame: FrameType, stream: Option<&str>, e: ProtoError) -> ProtoError {
    match e {
        ProtoError::BadSchema { message } => ProtoError::BadRequest {
            frame: frame.name(),
            message: match stream {
                Some(s) => format!("stream {s:?}: {message}"),
                None => message,
            },
        },
        other => other,
    }
}
