//! The rolling state in the metrics: `[rolling]` on or off, and per open episode, single-
//! or multi-stream, the part recording now (labels `episode`, the producer's id, and `part`), its
//! payload bytes and `t_ns` span, and the parts cut by `[rolling]` so far.

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use super::families::{family, single};
use super::multi_parts::MultiParts;
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
    let mut rows: Vec<PartRow> = open
        .iter()
        .filter_map(|e| e.parts.as_deref().filter(|p| p.splittable()))
        .map(PartRow::single)
        .collect();
    rows.extend(
        st.ctx
            .registry
            .multis()
            .iter()
            .map(|m| PartRow::multi(&MultiParts::of(&st.ctx.registry, m))),
    );
    if rows.is_empty() {
        return Ok(());
    }
    family(
        enc,
        "wshardd_episode_part",
        "Number of the part recording now (0: the episode itself; also the parts finished).",
        rows.iter().map(|r| (r.labels(), ConstGauge::new(r.number))),
    )?;
    family(
        enc,
        "wshardd_episode_part_bytes",
        "Timestep payload bytes in the part recording now (a multi-stream episode: over its streams).",
        rows.iter().map(|r| (r.labels(), ConstGauge::new(r.bytes))),
    )?;
    family(
        enc,
        "wshardd_episode_part_seconds",
        "Time the part recording now spans, by its timesteps' t_ns (a multi-stream episode: its longest stream).",
        rows.iter()
            .map(|r| (r.labels(), ConstGauge::new(r.span_ns as f64 / 1e9))),
    )?;
    family(
        enc,
        "wshardd_episode_parts_rolled",
        "Parts cut by [rolling] so far.",
        rows.iter()
            .map(|r| (r.labels(), ConstCounter::new(r.rolled))),
    )
}

/// One split (or rolling) episode's series: single- or multi-stream.
struct PartRow {
    episode: String,
    part: String,
    number: u64,
    bytes: u64,
    span_ns: u64,
    rolled: u64,
}

impl PartRow {
    fn single(p: &PartControl) -> Self {
        Self {
            episode: p.base().to_owned(),
            part: p.current(),
            number: p.number(),
            bytes: p.part_bytes.load(Ordering::Relaxed),
            span_ns: p.part_span_ns(),
            rolled: p.rolled(),
        }
    }

    fn multi(m: &MultiParts) -> Self {
        Self {
            episode: m.episode.clone(),
            part: m.part.clone(),
            number: m.number,
            bytes: m.bytes,
            span_ns: m.span_ns,
            rolled: m.rolled,
        }
    }

    /// `episode` (the producer's id) and `part` (the part recording now).
    fn labels(&self) -> [(&'static str, String); 2] {
        [
            ("episode", self.episode.clone()),
            ("part", self.part.clone()),
        ]
    }
}
