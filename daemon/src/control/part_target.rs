//! What an episode id names for the verbs that act on an open episode (`close`, `stop`,
//! `abort`, `split`) or mark one (`keep`). A split episode records under its producer's id
//! `EP` in the registry while its parts are `EP`, `EP.0001`, ...: the producer's id and
//! the part recording now both name the open episode (single- or multi-stream; a stream
//! as `EP/STREAM` or `EP.000N/STREAM`), a finished part of it names that part, which no
//! longer records ([`finished_error`]). A trigger window still being built records
//! nothing either ([`window_error`]).

use std::sync::Arc;

use serde_json::json;

use super::protocol::{ControlError, ErrorKind};
use super::state::ControlState;
use crate::multi::MultiEpisode;
use crate::registry::{LiveEpisode, Registry};
use crate::session::parts::part_id;

/// What an id names.
#[derive(Debug)]
pub enum Target {
    /// An open single-stream episode, or a stream of a multi-stream episode.
    Live(Arc<LiveEpisode>),
    /// An open multi-stream episode.
    Multi(Arc<MultiEpisode>),
    /// A finished part of an open split episode.
    FinishedPart(FinishedPart),
    /// A trigger window of the flight recorder still being persisted.
    PendingWindow,
    /// Nothing open by that id (it may be a finished episode on disk).
    NotOpen,
}

/// A finished part of an episode that records on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FinishedPart {
    /// The part named (`EP.0001`, or `EP.0001/STREAM`).
    pub named: String,
    /// The producer's episode id.
    pub episode: String,
    /// The part recording now.
    pub recording: String,
}

/// The open multi-stream episode whose part recording now is `id` (after a split).
fn multi_by_part(reg: &Registry, id: &str) -> Option<Arc<MultiEpisode>> {
    reg.multis()
        .into_iter()
        .find(|m| m.current_part_number() > 0 && m.current_part() == id)
}

/// The open episode `id` is a finished part of: its producer's id and the part recording
/// now.
fn finished_part_of(reg: &Registry, id: &str) -> Option<(String, String)> {
    let (base, digits) = id.rsplit_once('.')?;
    let n: u64 = digits.parse().ok()?;
    if n == 0 || part_id(base, n) != id {
        return None;
    }
    if let Some(m) = reg.multi(base) {
        return (n < m.current_part_number()).then(|| (base.to_owned(), m.current_part()));
    }
    let live = reg.episode(base)?;
    let parts = live.parts.as_ref().filter(|p| p.splittable())?;
    (n < parts.number()).then(|| (base.to_owned(), parts.current()))
}

/// What `id` names now.
#[must_use]
pub fn resolve(st: &ControlState, id: &str) -> Target {
    let reg = &st.ctx.registry;
    if let Some(m) = reg.multi(id).or_else(|| multi_by_part(reg, id)) {
        return Target::Multi(m);
    }
    if let Some(live) = reg.episode_or_part(id) {
        return Target::Live(live);
    }
    // A stream named by its episode's part: `EP.000N/STREAM`.
    if let Some((part, stream)) = id.split_once('/') {
        if let Some(m) = multi_by_part(reg, part) {
            if let Some(live) = reg.episode(&format!("{}/{stream}", m.id())) {
                return Target::Live(live);
            }
        }
        if let Some((episode, recording)) = finished_part_of(reg, part) {
            return Target::FinishedPart(FinishedPart {
                named: id.to_owned(),
                episode,
                recording,
            });
        }
    }
    if let Some((episode, recording)) = finished_part_of(reg, id) {
        return Target::FinishedPart(FinishedPart {
            named: id.to_owned(),
            episode,
            recording,
        });
    }
    if st.ctx.flight.is_pending_window(id) {
        return Target::PendingWindow;
    }
    Target::NotOpen
}

/// `PART_FINISHED` for `verb` on finished part `f`: it names the part, its episode and the
/// part recording now.
#[must_use]
pub fn finished_error(verb: &str, f: &FinishedPart) -> ControlError {
    ControlError::new(
        ErrorKind::PartFinished,
        Some(verb),
        format!(
            "`{}` is a finished part of episode `{}` (finalized complete when it was cut); \
             the episode records on in `{}`: name `{}` or `{}` to {verb} it",
            f.named, f.episode, f.recording, f.episode, f.recording
        ),
    )
    .with("episode", json!(f.named))
    .with("part_of", json!(f.episode))
    .with("recording", json!(f.recording))
}

/// `WINDOW_PENDING` for `verb` on trigger window `episode`, still being persisted.
#[must_use]
pub fn window_error(verb: &str, episode: &str) -> ControlError {
    ControlError::new(
        ErrorKind::WindowPending,
        Some(verb),
        format!(
            "`{episode}` is a trigger window still being persisted from the flight rings: \
             it records nothing and finalizes complete by itself after its post-window"
        ),
    )
    .with("episode", json!(episode))
}
