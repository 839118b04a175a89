//! Why an aligned view cannot be built.

use crate::episode::DType;
use crate::episode_dir::EpisodeDirError;

/// An aligned view that cannot be built; each variant names the stream or channel.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AlignError {
    #[error(transparent)]
    Dir(#[from] EpisodeDirError),
    /// The clock names a stream the episode does not have.
    #[error("clock stream `{stream}` does not exist (streams: {available})")]
    UnknownClockStream { stream: String, available: String },
    /// A policy or channel selection names no channel.
    #[error("no channel `{key}` (channels: {available})")]
    UnknownChannel { key: String, available: String },
    /// A bare channel name that several streams have.
    #[error("channel `{key}` is in several streams ({candidates}): write STREAM/CHANNEL")]
    AmbiguousChannel { key: String, candidates: String },
    /// `linear` on a channel that is not numeric.
    #[error("channel `{channel}` is {dtype}: linear interpolation needs a numeric dtype (use hold or nearest)")]
    NotNumeric { channel: String, dtype: DType },
    /// The fixed rate is not a finite positive number.
    #[error("clock rate {hz} Hz must be finite and > 0")]
    BadRate { hz: f64 },
    /// The fixed-rate clock's end is before its start.
    #[error("clock range ends ({end_ns}) before it starts ({start_ns})")]
    BadRange { start_ns: i64, end_ns: i64 },
    /// The fixed-rate clock would have more rows than [`super::MAX_CLOCK_ROWS`].
    #[error("clock of {hz} Hz over {span_ns} ns has more than {max} rows")]
    TooManyRows { hz: f64, span_ns: i128, max: u64 },
}
