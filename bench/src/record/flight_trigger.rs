//! The flight recorder's trigger-to-durable time: cameras in flight mode, a trigger after
//! `pre` seconds of `t_ns`, `post` more seconds recorded; the time from the moment the
//! whole post-window is DURABLE to the moment the window episode is in place, `complete`.
//! The pre-window is copied while the post-window records, so what is left after it is the
//! edge chunk and the episode's finalization.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use teleop_workload as tw;
use wshard_client::{Client, ClientOptions, CodecChoice, Durability, FlightMode, Outcome};

use super::daemon::{Daemon, DaemonConfig};
use super::data::CameraWindow;
use super::drive::{open_spec, Source};
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
    /// Camera steps recorded.
    pub steps: u64,
    /// From the post-window DURABLE to the window episode complete.
    pub after_post_s: f64,
}

fn trigger(dir: &Path, pre_s: f64, post_s: f64) -> Result<String> {
    let path = dir.join(CONTROL_SOCKET);
    let mut s = UnixStream::connect(&path).map_err(|e| io_ctx("connect", &path, e))?;
    let req = format!(
        "{{\"verb\":\"trigger\",\"pre_ms\":{},\"post_ms\":{},\"reason\":\"wshard-bench\"}}\n",
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
    reply
        .find(KEY)
        .map(|i| &reply[i + KEY.len()..])
        .and_then(|rest| rest.split('"').next())
        .filter(|_| reply.contains("\"ok\":true"))
        .map(str::to_owned)
        .ok_or_else(|| fail(format!("trigger refused: {reply}")))
}

/// Record cameras (codec none, durability chunk) in flight mode with a trigger after
/// `pre_s`, `post_s` more, and time the window.
///
/// # Errors
/// Daemon, client and I/O errors; a window that does not appear.
pub fn measure(
    wshardd: &Path,
    dir: &Path,
    config: DaemonConfig,
    cw: &CameraWindow,
    pre_s: f64,
    post_s: f64,
) -> Result<TriggerTiming> {
    let period = tw::CAMERAS_PERIOD_NS as f64 / 1e9;
    let n_pre = (pre_s / period).ceil() as u64 + 1;
    let n_post = (post_s / period).ceil() as u64;
    // Two chunks past the window's end, so that a finalized chunk reaches past it.
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
    for i in 0..n_pre {
        source.push(&mut w, i, false)?;
    }
    w.flush()?;
    let episode = trigger(dir, pre_s, post_s)?;
    let total = n_pre + n_post + extra;
    for i in n_pre..total {
        source.push(&mut w, i, false)?;
    }
    w.flush()?;
    let post_done = Instant::now();
    let index = d
        .episode_dir(&episode)
        .join(format!("{episode}_index.json"));
    loop {
        // The window is renamed into place only once complete.
        if index.exists() {
            break;
        }
        if post_done.elapsed() > WINDOW_TIMEOUT {
            return Err(fail(format!(
                "window {episode} not in place after {WINDOW_TIMEOUT:?}"
            )));
        }
        std::thread::sleep(POLL);
    }
    let after_post_s = post_done.elapsed().as_secs_f64();
    w.close(Outcome::Completed)?;
    drop(client);
    d.stop();
    std::fs::remove_dir_all(dir).map_err(|e| io_ctx("remove", dir, e))?;
    Ok(TriggerTiming {
        pre_s,
        post_s,
        steps: total,
        after_post_s,
    })
}
