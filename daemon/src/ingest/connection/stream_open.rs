//! Version 2, `STREAM_OPEN`: join an open multi-stream episode with one stream. The stream
//! is listed `recording` in the episode's committed index, then recorded exactly as an
//! episode (a `Session` in its folder `streams/{STREAM}/`); the connection then records it
//! until `CLOSE` (or the end of the connection), which ends the stream in the index.

use wshard_ingest_proto::{AcceptedWhat, ErrorCode, StepValues, StreamOpen};

use super::link::Link;
use super::open::{schema, start, Started};
use super::owner::{refused_for_disk, schema_limits};
use super::recording::Recording;
use super::stream_of::StreamOf;
use crate::episode_files::index_path;
use crate::multi::schema::stream_entry;
use crate::multi::JoinError;
use crate::session::{FinalStatus, Session, SessionSummary};

/// Refuse a join of episode `id` that is not open: `EPISODE_CLOSED` when it exists as a
/// (closed or finalized) multi-stream episode, else `UNKNOWN_EPISODE`.
fn not_open(id: &str, stream: &str, link: &Link) {
    let dir = link.ctx.data_dir.join(id);
    if link.ctx.fs.exists(&index_path(&dir, id)) {
        link.error(
            ErrorCode::EpisodeClosed,
            format!("STREAM_OPEN `{stream}`: episode `{id}` is finalized: no stream may join it"),
        );
    } else {
        link.error(
            ErrorCode::UnknownEpisode,
            format!("STREAM_OPEN `{stream}`: no open multi-stream episode `{id}` (EPISODE_OPEN creates one)"),
        );
    }
}

/// `STREAM_OPEN`: join, answer `ACCEPTED{STREAM_OPEN}`, and return the recording; `None`
/// when refused (the `ERROR` was sent).
pub(super) fn join(request: StreamOpen, link: &Link) -> Option<Recording> {
    let ctx = link.ctx.clone();
    let values = match request
        .validate(&schema_limits(link))
        .and_then(|()| StepValues::new(&request.schema.channels))
    {
        Ok(v) => Box::new(v),
        Err(e) => {
            link.responder.send(&e.to_error_frame());
            return None;
        }
    };
    let id = request.episode_id.clone();
    let name = request.stream().to_owned();
    let Some(ep) = ctx.registry.multi(&id) else {
        not_open(&id, &name, link);
        return None;
    };
    let mut schema = match schema(&ctx, &request.schema) {
        Ok(s) => s.in_episode(id.clone()),
        Err(e) => {
            link.error(ErrorCode::BadSchema, format!("STREAM_OPEN `{name}`: {e}"));
            return None;
        }
    };
    let index = ep.index();
    schema.env_id = index.env_id;
    let flight = match crate::flight::flight_options(
        &schema.metadata,
        Some(&index.metadata),
        ctx.flight.defaults,
    ) {
        Ok(f) => f,
        Err(e) => {
            link.error(ErrorCode::BadSchema, format!("STREAM_OPEN `{name}`: {e}"));
            return None;
        }
    };
    if refused_for_disk(link, &format!("STREAM_OPEN `{name}` of episode `{id}`")) {
        return None;
    }
    let entry = stream_entry(&schema, request.schema.timebase.hz(), &link.client_name);
    let layout = match ep.join(entry, request.schema.clone()) {
        Ok(l) => l,
        Err(e) => {
            let code = match &e {
                JoinError::Closed { .. } => ErrorCode::EpisodeClosed,
                JoinError::Exists { .. } => ErrorCode::StreamExists,
                JoinError::SchemaChanged { .. } => ErrorCode::BadSchema,
                JoinError::Storage(_) => ErrorCode::Storage,
            };
            tracing::warn!(peer = %link.peer, episode = %id, stream = %name, "STREAM_OPEN refused: {e}");
            link.error(code, format!("STREAM_OPEN: {e}"));
            return None;
        }
    };
    // The part of the episode recording now (after a split, `EP.000N`).
    let schema = match layout
        .dir
        .parent()
        .and_then(std::path::Path::parent)
        .and_then(std::path::Path::file_name)
        .and_then(|n| n.to_str())
    {
        Some(part) => schema.in_episode(part),
        None => schema,
    };
    let step_payload = schema.step_payload_bytes;
    let durability = schema.durability;
    let stream = StreamOf {
        episode: ep,
        name: name.clone(),
    };
    let session = match Session::open_at(
        ctx.fs.clone(),
        layout,
        schema,
        crate::flight::options::session_settings(ctx.settings(), flight),
        link.responder.clone(),
    ) {
        Ok(s) => s,
        Err(e) => {
            link.error(
                ErrorCode::Storage,
                stream.name_in(&format!("STREAM_OPEN: {e}")),
            );
            let nothing = SessionSummary {
                timesteps: 0,
                chunks: 0,
                status: String::new(),
                failure: None,
            };
            stream.ended(
                &FinalStatus::Interrupted(e.to_string()),
                &nothing,
                (None, None),
                None,
                link,
            );
            return None;
        }
    };
    if let Some(f) = flight {
        super::open::attach_flight(&ctx, &session, &id, Some(&name), f);
    }
    tracing::info!(peer = %link.peer, episode = %id, stream = %name, durability = durability.as_str(), flight = flight.is_some(), "stream opened");
    let started = Started {
        registry_id: format!("{id}/{name}"),
        multi: Some(id),
        durability,
        step_payload,
    };
    Some(start(link, session, started, values, AcceptedWhat::StreamOpen).of_stream(stream))
}
