//! The window's last chunk goes to disk as soon as a flight stream records past the
//! window's end: with the default rotation (a chunk every 60 s or 100000 timesteps) the
//! window episode is in place within seconds of its post-window, while its producer goes
//! on recording (nothing closes, nothing else rotates).

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wshard::episode_dir::index::EpisodeStatus;
use wshard_e2e::{bins, data, Daemon, DaemonOptions};
use wshard_ingest_proto::{Durability, Outcome};

/// Far below the default rotation age (60 s): only the window's seal can explain a
/// window in place this soon.
const WINDOW_IN_PLACE: Duration = Duration::from_secs(15);

#[test]
fn flight_window_in_place_right_after_its_post_window_without_a_rotation() {
    let d = Daemon::start(DaemonOptions::default());
    let ch = data::channels();
    let mut client = d.client("e2e/flight-latency");
    let mut spec = data::open_spec("fl-src", &ch, Durability::Ack);
    spec.metadata_json = json!({ "wshard.flight": true }).to_string();
    let mut w = client.open_episode(spec).expect("open a flight episode");
    // 100 Hz of t_ns: 1 s recorded, then a trigger 0.5 s back and 0.2 s ahead.
    data::push_steps(&mut w, &ch, 100).expect("record");
    w.flush().expect("flush");
    let o = Command::new(bins::wshard())
        .args([
            "trigger",
            "--pre",
            "500ms",
            "--post",
            "200ms",
            "--json",
            "--control",
        ])
        .arg(d.root().join("wshardd-control.sock"))
        .output()
        .expect("run wshard trigger");
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let reply: Value = serde_json::from_slice(&o.stdout).expect("--json reply");
    let window = reply["result"]["episode"]
        .as_str()
        .expect("the reply names the window")
        .to_owned();
    // The post-window and a step past it.
    data::push_steps(&mut w, &ch, 30).expect("record the post-window");
    w.flush().expect("flush");
    let start = Instant::now();
    let index = loop {
        if let Ok(index) = wshard_e2e::multi::read_index(&d.data_dir(), &window) {
            if index.status == EpisodeStatus::Complete {
                break index;
            }
        }
        assert!(
            start.elapsed() < WINDOW_IN_PLACE,
            "window {window} not in place {WINDOW_IN_PLACE:?} after its post-window"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // 0.5 s before and 0.2 s after the trigger at 100 Hz: 71 timesteps (edges included,
    // give or take the jitter of the test clock at the edges).
    let steps: u64 = index.streams.iter().map(|s| s.steps).sum();
    assert!(
        (69..=72).contains(&steps),
        "{steps} timesteps in the window"
    );
    // The producer never noticed: it records on and closes as usual.
    data::push_steps(&mut w, &ch, 10).expect("record on");
    assert_eq!(w.close(Outcome::Completed).expect("close").timesteps, 140);
}
