//! The Prometheus text exposition (format 0.0.4) of the daemon's counters and of every open
//! episode's, served by the control socket's `metrics` verb and by the optional TCP
//! endpoint. Names start with `wshardd_`; counters end in `_total`; per-episode series carry
//! an `episode="..."` label.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use super::status::{disk_state, unix_seconds, DiskState};
use super::ControlState;

/// The `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Escape a label value: backslash, double quote and newline.
#[must_use]
pub fn escape_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Escape `# HELP` text: backslash and newline.
#[must_use]
pub fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A metric family being written: HELP and TYPE once, then its samples.
pub struct Exposition {
    text: String,
}

impl Default for Exposition {
    fn default() -> Self {
        Self::new()
    }
}

impl Exposition {
    /// An empty exposition.
    #[must_use]
    pub fn new() -> Self {
        Self {
            text: String::new(),
        }
    }

    /// Start a family: `kind` is `counter` or `gauge`.
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    /// One sample; `labels` are `(name, value)` pairs, values escaped here.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (k, (l, v)) in labels.iter().enumerate() {
                if k > 0 {
                    self.text.push(',');
                }
                let _ = write!(self.text, "{l}=\"{}\"", escape_label(v));
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {}", format_value(value));
    }

    /// A family with one unlabelled sample.
    pub fn single(&mut self, name: &str, kind: &str, help: &str, value: f64) {
        self.family(name, kind, help);
        self.sample(name, &[], value);
    }

    /// The text.
    #[must_use]
    pub fn finish(self) -> String {
        self.text
    }
}

/// A sample value: integers without a fraction, `NaN` / `+Inf` / `-Inf` as Prometheus
/// writes them.
#[must_use]
pub fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

#[allow(clippy::cast_precision_loss)] // exposition values are f64 by definition
fn f(a: &AtomicU64) -> f64 {
    a.load(Ordering::Relaxed) as f64
}

