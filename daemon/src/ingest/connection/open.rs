//! `OPEN`: check the schema and the episode id, refuse while the disk is low, create the
//! episode durably and register it; the connection then records it.

use std::sync::atomic::Ordering;

use serde_json::{Map, Value};
use wshard_ingest_proto::{
    AcceptedWhat, Durability, ErrorCode, Frame, OpenEpisode, StepValues, TimebaseSpec,
};

use super::link::Link;
use super::owner::schema_limits;
use super::recording::Recording;
use crate::episode::{EpisodeSchema, SchemaError};
use crate::ingest::intake::Intake;
use crate::registry::NewEpisode;
use crate::runtime::ServerContext;
use crate::session::{OpenError, Session};
use wshard_storage::layout::validate_episode_id;

/// Open the episode `open` describes and answer `ACCEPTED{OPEN}`; `None` when it was
/// refused (the `ERROR` was sent).
pub(super) fn open(open: OpenEpisode, link: &Link) -> Option<Recording> {
    let ctx = &link.ctx;
    let limits = schema_limits(link);
    let values = match open
        .validate(&limits)
        .and_then(|()| StepValues::new(&open.channels))
    {
        Ok(v) => Box::new(v),
        Err(e) => {
            link.responder.send(&e.to_error_frame());
            return None;
        }
    };
    if let Err(msg) = validate_episode_id(&open.episode_id, ctx.limits.max_episode_id_bytes) {
        link.error(ErrorCode::BadEpisodeId, format!("OPEN episode_id: {msg}"));
        return None;
    }
    let schema = match schema(ctx, &open) {
        Ok(s) => s,
        Err(e) => {
            link.error(ErrorCode::BadSchema, e.to_string());
            return None;
        }
    };
    let flight = match crate::flight::flight_options(&schema.metadata, None, ctx.flight.defaults) {
        Ok(f) => f,
        Err(e) => {
            link.error(
                ErrorCode::BadSchema,
                format!("OPEN `{}`: {e}", open.episode_id),
            );
            return None;
        }
    };
    // One statvfs: the decision uses the free space of now, not of the last tick.
    ctx.disk.check_now();
    if ctx.registry.disk_low.load(Ordering::Acquire) {
        let free = ctx.registry.disk_free_bytes.load(Ordering::Relaxed);
        ctx.registry
            .counters
            .episodes_refused_disk
            .fetch_add(1, Ordering::Relaxed);
        tracing::warn!(peer = %link.peer, episode = %open.episode_id, free, "OPEN refused: disk below the low watermark");
        link.error(
            ErrorCode::DiskLow,
            format!(
                "OPEN `{}`: {free} bytes free on the data directory's filesystem, below \
                 disk.low_watermark_free_bytes; new episodes are refused until space returns",
                open.episode_id
            ),
        );
        return None;
    }
    if let Some(refused) = quota_refusal(ctx, &open.episode_id) {
        link.error(ErrorCode::DiskLow, refused);
        return None;
    }
    let step_payload = schema.step_payload_bytes;
    let id = schema.episode_id.clone();
    let durability = schema.durability;
    match Session::open(
        ctx.fs.clone(),
        &ctx.data_dir,
        schema,
        crate::flight::options::session_settings(ctx.settings(), flight),
        link.responder.clone(),
    ) {
        Ok(session) => {
            if let Some(f) = flight {
                attach_flight(ctx, &session, &id, None, f);
            }
            tracing::info!(peer = %link.peer, episode = %id, durability = durability.as_str(), flight = flight.is_some(), "episode opened");
            let started = Started {
                registry_id: id,
                multi: None,
                durability,
                step_payload,
            };
            Some(start(link, session, started, values, AcceptedWhat::Open))
        }
        Err(OpenError::Exists(id)) => {
            link.error(
                ErrorCode::EpisodeExists,
                format!("OPEN episode_id `{id}`: an episode with this id already exists"),
            );
            None
        }
        Err(e) => {
            link.error(ErrorCode::Storage, format!("OPEN `{id}`: {e}"));
            None
        }
    }
}

/// Record `session` (episode `episode`, or its stream `stream`) in flight mode: its ring is
/// attached before any timestep and listed for triggers.
pub(super) fn attach_flight(
    ctx: &ServerContext,
    session: &Session,
    episode: &str,
    stream: Option<&str>,
    f: crate::flight::FlightOptions,
) {
    let shared = session.shared();
    let ring = std::sync::Arc::new(crate::session::flight_ring::FlightRing::new(
        crate::session::flight_ring::RingIdentity {
            episode_id: episode.to_owned(),
            stream: stream.map(str::to_owned),
            dir: shared.layout().dir.clone(),
            files_id: shared.layout().episode_id.clone(),
            latched: f.latched,
        },
        f.bounds,
    ));
    shared.set_flight(ring.clone());
    ctx.flight.register(ring);
}

