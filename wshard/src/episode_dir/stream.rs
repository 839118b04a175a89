//! A stream of an episode: what its listing says ([`StreamInfo`]) and its data
//! ([`StreamData`]: timestamps and channels over all its chunks).

use std::path::PathBuf;

use super::column::ChannelData;
use super::index::{ChannelEntry, EpisodeStatus};
use crate::episode::Timebase;

/// A stream as [`super::EpisodeDir::open`] lists it. Counts come from the stream's manifest
/// (the truth for its chunks), first/last timestamps from its first and last chunk.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamInfo {
    pub name: String,
    /// The stream's manifest (`streams/S/S_manifest.wshard`, or `EP_manifest.wshard` for a
    /// single-stream episode).
    pub manifest_path: PathBuf,
    /// From the first chunk, else from the index; `None` when neither says.
    pub timebase: Option<Timebase>,
    /// From the first chunk, else from the index.
    pub channels: Vec<ChannelEntry>,
    /// Who records it (index `producer`; `None` for a single-stream episode).
    pub producer: Option<String>,
    /// Index status (multi-stream) or manifest `status` (single-stream), when known.
    pub status: Option<EpisodeStatus>,
    pub steps: u64,
    pub chunks: u64,
    pub first_t_ns: Option<i64>,
    pub last_t_ns: Option<i64>,
    /// The index lists the stream but its manifest does not exist yet (a stream that has
    /// just joined); it reads as empty.
    pub manifest_missing: bool,
}

/// Timestamps that go backwards inside a stream, or a channel whose step count differs
/// from the stream's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StreamDataError {
    #[error("stream `{stream}`: timestamp of step {step} ({t_ns}) is before the previous one ({previous_t_ns})")]
    Backwards {
        stream: String,
        step: u64,
        previous_t_ns: i64,
        t_ns: i64,
    },
    #[error("stream `{stream}`: channel `{channel}` has {steps} steps, the stream has {expected} timestamps")]
    Length {
        stream: String,
        channel: String,
        steps: u64,
        expected: u64,
    },
}

/// A stream's data: one timestamp per step (non-decreasing; equal timestamps allowed) and
/// every channel with the same number of steps.
#[derive(Debug)]
pub struct StreamData {
    name: String,
    timebase: Timebase,
    timestamps_ns: Vec<i64>,
    channels: Vec<ChannelData>,
}

impl StreamData {
    /// Check and assemble a stream.
    ///
    /// # Errors
    /// [`StreamDataError::Backwards`] for the first step whose timestamp is smaller than the
    /// previous one, [`StreamDataError::Length`] for a channel with another step count.
    pub fn new(
        name: impl Into<String>,
        timebase: Timebase,
        timestamps_ns: Vec<i64>,
        channels: Vec<ChannelData>,
    ) -> Result<Self, StreamDataError> {
        let name = name.into();
        if let Some(i) = timestamps_ns.windows(2).position(|w| w[1] < w[0]) {
            return Err(StreamDataError::Backwards {
                stream: name,
                step: i as u64 + 1,
                previous_t_ns: timestamps_ns[i],
                t_ns: timestamps_ns[i + 1],
            });
        }
        let expected = timestamps_ns.len() as u64;
        if let Some(c) = channels.iter().find(|c| c.steps() != expected) {
            return Err(StreamDataError::Length {
                stream: name,
                channel: c.name.clone(),
                steps: c.steps(),
                expected,
            });
        }
        Ok(Self {
            name,
            timebase,
            timestamps_ns,
            channels,
        })
    }

    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    #[must_use]
    pub fn timebase(&self) -> Timebase {
        self.timebase
    }

    /// One timestamp per step, non-decreasing.
    #[must_use]
    pub fn timestamps_ns(&self) -> &[i64] {
        &self.timestamps_ns
    }

    /// Number of steps.
    #[must_use]
    pub fn steps(&self) -> u64 {
        self.timestamps_ns.len() as u64
    }

    #[must_use]
    pub fn channels(&self) -> &[ChannelData] {
        &self.channels
    }

    /// The channel named `name`.
    #[must_use]
    pub fn channel(&self, name: &str) -> Option<&ChannelData> {
        self.channels.iter().find(|c| c.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::episode::{DType, Lane};

    fn col(steps: u64) -> ChannelData {
        let mut c = ChannelData::new("x", Lane::Signal, DType::U8, vec![]);
        c.push_owned(vec![0; usize::try_from(steps).unwrap()], steps)
            .unwrap();
        c
    }

    #[test]
    fn stream_data_checks_order_and_lengths() {
        let tb = Timebase::TimestampsNs { dt_ns: 1 };
        let s = StreamData::new("s", tb, vec![1, 1, 2], vec![col(3)]).unwrap();
        assert_eq!((s.name(), s.steps()), ("s", 3));
        assert!(s.channel("x").is_some());
        let e = StreamData::new("s", tb, vec![1, 3, 2], vec![col(3)]).unwrap_err();
        assert_eq!(
            e,
            StreamDataError::Backwards {
                stream: "s".into(),
                step: 2,
                previous_t_ns: 3,
                t_ns: 2
            }
        );
        let e = StreamData::new("s", tb, vec![1, 2], vec![col(3)]).unwrap_err();
        assert!(e.to_string().contains("channel `x` has 3 steps"), "{e}");
    }
}
