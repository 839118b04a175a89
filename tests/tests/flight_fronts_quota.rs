//! `rolling.quota_policy = "refuse_windows"` holds for a producer's trigger too: once what
//! the daemon may not evict exceeds `publish.quota_bytes` (the store is down), the client's
//! `trigger()` is refused with `DISK_LOW` naming both byte counts, an `EVENT` labelled
//! `trigger` is still recorded (its trigger refused and counted), and the stream records on.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wshard_client::{Client, ClientError, Event, FlightTrigger};
use wshard_e2e::{data, Daemon, DaemonOptions, TIMEOUT};
use wshard_ingest_proto::{Durability, ErrorCode, Outcome};

/// Set `publish.quota_bytes` (1 MiB): a few big timesteps exceed it.
const QUOTA_BYTES: u64 = 1 << 20;

fn status(d: &Daemon) -> Value {
    wshard_e2e::upload::status(d)
}

#[test]
fn flight_trigger_frame_refused_while_the_quota_refuses_windows() {
    let mut s3 = wshard_e2e::s3::S3Server::start();
    s3.stop();
    wshard_e2e::upload::set_credentials();
    let d = Daemon::start(DaemonOptions {
        extra_toml: format!(
            "{}\n[rolling]\nquota_policy = \"refuse_windows\"\n",
            wshard_e2e::upload::publish_toml(
                s3.endpoint(),
                &format!("quota_bytes = {QUOTA_BYTES}")
            )
        ),
        ..DaemonOptions::default()
    });
    let ch = wshard_e2e::upload::big_channels();
    let mut client = Client::connect_v2(d.socket(), "e2e/flight-fronts-quota").expect("connect");
    let mut spec = data::open_spec("fqp", &ch, Durability::Ack);
    spec.metadata_json = json!({ "wshard.flight": true }).to_string();
    let mut w = client.open_episode(spec).expect("open a flight episode");
    let deadline = Instant::now() + TIMEOUT;
    while status(&d)["daemon"]["quota"]["exceeded"] != json!(true) {
        data::push_steps(&mut w, &ch, 1)
            .and_then(|_| w.flush())
            .expect("flight recording goes on");
        assert!(Instant::now() < deadline, "the quota was never exceeded");
        std::thread::sleep(Duration::from_millis(50));
    }
    let t = FlightTrigger::new(Duration::from_secs(1), Duration::ZERO, "quota test");
    match w.trigger(&t) {
        Err(ClientError::Server { code, message }) => {
            assert_eq!(code, ErrorCode::DiskLow);
            assert!(message.starts_with("TRIGGER:"), "{message}");
            assert!(message.contains("publish.quota_bytes"), "{message}");
            assert!(message.contains("refuse_windows"), "{message}");
        }
        other => panic!("expected the quota's refusal, got {other:?}"),
    }
    let event = Event::json(data::t_ns(0), "trigger", r#"{"reason":"button"}"#);
    w.send_event(event)
        .expect("the event is recorded all the same");
    let st = wshard_e2e::upload::status(&d);
    assert_eq!(st["flight"]["triggers"]["event_refused"], json!(1), "{st}");
    let windows = std::fs::read_dir(d.data_dir())
        .expect("data dir")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("flight-"))
        .count();
    assert_eq!(windows, 0);
    let acked = data::push_steps(&mut w, &ch, 1)
        .and_then(|_| w.flush())
        .expect("the stream records on");
    assert!(acked > 0);
    w.close(Outcome::Completed).expect("close");
}
