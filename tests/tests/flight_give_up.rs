//! A trigger window whose persistence fails in the real daemon: a source chunk inside the
//! window is unreadable (its file damaged on disk). The window is tried again
//! `flight.persist_retries` times, then given up: `wshard status --json` and `wshard
//! episodes --json` name the window, the stream and the chunk; its pins are released and
//! the ring keeps its bound again; what it copied before the damaged chunk is the window
//! episode, `interrupted`, bit-exact and verified.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wshard::episode_dir::index::EpisodeStatus;
use wshard_e2e::control_cli::{json_ok, text, wshard};
use wshard_e2e::flight::*;
use wshard_e2e::multi::read_index;
use wshard_e2e::{data, Daemon, DaemonOptions};

const RETRIES: u64 = 2;
/// Ring bound: two seconds of `t_ns` (200 steps at 100 Hz).
const RING_SECONDS: f64 = 2.0;
/// Chunks of this many steps.
const CHUNK: u64 = 8;
/// The damaged source chunk (steps 40..=47).
const DAMAGED: u64 = 5;

fn failed_windows(d: &Daemon) -> Value {
    json_ok(d, &["status", "--json"])["flight"]["triggers"]["failed_windows"].clone()
}

#[test]
fn flight_window_given_up_on_an_unreadable_chunk_releases_its_pins_and_keeps_what_it_holds() {
    let mut o = DaemonOptions::default().rotation(CHUNK);
    o.extra_toml =
        format!("[flight]\npersist_retries = {RETRIES}\npersist_retry_backoff_ms = 10\n");
    let mut d = Daemon::start(o);
    let ch = data::channels();
    let mut c = open_flight(&d, "broken", &json!({"ring_seconds": 2}));
    c.timesteps(&ch, 0..150);
    c.flush_until(150);
    // Damage a finalized chunk the window will need: it no longer parses.
    let damaged = d
        .data_dir()
        .join("broken")
        .join(format!("broken_chunk_{DAMAGED:04}.wshard"));
    std::fs::write(&damaged, b"not a chunk any more").expect("damage");
    let r = trigger_ok(
        &d,
        json!({"verb":"trigger","pre_ms":1200,"post_ms":0,"reason":"fault"}),
    );
    let w = r["episode"].as_str().expect("w").to_owned();
    let start = Instant::now();
    while failed_windows(&d).as_array().map_or(true, Vec::is_empty) {
        assert!(
            start.elapsed() < WINDOW_TIMEOUT,
            "never given up: {}",
            d.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The failure, typed: window, stream, the chunk, the attempts, what was kept.
    let f = &failed_windows(&d)[0];
    assert_eq!(f["window"], w.as_str(), "{f}");
    assert_eq!(f["stream"], "broken", "{f}");
    assert_eq!(f["source"], "broken", "{f}");
    assert!(
        f["error"]
            .as_str()
            .is_some_and(|e| e.contains("broken_chunk_0005")),
        "{f}"
    );
    assert_eq!(f["attempts"], RETRIES + 1, "{f}");
    assert_eq!(f["kept"], "interrupted", "{f}");
    let st = json_ok(&d, &["status", "--json"]);
    assert_eq!(st["flight"]["triggers"]["failed"], 1, "{st}");
    assert_eq!(st["flight"]["triggers"]["retries"], RETRIES, "{st}");
    assert_eq!(st["flight"]["triggers"]["pending"], json!([]), "{st}");
    let o = wshard(&d, &["metrics"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let metrics = String::from_utf8(o.stdout).expect("utf-8");
    for line in [
        "wshardd_flight_windows_failed_total 1".to_owned(),
        format!("wshardd_flight_window_retries_total {RETRIES}"),
        "wshardd_flight_windows_pending 0".to_owned(),
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "no {line:?} in\n{metrics}"
        );
    }
    // What it held before the damaged chunk: an `interrupted` window episode.
    let index = read_index(&d.data_dir(), &w).expect("window index");
    assert_eq!(index.status, EpisodeStatus::Interrupted);
    assert_eq!(index.metadata["window_failure"]["window"], w.as_str());
    let t = data::t_ns(149);
    check_exact(
        &window_stream(&d, &w, "broken"),
        &ch,
        first_at(t - 1200 * NS_PER_MS)..=DAMAGED * CHUNK - 1,
    );
    verify(&d.data_dir().join(&w));
    let eps = json_ok(&d, &["episodes", "--json"]);
    let listed = eps["episodes"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["episode"] == w.as_str()).cloned())
        .expect("window listed");
    assert_eq!(listed["status"], "interrupted", "{listed}");
    assert_eq!(listed["window_failure"]["stream"], "broken", "{listed}");
    // Pins released: recording on, the ring is back within its bound (+ one chunk), and
    // the damaged chunk fell out of it.
    c.timesteps(&ch, 150..450);
    c.flush_until(450);
    let ring = &json_ok(&d, &["status", "--json"])["flight"]["streams"][0];
    assert_eq!(ring["pinned_by"], 0, "{ring}");
    let held = ring["held_seconds"].as_f64().expect("held_seconds");
    assert!(held <= RING_SECONDS + 0.1, "{ring}");
    assert!(!damaged.exists(), "the damaged chunk is still in the ring");
    // SIGKILL and restart: the window given up is not built again; its episode stays as
    // it was, its failure named.
    let before =
        std::fs::read(d.data_dir().join(&w).join(format!("{w}_index.json"))).expect("index");
    let _ = d.kill9();
    drop(c);
    d.restart();
    let after = std::fs::read(d.data_dir().join(&w).join(format!("{w}_index.json")))
        .expect("index after restart");
    assert_eq!(before, after);
    let st = json_ok(&d, &["status", "--json"]);
    assert_eq!(st["flight"]["triggers"]["pending"], json!([]), "{st}");
    check_exact(
        &window_stream(&d, &w, "broken"),
        &ch,
        first_at(t - 1200 * NS_PER_MS)..=DAMAGED * CHUNK - 1,
    );
    verify(&d.data_dir().join(&w));
}