/// The exposition of `st`'s daemon and open episodes.
#[must_use]
#[allow(clippy::cast_precision_loss)] // exposition values are f64 by definition
pub fn render(st: &ControlState) -> String {
    let reg = &st.ctx.registry;
    let c = &reg.counters;
    let mut x = Exposition::new();
    x.family(
        "wshardd_build_info",
        "gauge",
        "Build information; always 1.",
    );
    x.sample(
        "wshardd_build_info",
        &[("version", env!("CARGO_PKG_VERSION"))],
        1.0,
    );
    x.single(
        "wshardd_start_time_seconds",
        "gauge",
        "Unix time the daemon started.",
        unix_seconds(reg.started_at),
    );
    x.single(
        "wshardd_uptime_seconds",
        "gauge",
        "Seconds since the daemon started.",
        reg.started.elapsed().as_secs_f64(),
    );
    for (name, help, a) in [
        (
            "wshardd_connections_accepted_total",
            "Ingest connections accepted.",
            &c.connections_accepted,
        ),
        (
            "wshardd_connections_refused_total",
            "Ingest connections refused (max_connections, max_connections_per_uid or the access allowlist).",
            &c.connections_refused,
        ),
        (
            "wshardd_episodes_opened_total",
            "Episodes opened.",
            &c.episodes_opened,
        ),
        (
            "wshardd_episodes_finalized_total",
            "Episodes finalized, whatever their status.",
            &c.episodes_finalized,
        ),
        (
            "wshardd_episodes_refused_disk_total",
            "OPENs refused below the disk low watermark.",
            &c.episodes_refused_disk,
        ),
        (
            "wshardd_episodes_stopped_total",
            "Episodes finalized by a stop request (operator close or disk high watermark).",
            &c.episodes_stopped,
        ),
    ] {
        x.single(name, "counter", help, f(a));
    }
    x.family(
        "wshardd_connections_cut_total",
        "counter",
        "Ingest connections closed with ERROR TIMEOUT, by deadline: handshake \
         (limits.handshake_timeout_ms), no_episode (limits.no_episode_timeout_ms), write \
         (the client did not read its socket).",
    );
    for (deadline, a) in [
        ("handshake", &c.connections_cut_handshake),
        ("no_episode", &c.connections_cut_no_episode),
        ("write", &c.connections_cut_write),
    ] {
        x.sample(
            "wshardd_connections_cut_total",
            &[("deadline", deadline)],
            f(a),
        );
    }
    x.single(
        "wshardd_connections_active",
        "gauge",
        "Ingest connections open now.",
        st.ctx.active_connections.load(Ordering::Relaxed) as f64,
    );
    let open = reg.episodes();
    x.single(
        "wshardd_episodes_open",
        "gauge",
        "Episodes recording now.",
        open.len() as f64,
    );
    let (free, disk) = disk_state(st);
    if let Some(free) = free {
        x.single(
            "wshardd_disk_free_bytes",
            "gauge",
            "Free bytes of the data directory's filesystem at the last check.",
            free as f64,
        );
    }
    x.single(
        "wshardd_disk_low",
        "gauge",
        "1 while free space is below the low watermark (new episodes refused).",
        if matches!(disk, DiskState::Low | DiskState::High) {
            1.0
        } else {
            0.0
        },
    );
    x.single(
        "wshardd_disk_high",
        "gauge",
        "1 while free space is below the high watermark (open episodes stopped).",
        if disk == DiskState::High { 1.0 } else { 0.0 },
    );
    x.single(
        "wshardd_disk_low_watermark_bytes",
        "gauge",
        "disk.low_watermark_free_bytes.",
        st.ctx.disk.config().low_watermark_free_bytes as f64,
    );
    x.single(
        "wshardd_disk_high_watermark_bytes",
        "gauge",
        "disk.high_watermark_free_bytes.",
        st.ctx.disk.config().high_watermark_free_bytes as f64,
    );
    let (recovered, lost, ts) = reg.recovery.lock().map_or((0, 0, 0), |r| {
        (
            r.len(),
            r.iter().filter(|r| r.lost_data()).count(),
            r.iter().map(|r| r.timesteps_recovered).sum::<u64>(),
        )
    });
    x.single(
        "wshardd_recovery_episodes",
        "gauge",
        "Episodes recovery acted on at startup.",
        recovered as f64,
    );
    x.single(
        "wshardd_recovery_episodes_lost_data",
        "gauge",
        "Episodes where startup recovery discarded or quarantined data.",
        lost as f64,
    );
    x.single(
        "wshardd_recovery_timesteps",
        "gauge",
        "Timesteps recovery replayed from journals at startup (not the recovered episodes' lengths).",
        ts as f64,
    );

    type Get = fn(&ControlState, &crate::registry::LiveEpisode) -> f64;
    let per_episode: [(&str, &str, &str, Get); 11] = [
        (
            "wshardd_episode_received_timesteps_total",
            "counter",
            "Timesteps accepted from the client.",
            |_, e| f(&e.stats.received),
        ),
        (
            "wshardd_episode_durable_timesteps_total",
            "counter",
            "Timesteps covered by a DURABLE ack.",
            |_, e| f(&e.stats.durable),
        ),
        (
            "wshardd_episode_received_bytes_total",
            "counter",
            "Payload bytes received from the client (not the size of the chunk files on disk).",
            |_, e| f(&e.stats.bytes),
        ),
        (
            "wshardd_episode_chunks_total",
            "counter",
            "Chunks finalized.",
            |_, e| f(&e.stats.chunks),
        ),
        (
            "wshardd_episode_dropped_steps_total",
            "counter",
            "Timesteps the shared-memory producer dropped.",
            |_, e| f(&e.stats.dropped_steps),
        ),
        (
            "wshardd_episode_gaps_total",
            "counter",
            "Gaps accepted (dropped ranges).",
            |_, e| f(&e.stats.gaps),
        ),
        (
            "wshardd_episode_queue_depth",
            "gauge",
            "Frames queued between the connection and the writer.",
            |_, e| f(&e.stats.queue_depth),
        ),
        (
            "wshardd_episode_last_fsync_seconds",
            "gauge",
            "Duration of the last journal fsync.",
            |_, e| f(&e.stats.last_fsync_us) / 1e6,
        ),
        (
            "wshardd_episode_timesteps_per_second",
            "gauge",
            "Timesteps received per second over the last few seconds.",
            |st, e| st.rates.rates(e).timesteps_per_s,
        ),
        (
            "wshardd_episode_bytes_per_second",
            "gauge",
            "Payload bytes received per second over the last few seconds.",
            |st, e| st.rates.rates(e).bytes_per_s,
        ),
        (
            "wshardd_episode_open_time_seconds",
            "gauge",
            "Unix time the episode opened.",
            |_, e| unix_seconds(e.opened_at),
        ),
    ];
    for (name, kind, help, get) in per_episode {
        if open.is_empty() {
            break;
        }
        x.family(name, kind, help);
        for e in &open {
            x.sample(
                name,
                &[
                    ("episode", &e.episode_id),
                    ("transport", e.transport().name()),
                ],
                get(st, e),
            );
        }
    }
    x.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_metrics_label_escaping() {
        assert_eq!(escape_label(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(escape_label("x\ny"), "x\\ny");
        assert_eq!(escape_label("ep_01.é"), "ep_01.é");
        assert_eq!(escape_help("a\\b\nc\"d"), "a\\\\b\\nc\"d");
    }

    #[test]
    fn control_metrics_format() {
        let mut x = Exposition::new();
        x.single("wshardd_up", "gauge", "Up.\nline two", 1.0);
        x.family("wshardd_x_total", "counter", "X.");
        x.sample("wshardd_x_total", &[("episode", "a\"b"), ("t", "s")], 3.0);
        x.sample("wshardd_x_total", &[], 0.25);
        assert_eq!(
            x.finish(),
            "# HELP wshardd_up Up.\\nline two\n# TYPE wshardd_up gauge\nwshardd_up 1\n\
             # HELP wshardd_x_total X.\n# TYPE wshardd_x_total counter\n\
             wshardd_x_total{episode=\"a\\\"b\",t=\"s\"} 3\nwshardd_x_total 0.25\n"
        );
        assert_eq!(format_value(f64::NAN), "NaN");
        assert_eq!(format_value(f64::INFINITY), "+Inf");
        assert_eq!(format_value(-2.5), "-2.5");
        assert_eq!(format_value(1e20), "100000000000000000000");
    }
}
