//! The daemon's metrics, encoded by `prometheus-client` (the official Rust client) from the
//! live state on each scrape: [`Live`] is a prometheus-client `Collector` that reads the
//! registry's atomic counters and every open episode's stats as it encodes, so no counter is
//! kept twice. Served by the control socket's `metrics` verb (Prometheus text 0.0.4) and by
//! the optional HTTP endpoint (0.0.4 or OpenMetrics 1.0, as the scraper asks).
//!
//! Names start with `wshardd_`; counter samples end in `_total` (the crate appends it to the
//! family names below); per-episode series carry `episode` and `transport` labels.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{prometheus_text, text, DescriptorEncoder};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry as Exposition;

use super::families::{family, single};
use super::state::ControlState;
use super::status::{disk_state, DiskState};
use super::unix_time::unix_seconds;
use crate::registry::LiveEpisode;

/// The text formats of the exposition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The Prometheus text format 0.0.4: the control socket's `metrics` verb, and HTTP
    /// scrapers that do not ask for OpenMetrics.
    Prometheus,
    /// OpenMetrics 1.0 text (ends with `# EOF`): HTTP scrapers whose `Accept` prefers it.
    OpenMetrics,
}

impl Format {
    /// The `Content-Type` of the format.
    #[must_use]
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Prometheus => prometheus_text::CONTENT_TYPE,
            Self::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// The exposition of `st`'s daemon and open episodes in `format`.
#[must_use]
pub fn render(st: &Arc<ControlState>, format: Format) -> String {
    let mut exposition = Exposition::default();
    exposition.register_collector(Box::new(Live(st.clone())));
    encode(&exposition, format)
}

/// Encode `exposition` in `format`.
fn encode(exposition: &Exposition, format: Format) -> String {
    let mut out = String::new();
    let written = match format {
        Format::Prometheus => prometheus_text::encode(&mut out, exposition),
        Format::OpenMetrics => text::encode(&mut out, exposition),
    };
    // Writing to a String does not fail, and the collector only fails when writing does.
    if written.is_err() {
        tracing::error!("metrics: encoding the exposition failed");
    }
    out
}

/// The collector reading `ControlState` on each scrape.
#[derive(Debug)]
pub struct Live(pub Arc<ControlState>);

impl Collector for Live {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> fmt::Result {
        daemon(&self.0, &mut enc)?;
        episodes(&self.0, &mut enc)
    }
}

fn counter(a: &AtomicU64) -> ConstCounter<u64> {
    ConstCounter::new(a.load(Ordering::Relaxed))
}

fn level(a: &AtomicU64) -> ConstGauge<u64> {
    ConstGauge::new(a.load(Ordering::Relaxed))
}

#[allow(clippy::cast_precision_loss)] // microseconds: exact far beyond any fsync's length
fn seconds_from_us(a: &AtomicU64) -> f64 {
    a.load(Ordering::Relaxed) as f64 / 1e6
}

fn count(n: usize) -> ConstGauge<u64> {
    ConstGauge::new(u64::try_from(n).unwrap_or(u64::MAX))
}

/// The daemon-wide families.
fn daemon(st: &ControlState, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let reg = &st.ctx.registry;
    let c = &reg.counters;
    family(
        enc,
        "wshardd_build_info",
        "Build information; always 1.",
        [(
            [("version", env!("CARGO_PKG_VERSION"))],
            ConstGauge::new(1_u64),
        )],
    )?;
    single(
        enc,
        "wshardd_start_time_seconds",
        "Unix time the daemon started.",
        &ConstGauge::new(unix_seconds(reg.started_at)),
    )?;
    single(
        enc,
        "wshardd_uptime_seconds",
        "Seconds since the daemon started.",
        &ConstGauge::new(reg.started.elapsed().as_secs_f64()),
    )?;
    // Counter families are named without `_total`: the encoder appends it to the samples.
    for (name, help, a) in [
        (
            "wshardd_connections_accepted",
            "Ingest connections accepted.",
            &c.connections_accepted,
        ),
        (
            "wshardd_connections_refused",
            "Ingest connections refused (max_connections, max_connections_per_uid or the access allowlist).",
            &c.connections_refused,
        ),
        (
            "wshardd_episodes_opened",
            "Episodes opened.",
            &c.episodes_opened,
        ),
        (
            "wshardd_episodes_finalized",
            "Episodes finalized, whatever their status.",
            &c.episodes_finalized,
        ),
        (
            "wshardd_episodes_refused_disk",
            "OPENs refused below the disk low watermark.",
            &c.episodes_refused_disk,
        ),
        (
            "wshardd_episodes_stopped",
            "Episodes finalized by a stop request (an operator's close, stop or abort, or the disk high watermark).",
            &c.episodes_stopped,
        ),
    ] {
        single(enc, name, help, &counter(a))?;
    }
    family(
        enc,
        "wshardd_connections_cut",
        "Ingest connections closed with ERROR TIMEOUT, by deadline: handshake \
         (limits.handshake_timeout_ms), no_episode (limits.no_episode_timeout_ms), write \
         (the client did not read its socket).",
        [
            ("handshake", &c.connections_cut_handshake),
            ("no_episode", &c.connections_cut_no_episode),
            ("write", &c.connections_cut_write),
        ]
        .map(|(deadline, a)| ([("deadline", deadline)], counter(a))),
    )?;
    single(
        enc,
        "wshardd_connections_active",
        "Ingest connections open now.",
        &count(st.ctx.active_connections.load(Ordering::Relaxed)),
    )?;
    single(
        enc,
        "wshardd_episodes_open",
        "Episodes recording now.",
        &count(reg.episodes().len()),
    )?;
    disk(st, enc)?;
    super::upload::metrics(st, enc)?;
    super::flight_metrics::metrics(st, enc)?;
    recovery(st, enc)
}

/// Free space and the watermarks.
fn disk(st: &ControlState, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let (free, state) = disk_state(st);
    if let Some(free) = free {
        single(
            enc,
            "wshardd_disk_free_bytes",
            "Free bytes of the data directory's filesystem at the last check.",
            &ConstGauge::new(free),
        )?;
    }
    let flag = |on: bool| ConstGauge::new(u64::from(on));
    single(
        enc,
        "wshardd_disk_low",
        "1 while free space is below the low watermark (new episodes refused).",
        &flag(matches!(state, DiskState::Low | DiskState::High)),
    )?;
    single(
        enc,
        "wshardd_disk_high",
        "1 while free space is below the high watermark (open episodes stopped).",
        &flag(state == DiskState::High),
    )?;
    let cfg = st.ctx.disk.config();
    single(
        enc,
        "wshardd_disk_low_watermark_bytes",
        "disk.low_watermark_free_bytes.",
        &ConstGauge::new(cfg.low_watermark_free_bytes),
    )?;
    single(
        enc,
        "wshardd_disk_high_watermark_bytes",
        "disk.high_watermark_free_bytes.",
        &ConstGauge::new(cfg.high_watermark_free_bytes),
    )
}

/// What recovery did at startup.
fn recovery(st: &ControlState, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let (recovered, lost, timesteps) = st.ctx.registry.recovery.lock().map_or((0, 0, 0), |r| {
        (
            r.len(),
            r.iter().filter(|r| r.lost_data()).count(),
            r.iter().map(|r| r.timesteps_recovered).sum::<u64>(),
        )
    });
    single(
        enc,
        "wshardd_recovery_episodes",
        "Episodes recovery acted on at startup.",
        &count(recovered),
    )?;
    single(
        enc,
        "wshardd_recovery_episodes_lost_data",
        "Episodes where startup recovery discarded or quarantined data.",
        &count(lost),
    )?;
    single(
        enc,
        "wshardd_recovery_timesteps",
        "Timesteps recovery replayed from journals at startup (not the recovered episodes' lengths).",
        &ConstGauge::new(timesteps),
    )
}

/// How a per-episode family reads its value.
#[derive(Clone, Copy)]
enum Read {
    /// A counter of the episode's stats.
    Counter(fn(&LiveEpisode) -> &AtomicU64),
    /// A whole-number gauge of the episode's stats.
    Level(fn(&LiveEpisode) -> &AtomicU64),
    /// A measured gauge.
    Gauge(fn(&ControlState, &LiveEpisode) -> f64),
}

/// The per-episode families: name (counters without `_total`), help, value.
const PER_EPISODE: [(&str, &str, Read); 11] = [
    (
        "wshardd_episode_received_timesteps",
        "Timesteps accepted from the client.",
        Read::Counter(|e| &e.stats.received),
    ),
    (
        "wshardd_episode_durable_timesteps",
        "Timesteps covered by a DURABLE ack.",
        Read::Counter(|e| &e.stats.durable),
    ),
    (
        "wshardd_episode_received_bytes",
        "Payload bytes received from the client (not the size of the chunk files on disk).",
        Read::Counter(|e| &e.stats.bytes),
    ),
    (
        "wshardd_episode_chunks",
        "Chunks finalized.",
        Read::Counter(|e| &e.stats.chunks),
    ),
    (
        "wshardd_episode_dropped_steps",
        "Timesteps the shared-memory producer dropped.",
        Read::Counter(|e| &e.stats.dropped_steps),
    ),
    (
        "wshardd_episode_gaps",
        "Gaps accepted (dropped ranges).",
        Read::Counter(|e| &e.stats.gaps),
    ),
    (
        "wshardd_episode_queue_depth",
        "Frames queued between the connection and the writer.",
        Read::Level(|e| &e.stats.queue_depth),
    ),
    (
        "wshardd_episode_last_fsync_seconds",
        "Duration of the last journal fsync.",
        Read::Gauge(|_, e| seconds_from_us(&e.stats.last_fsync_us)),
    ),
    (
        "wshardd_episode_timesteps_per_second",
        "Timesteps received per second over the last few seconds.",
        Read::Gauge(|st, e| st.rates.rates(e).timesteps_per_s),
    ),
    (
        "wshardd_episode_bytes_per_second",
        "Payload bytes received per second over the last few seconds.",
        Read::Gauge(|st, e| st.rates.rates(e).bytes_per_s),
    ),
    (
        "wshardd_episode_open_time_seconds",
        "Unix time the episode opened.",
        Read::Gauge(|_, e| unix_seconds(e.opened_at)),
    ),
];

/// The per-episode families, absent while no episode is open.
fn episodes(st: &ControlState, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let open = st.ctx.registry.episodes();
    super::parts_metrics::encode(st, &open, enc)?;
    if open.is_empty() {
        return Ok(());
    }
    let labels = |e: &LiveEpisode| {
        [
            ("episode", e.episode_id.clone()),
            ("transport", e.transport().name().to_owned()),
        ]
    };
    for (name, help, read) in PER_EPISODE {
        let each = open.iter();
        match read {
            Read::Counter(get) => {
                family(enc, name, help, each.map(|e| (labels(e), counter(get(e)))))
            }
            Read::Level(get) => family(enc, name, help, each.map(|e| (labels(e), level(get(e))))),
            Read::Gauge(get) => family(
                enc,
                name,
                help,
                each.map(|e| (labels(e), ConstGauge::new(get(st, e)))),
            ),
        }?;
    }
    producer_counters(&open, enc)
}

/// The producers' `COUNTERS` (protocol version 2): one gauge per open stream (or
/// single-stream episode, `stream=""`) and counter name, absent while none was sent.
fn producer_counters(open: &[Arc<LiveEpisode>], enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let mut samples = Vec::new();
    for e in open {
        let (episode, stream) = e.episode_and_stream();
        for (name, value) in e.producer_counters() {
            let labels = [
                ("episode", episode.to_owned()),
                ("stream", stream.to_owned()),
                ("counter", name),
            ];
            samples.push((labels, ConstGauge::new(value)));
        }
    }
    if samples.is_empty() {
        return Ok(());
    }
    family(
        enc,
        PRODUCER_COUNTER,
        "A producer's own counter, as its latest COUNTERS frame said (not durable; gone \
         with the stream).",
        samples,
    )
}

/// The family of the producers' counters.
const PRODUCER_COUNTER: &str = "wshardd_producer_counter";

#[cfg(test)]
mod tests {
    use super::*;