/// Under `[rolling]` with `rolling.quota_policy = "stop_rolling"`, while what the daemon
/// may not evict alone exceeds `publish.quota_bytes`: why an OPEN is refused.
fn quota_refusal(ctx: &ServerContext, episode: &str) -> Option<String> {
    let quota = &ctx.upload.quota;
    if !ctx.settings().rolling.is_on() || !quota.rolling_suspended() {
        return None;
    }
    tracing::warn!(episode, "OPEN refused: rolling stopped by the quota");
    Some(format!(
        "OPEN `{episode}`: rolling recording is stopped: {} bytes the daemon may not evict \
         (open, not yet uploaded, protected) exceed publish.quota_bytes ({}); \
         rolling.quota_policy = \"stop_rolling\" refuses new episodes until the quota allows",
        quota.kept_bytes(),
        quota.quota_bytes()
    ))
}

/// What the registry and the intake need of a session that just opened.
pub(super) struct Started {
    /// The id the registry lists: the episode's, or `EP/STREAM` for a stream.
    pub(super) registry_id: String,
    /// For a stream: its multi-stream episode.
    pub(super) multi: Option<String>,
    pub(super) durability: Durability,
    pub(super) step_payload: usize,
}

/// Register a session that has just opened (an episode's or a stream's), answer
/// `ACCEPTED{what}`, and hand back the recording the connection then drives.
pub(super) fn start(
    link: &Link,
    session: Session,
    started: Started,
    values: Box<StepValues>,
    what: AcceptedWhat,
) -> Recording {
    let ctx = &link.ctx;
    let stream_parts = Some(session.shared().parts.clone()).filter(|_| started.multi.is_some());
    let registration = ctx.registry.register(NewEpisode {
        episode_id: started.registry_id,
        multi: started.multi,
        peer: link.peer.clone(),
        client_name: link.client_name.clone(),
        cred: link.cred,
        durability: started.durability,
        stats: session.shared().stats.clone(),
        // A stream of a multi-stream episode is not split: no parts in the registry.
        parts: Some(session.shared().parts.clone()).filter(|p| p.splittable()),
        stream_parts,
    });
    link.responder.send(&Frame::Accepted { what, up_to_seq: 0 });
    Recording::new(Intake::new(
        session,
        registration,
        started.step_payload,
        values,
        ctx.limits.max_episode_wire_bytes,
    ))
}

/// Why an OPEN's schema is refused (`ERROR{BAD_SCHEMA}` with this text).
#[derive(Debug, thiserror::Error)]
pub(super) enum OpenSchemaError {
    #[error("OPEN metadata_json: must be a JSON object")]
    MetadataNotAnObject,
    #[error("OPEN metadata_json: {0}")]
    MetadataJson(#[source] serde_json::Error),
    #[error(transparent)]
    Schema(#[from] SchemaError),
}

/// The episode's schema from `OPEN`, the server's defaults filled in.
pub(super) fn schema(
    ctx: &ServerContext,
    open: &OpenEpisode,
) -> Result<EpisodeSchema, OpenSchemaError> {
    let metadata = if open.metadata_json.trim().is_empty() {
        Map::new()
    } else {
        match serde_json::from_str::<Value>(&open.metadata_json) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err(OpenSchemaError::MetadataNotAnObject),
            Err(e) => return Err(OpenSchemaError::MetadataJson(e)),
        }
    };
    let durability = open.durability.unwrap_or(ctx.default_durability);
    let timebase = match open.timebase {
        TimebaseSpec::Ticks { .. } | TimebaseSpec::TimestampsNs { .. } => open.timebase.to_wshard(),
    };
    let channels = open
        .channels
        .iter()
        .map(|c| {
            (
                c.name.clone(),
                c.lane,
                c.dtype,
                c.shape.iter().map(|&d| u64::from(d)).collect(),
                c.codec.resolve(ctx.default_codec(&c.name)),
                c.modality.clone(),
            )
        })
        .collect();
    Ok(EpisodeSchema::new(
        open.episode_id.clone(),
        open.env_id.clone(),
        timebase,
        durability,
        channels,
        metadata,
    )?)
}
