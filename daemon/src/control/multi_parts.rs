//! The parts of an open multi-stream episode (`split EP`, `[rolling]`) as `status`,
//! `episodes` and the metrics show them: the same fields as a single-stream episode's
//! (`session::parts::PartControl::to_json`), the current part's figures summed over the
//! streams recording in it (its time span is the longest stream's, what `[rolling]`
//! checks `max_duration_ms` against).

use std::sync::atomic::Ordering;

use serde_json::{json, Value};

use crate::multi::MultiEpisode;
use crate::registry::Registry;
use crate::session::cut_reason::LastCut;

/// One multi-stream episode's parts, read once.
#[derive(Clone, Debug, PartialEq)]
pub struct MultiParts {
    /// The producer's episode id (part 0).
    pub episode: String,
    /// The part recording now, and its number (also the parts finished).
    pub part: String,
    pub number: u64,
    /// Parts cut by `[rolling]` so far.
    pub rolled: u64,
    /// Timestep payload bytes and timesteps in the part recording now, over its streams.
    pub bytes: u64,
    pub steps: u64,
    /// The longest `t_ns` span of a stream in the part recording now.
    pub span_ns: u64,
    /// The streams recording now.
    pub streams: Vec<String>,
    pub rolling_error: Option<String>,
    pub last_cut: Option<LastCut>,
}

impl MultiParts {
    /// The parts of `m`, its streams' figures from `reg`.
    #[must_use]
    pub fn of(reg: &Registry, m: &MultiEpisode) -> Self {
        let live = reg.streams_of(m.id());
        let parts: Vec<_> = live.iter().filter_map(|l| l.stream_parts.clone()).collect();
        Self {
            episode: m.id().to_owned(),
            part: m.current_part(),
            number: m.current_part_number(),
            rolled: m.parts_rolled(),
            bytes: parts
                .iter()
                .map(|p| p.part_bytes.load(Ordering::Relaxed))
                .sum(),
            steps: parts.iter().map(|p| p.part_steps()).sum(),
            span_ns: parts.iter().map(|p| p.part_span_ns()).max().unwrap_or(0),
            streams: live
                .iter()
                .map(|l| l.episode_and_stream().1.to_owned())
                .collect(),
            rolling_error: m.rolling_error(),
            last_cut: m.last_cut(),
        }
    }

    /// The `parts` object (the fields of a single-stream episode's).
    #[must_use]
    pub fn to_json(&self) -> Value {
        json!({
            "part": self.part,
            "part_number": self.number,
            "parts_finished": self.number,
            "parts_rolled": self.rolled,
            "part_bytes": self.bytes,
            "part_timesteps": self.steps,
            "part_seconds": self.span_ns as f64 / 1e9,
            "rolling_error": self.rolling_error,
            "last_cut": self.last_cut.as_ref().map(LastCut::to_json),
        })
    }
}