    /// A collector of fixed values, to show the encoder's form.
    #[derive(Debug)]
    struct Fixed;

    impl Collector for Fixed {
        fn encode(&self, mut enc: DescriptorEncoder<'_>) -> fmt::Result {
            single(&mut enc, "wshardd_up", "Up.", &ConstGauge::new(1_u64))?;
            single(
                &mut enc,
                "wshardd_half",
                "Half.",
                &ConstGauge::new(0.25_f64),
            )?;
            family(
                &mut enc,
                "wshardd_x",
                "X.",
                [
                    (
                        [("episode", "a\"b\\c\nd"), ("t", "s")],
                        ConstCounter::new(3_u64),
                    ),
                    (
                        [("episode", "ep_01.é"), ("t", "s")],
                        ConstCounter::new(0_u64),
                    ),
                ],
            )
        }
    }

    fn fixed(format: Format) -> String {
        let mut x = Exposition::default();
        x.register_collector(Box::new(Fixed));
        encode(&x, format)
    }

    #[test]
    fn control_metrics_prometheus_text_form() {
        assert_eq!(
            fixed(Format::Prometheus),
            "# HELP wshardd_up Up.\n# TYPE wshardd_up gauge\nwshardd_up 1\n\
             # HELP wshardd_half Half.\n# TYPE wshardd_half gauge\nwshardd_half 0.25\n\
             # HELP wshardd_x_total X.\n# TYPE wshardd_x_total counter\n\
             wshardd_x_total{episode=\"a\\\"b\\\\c\\nd\",t=\"s\"} 3\n\
             wshardd_x_total{episode=\"ep_01.é\",t=\"s\"} 0\n"
        );
    }

    #[test]
    fn control_metrics_openmetrics_form() {
        assert_eq!(
            fixed(Format::OpenMetrics),
            "# HELP wshardd_up Up.\n# TYPE wshardd_up gauge\nwshardd_up 1\n\
             # HELP wshardd_half Half.\n# TYPE wshardd_half gauge\nwshardd_half 0.25\n\
             # HELP wshardd_x X.\n# TYPE wshardd_x counter\n\
             wshardd_x_total{episode=\"a\\\"b\\\\c\\nd\",t=\"s\"} 3\n\
             wshardd_x_total{episode=\"ep_01.é\",t=\"s\"} 0\n# EOF\n"
        );
    }

    #[test]
    fn control_metrics_family_names() {
        // Counter families are named without `_total` (the encoder adds it); every help
        // text is one plain line, as both formats need.
        for (name, help, _) in PER_EPISODE {
            assert!(name.starts_with("wshardd_episode_"), "{name}");
            assert!(!name.ends_with("_total"), "{name}");
            assert!(!help.contains(['\n', '\\', '"']), "{name}: {help}");
        }
    }
}
