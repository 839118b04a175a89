//! The flight recorder's trigger-to-durable time: cameras in flight mode, a trigger after
//! `pre` seconds of `t_ns` (its `at_ns` the last step sent), `post` more seconds recorded;
//! the time from the moment the post-window's last step was sent to the moment the window
//! episode is in place, `complete`. Pushed as fast as the client goes (disk speed: the
//! whole window arrives within seconds) or at the workload's real rate (`--real-time`: the
//! trigger 30 s into recording, the post-window 10 s of wall time). The window thread
//! copies the chunks wholly inside the window as they are finalized, so what is left after
//! the post-window is the edge chunk and the episode's finalization.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use teleop_workload as tw;
use wshard_client::{Client, ClientOptions, CodecChoice, Durability, FlightMode, Outcome};

use super::daemon::{Daemon, DaemonConfig};
use super::data::CameraWindow;
use super::drive::{open_spec, Pacer, Source};
use crate::error::{fail, io_ctx, Result};

/// The daemon's control socket in its directory (`control.path`'s default, beside the
/// config).
const CONTROL_SOCKET: &str = "wshardd-control.sock";
/// How long the window may take to appear.
const WINDOW_TIMEOUT: Duration = Duration::from_secs(600);
const POLL: Duration = Duration::from_millis(5);

/// One measurement.
#[derive(Clone, Debug)]
pub struct TriggerTiming {
    pub pre_s: f64,
    pub post_s: f64,
    /// Paced at the workload's real rate (else as fast as the client goes).
    pub real_time: bool,
    /// Camera steps recorded.
    pub steps: u64,
    /// From the post-window's last step sent to the window episode complete.
    pub after_post_s: f64,
}

impl TriggerTiming {
    /// `real rate` or `disk speed`.
    pub fn pace(&self) -> &'static str {
        if self.real_time {
            "real rate"
        } else {
            "disk speed"
        }
    }
}

