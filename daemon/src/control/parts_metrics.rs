//! The rolling state in the metrics: `[rolling]` on or off, and per open single-stream
//! episode the part recording now (labels `episode`, the producer's id, and `part`), its
//! payload bytes and `t_ns` span, and the parts cut by `[rolling]` so far.

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use super::families::{family, single};
use super::state::ControlState;
use crate::registry::LiveEpisode;
use crate::session::parts::PartControl;

/// `wshardd_rolling_enabled` and the per-part families (absent while no episode is open).
///
/// # Errors
/// Errors of the encoder.
pub fn encode(
    st: &ControlState,
    open: &[Arc<LiveEpisode>],
    enc: &mut DescriptorEncoder<'_>,
) -> fmt::Result {
    let rolling = st.ctx.settings().rolling;
    single(
        enc,
        "wshardd_rolling_enabled",
        "1 while [rolling] cuts new episodes into parts by size or duration.",
        &ConstGauge::new(u64::from(rolling.is_on())),
    )?;
    let quota = &st.ctx.upload.quota;
    single(
        enc,
        "wshardd_quota_exceeded",
        "1 while the episodes that may not be evicted (open, not yet uploaded, protected) alone exceed publish.quota_bytes.",
        &ConstGauge::new(u64::from(quota.exceeded())),
    )?;
    single(
        enc,
        "wshardd_quota_kept_bytes",
        "Bytes of the data directory after the last eviction pass (with publish.quota_bytes).",
        &ConstGauge::new(quota.kept_bytes()),
    )?;
    single(
        enc,
        "wshardd_quota_rolling_suspended",
        "1 while rolling.quota_policy = stop_rolling holds [rolling] cuts back.",
        &ConstGauge::new(u64::from(quota.rolling_suspended())),
    )?;
    let parts: Vec<(&LiveEpisode, &PartControl)> = open
        .iter()
        .filter_map(|e| {
            e.parts
                .as_deref()
                .filter(|p| p.splittable())
                .map(|p| (&**e, p))
        })
        .collect();
    if parts.is_empty() {
        return Ok(());
    }
    let labels = |p: &PartControl| [("episode", p.base().to_owned()), ("part", p.current())];
    family(
        enc,
        "wshardd_episode_part",
        "Number of the part recording now (0: the episode itself; also the parts finished).",
        parts
            .iter()
            .map(|(_, p)| (labels(p), ConstGauge::new(p.number()))),
    )?;
    family(
        enc,
        "wshardd_episode_part_bytes",
        "Timestep payload bytes in the part recording now.",
        parts.iter().map(|(_, p)| {
            (
                labels(p),
                ConstGauge::new(p.part_bytes.load(Ordering::Relaxed)),
            )
        }),
    )?;
    family(
        enc,
        "wshardd_episode_part_seconds",
        "Time the part recording now spans, by its timesteps' t_ns.",
        parts
            .iter()
            .map(|(_, p)| (labels(p), ConstGauge::new(p.part_span_ns() as f64 / 1e9))),
    )?;
    family(
        enc,
        "wshardd_episode_parts_rolled",
        "Parts cut by [rolling] so far.",
        parts
            .iter()
            .map(|(_, p)| (labels(p), ConstCounter::new(p.rolled()))),
    )
}
