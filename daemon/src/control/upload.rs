//! The robot's uploader as the control socket shows it: `status.upload`, the `upload`
//! field of each `episodes` row, and the `wshardd_upload_*` metrics (docs/CONTROL.md).

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use serde_json::{json, Value};

use super::families::{family, single};
use super::state::ControlState;
use super::unix_time::unix_seconds;
use crate::upload::view::UploadView;
use crate::upload::UploaderState;

/// `status.upload`.
#[must_use]
pub fn status_json(st: &ControlState) -> Value {
    let v = st.ctx.upload.snapshot();
    json!({
        "enabled": v.enabled,
        "state": v.state.name(),
        "dataset": v.dataset,
        "robot": v.robot,
        "last_error": v.last_error.as_ref().map(|e| json!({
            "kind": e.kind,
            "message": e.message,
            "at_unix_s": unix_seconds(e.at),
        })),
        "queue": v.counts,
        "pending_bytes": v.pending_bytes,
        "sent_bytes_total": v.counters.sent_bytes,
        "parts_sent_total": v.counters.parts_sent,
        "blobs_uploaded_total": v.counters.blobs_uploaded,
        "blobs_skipped_total": v.counters.blobs_skipped,
        "episodes_published_total": v.counters.episodes_published,
        "episodes_evicted_total": v.counters.episodes_evicted,
        "evicted_bytes_total": v.counters.evicted_bytes,
        "errors_total": v.counters.errors,
        "multipart_restarts_total": v.counters.multipart_restarts,
        "next_retry_unix_s": v.next_retry.map(unix_seconds),
        "current": v.current.as_ref().map(|c| json!({
            "episode": c.episode,
            "file": c.file,
            "size": c.size,
            "parts_done": c.parts_done,
            "parts_total": c.parts_total,
        })),
    })
}

/// The `upload` field of an `episodes` row: `{state, pending_bytes}`; `null` when the
/// uploader is off or the episode is not in its queue (recording, aborted, not yet seen).
#[must_use]
pub fn episode_upload(v: &UploadView, id: &str) -> Value {
    match v.episodes.get(id) {
        Some((state, pending)) if v.enabled => json!({"state": state, "pending_bytes": pending}),
        _ => Value::Null,
    }
}

/// The `wshardd_upload_*` families.
pub(super) fn metrics(st: &ControlState, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let v = st.ctx.upload.snapshot();
    if !v.enabled {
        return Ok(());
    }
    let states = [
        UploaderState::Idle,
        UploaderState::Uploading,
        UploaderState::Offline,
        UploaderState::Error,
    ];
    family(
        enc,
        "wshardd_upload_state",
        "1 for the uploader's current state (idle, uploading, offline, error).",
        states.map(|s| {
            (
                [("state", s.name())],
                ConstGauge::new(u64::from(v.state == s)),
            )
        }),
    )?;
    family(
        enc,
        "wshardd_upload_episodes",
        "Episodes of the upload queue by state.",
        v.counts
            .iter()
            .map(|(s, n)| ([("state", *s)], ConstGauge::new(*n))),
    )?;
    single(
        enc,
        "wshardd_upload_pending_bytes",
        "Bytes of queued episodes not yet on the store.",
        &ConstGauge::new(v.pending_bytes),
    )?;
    let c = v.counters;
    for (name, help, n) in [
        (
            "wshardd_upload_sent_bytes",
            "Payload bytes sent to the store.",
            c.sent_bytes,
        ),
        (
            "wshardd_upload_parts_sent",
            "Multipart parts sent.",
            c.parts_sent,
        ),
        (
            "wshardd_upload_blobs_uploaded",
            "Blobs sent and verified.",
            c.blobs_uploaded,
        ),
        (
            "wshardd_upload_blobs_skipped",
            "Blobs the store already had (verified, not sent).",
            c.blobs_skipped,
        ),
        (
            "wshardd_upload_episodes_published",
            "Episodes appended to the dataset.",
            c.episodes_published,
        ),
        (
            "wshardd_upload_episodes_evicted",
            "Published episodes whose local copy was removed (retention, quota, watermark).",
            c.episodes_evicted,
        ),
        (
            "wshardd_upload_evicted_bytes",
            "Bytes of local copies removed.",
            c.evicted_bytes,
        ),
        ("wshardd_upload_errors", "Failed upload attempts.", c.errors),
    ] {
        single(enc, name, help, &ConstCounter::new(n))?;
    }
    Ok(())
}