/// The integer after `"key":` in a JSON reply.
fn json_i64(reply: &str, key: &str) -> Option<i64> {
    let k = format!("\"{key}\":");
    let rest = &reply[reply.find(&k)? + k.len()..];
    let end = rest
        .find(|c: char| c != '-' && !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// Trigger through the control socket at `at_ns`: the window episode and its end.
fn trigger(dir: &Path, pre_s: f64, post_s: f64, at_ns: i64) -> Result<(String, i64)> {
    let path = dir.join(CONTROL_SOCKET);
    let mut s = UnixStream::connect(&path).map_err(|e| io_ctx("connect", &path, e))?;
    let req = format!(
        "{{\"verb\":\"trigger\",\"pre_ms\":{},\"post_ms\":{},\"at_ns\":{at_ns},\"reason\":\"wshard-bench\"}}\n",
        (pre_s * 1e3) as i64,
        (post_s * 1e3) as i64
    );
    s.write_all(req.as_bytes())
        .map_err(|e| io_ctx("write", &path, e))?;
    let mut reply = String::new();
    s.read_to_string(&mut reply)
        .map_err(|e| io_ctx("read", &path, e))?;
    // `{"ok":true,...,"result":{"episode":"W",...}}`: the episode id has no quote.
    const KEY: &str = "\"episode\":\"";
    let episode = reply
        .find(KEY)
        .map(|i| &reply[i + KEY.len()..])
        .and_then(|rest| rest.split('"').next())
        .filter(|_| reply.contains("\"ok\":true"))
        .map(str::to_owned);
    match (episode, json_i64(&reply, "window_end_ns")) {
        (Some(e), Some(end)) => Ok((e, end)),
        _ => Err(fail(format!("trigger refused: {reply}"))),
    }
}

/// Where the window episode is in place: its index appears with the rename.
struct WindowWatch {
    index: PathBuf,
    /// When the post-window's last step was sent.
    post_sent: Option<Instant>,
    /// When the window was first seen in place after it.
    done: Option<Instant>,
}

impl WindowWatch {
    fn poll(&mut self) -> bool {
        if self.done.is_none() && self.post_sent.is_some() && self.index.exists() {
            self.done = Some(Instant::now());
        }
        self.done.is_some()
    }
}

/// Record cameras (codec none, durability chunk) in flight mode with a trigger after
/// `pre_s`, `post_s` more, each step at its `t_ns` with `real_time`, and time the window.
///
/// # Errors
/// Daemon, client and I/O errors; a window that does not appear.
pub fn measure(
    wshardd: &Path,
    dir: &Path,
    config: DaemonConfig,
    cw: &CameraWindow,
    (pre_s, post_s): (f64, f64),
    real_time: bool,
) -> Result<TriggerTiming> {
    let period = tw::CAMERAS_PERIOD_NS as f64 / 1e9;
    let n_pre = (pre_s / period).ceil() as u64 + 1;
    // Two chunks past the window's end at most (the writer seals the edge chunk after the
    // first step past it; the rest are not sent once the window is in place).
    let chunk_steps = (config.chunk_bytes / 2 / tw::CAMERAS_RECORD_BYTES as u64).max(1);
    let extra = 2 * chunk_steps + 1;
    let d = Daemon::start(wshardd, dir, config)?;
    let source = Source::Cameras(cw);
    let ring_s = (pre_s + post_s).ceil() as u64 + 30;
    let spec = open_spec(
        "flight-trigger",
        "teleop-workload/cameras",
        &source,
        CameraWindow::channels(CodecChoice::None),
        Durability::Chunk,
    )
    .flight_ring(Some(ring_s), None);
    let options = ClientOptions {
        timeout: Some(Duration::from_secs(300)),
        batch_delay: None,
        ..ClientOptions::default()
    };
    let mut client = Client::connect_with(&d.socket, "wshard-bench/flight", options)?;
    let mut w = client.open_episode(spec)?;
    let pacer = Pacer::new(real_time, &source);
    for i in 0..n_pre {
        pacer.wait(&source, i);
        source.push(&mut w, i, false)?;
    }
    w.flush()?;
    let (episode, end_ns) = trigger(dir, pre_s, post_s, source.t_ns(n_pre - 1))?;
    let mut last_in = n_pre - 1;
    while source.t_ns(last_in + 1) <= end_ns {
        last_in += 1;
    }
    let total = last_in + 1 + extra;
    let mut watch = WindowWatch {
        index: d
            .episode_dir(&episode)
            .join(format!("{episode}_index.json")),
        post_sent: None,
        done: None,
    };
    let mut sent = n_pre;
    for i in n_pre..total {
        if let Some(due) = pacer.due(&source, i) {
            while Instant::now() < due && !watch.poll() {
                std::thread::sleep((due - Instant::now()).min(POLL));
            }
        }
        if watch.poll() {
            break;
        }
        source.push(&mut w, i, false)?;
        sent = i + 1;
        if i == last_in {
            w.flush()?;
            watch.post_sent = Some(Instant::now());
        }
    }
    w.flush()?;
    let flushed = Instant::now();
    while !watch.poll() {
        if flushed.elapsed() > WINDOW_TIMEOUT {
            return Err(fail(format!(
                "window {episode} not in place after {WINDOW_TIMEOUT:?}"
            )));
        }
        std::thread::sleep(POLL);
    }
    let after_post_s = match (watch.post_sent, watch.done) {
        (Some(a), Some(b)) => (b - a).as_secs_f64(),
        _ => f64::NAN,
    };
    w.close(Outcome::Completed)?;
    drop(client);
    d.stop();
    std::fs::remove_dir_all(dir).map_err(|e| io_ctx("remove", dir, e))?;
    Ok(TriggerTiming {
        pre_s,
        post_s,
        real_time,
        steps: sent,
        after_post_s,
    })
}

#[cfg(test)]
mod tests {
    use super::json_i64;

    #[test]
    fn flight_trigger_reply_window_end_is_read() {
        let reply = r#"{"ok":true,"result":{"episode":"flight-1-0","merged":false,"window_start_ns":-5,"window_end_ns":1700000000123}}"#;
        assert_eq!(json_i64(reply, "window_end_ns"), Some(1_700_000_000_123));
        assert_eq!(json_i64(reply, "window_start_ns"), Some(-5));
        assert_eq!(json_i64(reply, "absent"), None);
    }
}
