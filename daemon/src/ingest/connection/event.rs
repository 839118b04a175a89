//! Version 2, `EVENT`: a timestamped record beside the timesteps, made durable in its
//! episode's events file before `ACCEPTED{EVENT, seq}`. Its episode is the one the
//! connection records (a stream's multi-stream episode, or a version 1 episode), else the
//! one it owns.

use wshard::episode_dir::events::EventData;
use wshard_ingest_proto::{AcceptedWhat, ErrorCode, Event, EventKind, Frame};

use super::link::Link;
use crate::episode_files::{EventError, EventsLog, NewEvent};
use crate::multi::MultiEpisode;

/// Where an event goes.
pub(super) enum Target<'a> {
    /// A multi-stream episode, sent by `source` (the stream's name, or the owner's client
    /// name).
    Multi {
        episode: &'a MultiEpisode,
        source: String,
    },
    /// The events file of the version 1 episode the connection records.
    Single(&'a mut EventsLog),
}

/// The event's data as the file stores it (`validate` checked text and JSON already).
fn data_of(event: Event) -> Result<EventData, String> {
    match event.kind {
        EventKind::Text => String::from_utf8(event.data)
            .map(EventData::Text)
            .map_err(|e| format!("EVENT: field data of kind text is not valid UTF-8 ({e})")),
        EventKind::Json => serde_json::from_slice(&event.data)
            .map(EventData::Json)
            .map_err(|e| format!("EVENT: field data of kind json is not valid JSON ({e})")),
        EventKind::Binary => Ok(EventData::Binary(event.data)),
    }
}

/// `EVENT` for `target` (`None`: the episode the connection owns, if any).
pub(super) fn on_event(target: Option<Target<'_>>, event: Event, link: &Link) {
    if let Err(e) = event.validate(link.ctx.limits.max_event_bytes) {
        link.responder.send(&e.to_error_frame());
        return;
    }
    let target = match (target, &link.owned) {
        (Some(t), _) => t,
        (None, Some(owned)) => Target::Multi {
            episode: owned,
            source: link.client_name.clone(),
        },
        (None, None) => {
            link.error(
                ErrorCode::NotOpen,
                "EVENT without an episode: record a stream or an episode, or own one (EPISODE_OPEN)",
            );
            return;
        }
    };
    let t_ns = event.t_ns;
    let label = event.label.clone();
    let data = match data_of(event) {
        Ok(d) => d,
        Err(message) => {
            link.error(ErrorCode::MalformedFrame, message);
            return;
        }
    };
    let (recorded, episode) = match target {
        Target::Multi { episode, source } => {
            let new = NewEvent {
                t_ns,
                label,
                source,
                data,
            };
            (episode.record_event(new), episode.id().to_owned())
        }
        Target::Single(log) => {
            let new = NewEvent {
                t_ns,
                label,
                source: link.client_name.clone(),
                data,
            };
            let file = log.path().display().to_string();
            (log.append(new), file)
        }
    };
    match recorded {
        Ok(seq) => link.responder.send(&Frame::Accepted {
            what: AcceptedWhat::Event,
            up_to_seq: seq,
        }),
        Err(e) => {
            if matches!(e, EventError::Storage(_)) {
                tracing::error!(peer = %link.peer, episode = %episode, "event not recorded: {e}");
            }
            link.error(ErrorCode::Storage, format!("EVENT: {e}"));
        }
    }
}
