//! The stream a version 2 connection records ([`StreamOf`]): naming it in messages, and
//! ending it in its episode's index when its session is finalized.

use std::sync::Arc;

use wshard::episode_dir::index::EpisodeStatus;

use super::link::Link;
use crate::multi::{MultiEpisode, StreamEnd};
use crate::session::parts::PartControl;
use crate::session::{FinalStatus, SessionSummary};

/// The stream a connection records, and its episode.
pub(super) struct StreamOf {
    pub(super) episode: Arc<MultiEpisode>,
    pub(super) name: String,
}

impl StreamOf {
    /// `message` prefixed with the stream and the episode it belongs to.
    pub(super) fn name_in(&self, message: &str) -> String {
        format!(
            "stream `{}` of episode `{}`: {message}",
            self.name,
            self.episode.id()
        )
    }

    /// The stream's session was finalized with `status` (`summary`), its timesteps'
    /// first and last `t_ns` being `times`: its index entry is committed, and the episode
    /// finalizes if it was closed and this was its last stream.
    pub(super) fn ended(
        &self,
        status: &FinalStatus,
        summary: &SessionSummary,
        times: (Option<i64>, Option<i64>),
        parts: Option<&PartControl>,
        link: &Link,
    ) {
        // After a split, the index entry is the part recording now: the finished parts'
        // timesteps and chunks are in theirs.
        let (steps, chunks, times) = match parts {
            Some(p) if p.number() > 0 => {
                let (steps, chunks) = p.part_counts(summary.timesteps, summary.chunks);
                (steps, chunks, p.part_t_range())
            }
            _ => (summary.timesteps, summary.chunks, times),
        };
        let status = match status {
            FinalStatus::Complete => EpisodeStatus::Complete,
            FinalStatus::Aborted => EpisodeStatus::Aborted,
            FinalStatus::Interrupted(_) => EpisodeStatus::Interrupted,
        };
        let recorded = steps > 0;
        let progress = self.episode.end_stream(
            &self.name,
            StreamEnd {
                status,
                steps,
                chunks,
                first_t_ns: times.0.filter(|_| recorded),
                last_t_ns: times.1.filter(|_| recorded),
            },
        );
        link.ctx.registry.settle_multi(&self.episode, &progress);
    }
}
