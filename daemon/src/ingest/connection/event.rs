//! Version 2, `EVENT`: a timestamped record beside the timesteps, made durable in its
//! episode's events file before `ACCEPTED{EVENT, seq}`. Its episode is the one the
//! connection records (a stream's multi-stream episode, or a version 1 episode), else the
//! one it owns, else the one it closed (`EPISODE_CLOSE`) while streams still record: the
//! owner's events are taken until the episode is finalized. An event labelled `trigger`
//! also fires the flight recorder's trigger once recorded (`super::trigger`).

use std::sync::Arc;

use wshard::episode_dir::events::EventData;
use wshard_ingest_proto::{
    AcceptedWhat, CheckedEventData, ErrorCode, Event, EventJsonError, Frame, ProtoError,
};

use super::link::{Closing, Link};
use super::trigger::{on_trigger_event, TRIGGER_EVENT_LABEL};
use crate::episode_files::{EventError, EventsLog, NewEvent, NewEventData};
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

/// The checked data as the events log writes it: a json event's value as sent.
fn data_of(data: CheckedEventData) -> NewEventData {
    match data {
        CheckedEventData::Text(text) => EventData::Text(text).into(),
        CheckedEventData::Binary(bytes) => EventData::Binary(bytes).into(),
        CheckedEventData::Json(text) => NewEventData::JsonText(text),
    }
}

/// The `ERROR` for an event the log did not record.
fn refusal(e: &EventError) -> (ErrorCode, String) {
    match e {
        // The episode ended between the owner's request and now: nothing to record into.
        EventError::Finalized { .. } => (ErrorCode::NotOpen, format!("EVENT: {e}")),
        EventError::Encode { source, .. } => {
            let bad = ProtoError::BadEventJson(EventJsonError::Invalid(source.to_string()));
            (bad.error_code(), bad.to_string())
        }
        EventError::Storage(_) | EventError::Failed { .. } => {
            (ErrorCode::Storage, format!("EVENT: {e}"))
        }
    }
}

/// `EVENT` for `target` (`None`: the episode the connection owns, or closed while streams
/// still record, if any).
pub(super) fn on_event(target: Option<Target<'_>>, event: Event, link: &Link) {
    let t_ns = event.t_ns;
    let label = event.label.clone();
    let mut fires: Option<(Option<String>, Option<String>)> = None;
    let data = match event.into_checked_data(link.ctx.limits.max_event_bytes) {
        Ok(d) => {
            if label == TRIGGER_EVENT_LABEL {
                fires = Some(match &d {
                    CheckedEventData::Json(j) => (Some(j.clone()), None),
                    CheckedEventData::Text(t) => (None, Some(t.clone())),
                    CheckedEventData::Binary(_) => (None, None),
                });
            }
            data_of(d)
        }
        Err(e) => {
            link.responder.send(&e.to_error_frame());
            return;
        }
    };
    let closing: Option<Arc<MultiEpisode>> = link.closing.as_ref().and_then(Closing::episode);
    let target = match (target, link.owned.as_deref().or(closing.as_deref())) {
        (Some(t), _) => t,
        (None, Some(owned)) => Target::Multi {
            episode: owned,
            source: link.client_name.clone(),
        },
        (None, None) => {
            let message = match &link.closing {
                Some(c) => format!(
                    "EVENT: {}",
                    EventError::Finalized {
                        episode: c.id.clone()
                    }
                ),
                None => "EVENT without an episode: record a stream or an episode, or own one \
                         (EPISODE_OPEN)"
                    .to_owned(),
            };
            link.error(ErrorCode::NotOpen, message);
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
        Ok(seq) => {
            link.responder.send(&Frame::Accepted {
                what: AcceptedWhat::Event,
                up_to_seq: seq,
            });
            // The event is recorded and answered; its trigger follows, never refusing it.
            if let Some((json, text)) = fires {
                on_trigger_event(t_ns, json.as_deref(), text.as_deref(), link);
            }
        }
        Err(e) => {
            if matches!(e, EventError::Storage(_)) {
                tracing::error!(peer = %link.peer, episode = %episode, "event not recorded: {e}");
            }
            let (code, message) = refusal(&e);
            link.error(code, message);
        }
    }
}
