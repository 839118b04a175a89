//! The flight recorder against the real daemon over real sockets: streams opened in flight
//! mode keep a bounded ring of chunks, and the control verb `trigger` persists a window of
//! them as a new multi-stream episode, bit-exact against what was sent, edges to the step.
//! (Crashes: `flight_sigkill.rs`; power cuts: `daemon/tests/flight_crash.rs`.)

use std::process::Command;

use serde_json::{json, Value};
use wshard_e2e::flight::*;
use wshard_e2e::multi::{episode_close, producer, stream_spec};
use wshard_e2e::raw::RawConn;
use wshard_e2e::{bins, data, Daemon, DaemonOptions, TIMEOUT};
use wshard_ingest_proto::{Durability, Frame, Outcome};

#[test]
fn flight_window_is_bit_exact_to_the_step_and_the_ring_stays_bounded() {
    let d = daemon();
    let ch = data::channels();
    let mut c = open_flight(&d, "cam", &json!({"ring_seconds": 1}));
    c.timesteps(&ch, 0..200);
    c.flush_until(200);
    let r = trigger_ok(
        &d,
        json!({"verb":"trigger","pre_ms":300,"post_ms":200,"reason":"gripper slipped"}),
    );
    assert_eq!(r["merged"], json!(false));
    let w = r["episode"].as_str().expect("episode").to_owned();
    let t = data::t_ns(199);
    assert_eq!(r["window_start_ns"], json!(t - 300 * NS_PER_MS));
    assert_eq!(r["window_end_ns"], json!(t + 200 * NS_PER_MS));
    // The post-window, and more.
    c.timesteps(&ch, 200..400);
    c.flush_until(400);
    let index = wait_window(&d, &w);
    assert_eq!(index.metadata["origin"], json!("flight_window"));
    assert_eq!(index.streams.len(), 1);
    let ep = window_stream(&d, &w, "cam");
    check_exact(
        &ep,
        &ch,
        first_at(t - 300 * NS_PER_MS)..=last_at(t + 200 * NS_PER_MS),
    );
    let events = wshard_e2e::multi::read_events(&d.data_dir(), &w).expect("events");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].label, "trigger");
    c.close(Outcome::Completed, 400);
    // The ring: about one second of t_ns, within one chunk (8 steps = 80 ms).
    let src = d.data_dir().join("cam");
    let m = manifest_of(&src, "cam");
    let (first_chunk, first_step) = m.ring_start();
    assert!(first_chunk > 0, "nothing evicted: {m:?}");
    let span = data::t_ns(399) - data::t_ns(first_step);
    assert!(
        (1000 * NS_PER_MS..1000 * NS_PER_MS + 80 * NS_PER_MS + NS_PER_MS).contains(&span),
        "ring span {span} ns"
    );
    // Only the listed chunks are left on disk.
    let files = std::fs::read_dir(&src)
        .expect("dir")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().contains("_chunk_"))
        })
        .count();
    assert_eq!(files, m.chunks.len());
    verify(&src);
    verify(&d.data_dir().join(&w));
}

#[test]
fn flight_ring_bytes_bound_holds_within_one_chunk() {
    let d = daemon();
    let ch = data::channels();
    let mut c = open_flight(&d, "bytes", &json!({"ring_bytes": 20_000}));
    c.timesteps(&ch, 0..400);
    c.flush_until(400);
    c.close(Outcome::Completed, 400);
    let src = d.data_dir().join("bytes");
    let m = manifest_of(&src, "bytes");
    let sizes: Vec<u64> = m
        .chunks
        .iter()
        .map(|k| std::fs::metadata(src.join(&k.uri)).expect("chunk").len())
        .collect();
    let total: u64 = sizes.iter().sum();
    let first = sizes.first().copied().unwrap_or(0);
    assert!(m.ring_start().0 > 0, "nothing evicted");
    assert!(total >= 20_000 && total - first < 20_000, "{sizes:?}");
    verify(&src);
}

#[test]
fn flight_merged_triggers_latched_stream_and_two_rates() {
    let d = daemon();
    let mut o = owner_flight(&d, "robot");
    let fast_ch = data::channels();
    let slow_ch = data::small_channels();
    let mut fast = producer(
        &d.socket(),
        &stream_spec("robot", "joints", &fast_ch, 100.0, Durability::Ack),
    );
    let mut slow = producer(
        &d.socket(),
        &stream_spec("robot", "imu", &slow_ch, 100.0, Durability::Chunk),
    );
    let calib_spec = stream_spec("robot", "calib", &slow_ch, 1.0, Durability::Ack)
        .with_metadata_json(json!({"wshard.latched": true}).to_string());
    let mut calib = producer(&d.socket(), &calib_spec);
    calib.timesteps(&slow_ch, 0..1);
    calib.flush_until(1);
    // joints every step, imu every other seq of the same clock (sent as its own seqs).
    fast.timesteps(&fast_ch, 0..300);
    fast.flush_until(300);
    slow.timesteps(&slow_ch, 0..300);
    slow.flush_until(300);
    let a = trigger_ok(
        &d,
        json!({"verb":"trigger","pre_ms":200,"post_ms":500,"reason":"first"}),
    );
    let b = trigger_ok(
        &d,
        json!({"verb":"trigger","pre_ms":200,"post_ms":800,"reason":"second","at_ns": data::t_ns(299)}),
    );
    assert_eq!(b["merged"], json!(true), "{b}");
    assert_eq!(a["episode"], b["episode"]);
    let w = a["episode"].as_str().expect("w").to_owned();
    fast.timesteps(&fast_ch, 300..500);
    fast.flush_until(500);
    slow.timesteps(&slow_ch, 300..500);
    slow.flush_until(500);
    let index = wait_window(&d, &w);
    let names: Vec<&str> = index.streams.iter().map(|s| s.name.as_str()).collect();
    assert!(
        names.contains(&"joints") && names.contains(&"imu") && names.contains(&"calib"),
        "{names:?}"
    );
    let t = data::t_ns(299);
    let range = first_at(t - 200 * NS_PER_MS)..=last_at(t + 800 * NS_PER_MS);
    check_exact(&window_stream(&d, &w, "joints"), &fast_ch, range.clone());
    check_exact(&window_stream(&d, &w, "imu"), &slow_ch, range);
    // The latched value, though older than the window.
    check_exact(&window_stream(&d, &w, "calib"), &slow_ch, 0..=0);
    let events = wshard_e2e::multi::read_events(&d.data_dir(), &w).expect("events");
    assert_eq!(events.len(), 2);
    // A chunk wholly inside the window holds the ring chunk's data blocks byte for byte
    // (copied as stored; compressing them again would give the same bytes, so this checks
    // the result, not which path made it).
    let win_dir = d.data_dir().join(&w).join("streams").join("joints");
    let src_dir = d.data_dir().join("robot").join("streams").join("joints");
    let inner = chunk_data_blocks(&win_dir.join("joints_chunk_0001.wshard"));
    let first_t = inner.1;
    let source = std::fs::read_dir(&src_dir)
        .expect("source dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "wshard") && p.to_string_lossy().contains("_chunk_")
        })
        .map(|p| chunk_data_blocks(&p))
        .find(|c| c.1 == first_t)
        .expect("the source chunk of window chunk 1");
    assert!(!inner.0.is_empty());
    assert_eq!(
        inner.0, source.0,
        "window chunk 1's data blocks differ from the ring's"
    );
    fast.close(Outcome::Completed, 500);
    slow.close(Outcome::Completed, 500);
    calib.close(Outcome::Completed, 1);
    episode_close(&mut o);
    verify(&d.data_dir().join(&w));
    verify(&d.data_dir().join("robot"));
}

#[test]
fn flight_trigger_before_the_ring_is_full_persists_what_there_is() {
    let d = daemon();
    let ch = data::channels();
    let mut c = open_flight(&d, "young", &json!(true));
    c.timesteps(&ch, 0..20);
    c.flush_until(20);
    let r = trigger_ok(&d, json!({"verb":"trigger","pre_ms":30000,"post_ms":100}));
    let w = r["episode"].as_str().expect("w").to_owned();
    c.timesteps(&ch, 20..60);
    c.flush_until(60);
    wait_window(&d, &w);
    check_exact(
        &window_stream(&d, &w, "young"),
        &ch,
        0..=last_at(data::t_ns(19) + 100 * NS_PER_MS),
    );
    c.close(Outcome::Completed, 60);
}

#[test]
fn flight_bad_triggers_get_typed_errors_and_lose_nothing() {
    let d = daemon();
    let code = |v: Value| control(&d, &v)["error"]["code"].clone();
    assert_eq!(code(json!({"verb":"trigger"})), json!("NO_FLIGHT_STREAM"));
    let ch = data::channels();
    let mut c = open_flight(&d, "fl", &json!(true));
    assert_eq!(code(json!({"verb":"trigger"})), json!("NOTHING_RECORDED"));
    c.timesteps(&ch, 0..10);
    c.flush_until(10);
    assert_eq!(
        code(json!({"verb":"trigger","pre_ms":-1})),
        json!("BAD_REQUEST")
    );
    assert_eq!(
        code(json!({"verb":"trigger","post_ms":4_000_000})),
        json!("BAD_REQUEST")
    );
    assert_eq!(
        code(json!({"verb":"trigger","pre_ms":i64::MAX})),
        json!("BAD_REQUEST")
    );
    assert_eq!(
        code(json!({"verb":"trigger","streams":["nope"]})),
        json!("UNKNOWN_STREAM")
    );
    assert_eq!(
        code(json!({"verb":"trigger","streams":"fl"})),
        json!("BAD_REQUEST")
    );
    // A bad flight option at open: typed, naming the key.
    let mut bad = RawConn::hello(&d.socket());
    let mut spec = data::open_spec("badfl", &ch, Durability::Ack);
    spec.metadata_json = json!({"wshard.flight": {"ring_bytes": 0}}).to_string();
    bad.send(&Frame::Open(spec));
    let reply = format!("{:?}", bad.recv(TIMEOUT));
    assert!(reply.contains("wshard.flight.ring_bytes"), "{reply}");
    // Recording went on.
    c.timesteps(&ch, 10..20);
    c.flush_until(20);
    c.close(Outcome::Completed, 20);
    assert!(!d
        .data_dir()
        .join(".flight")
        .join("pending")
        .read_dir()
        .is_ok_and(|mut r| r.next().is_some()));
}

#[test]
fn flight_cli_trigger_and_status_show_the_rings_and_windows() {
    let d = daemon();
    let o = wshard_cli(&d, &["trigger"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        wshard_e2e::check::output_text(&o)
    );
    assert!(wshard_e2e::check::output_text(&o).contains("NO_FLIGHT_STREAM"));
    let ch = data::channels();
    let mut c = open_flight(&d, "clicam", &json!({"ring_seconds": 1}));
    c.timesteps(&ch, 0..120);
    c.flush_until(120);
    let eps = trigger_ok(&d, json!({"verb":"episodes"}));
    let open = eps["episodes"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["episode"] == json!("clicam")))
        .cloned()
        .unwrap_or_default();
    assert!(
        open["flight"]["held_chunks"]
            .as_u64()
            .is_some_and(|n| n > 0),
        "{open}"
    );
    let status = trigger_ok(&d, json!({"verb":"status"}));
    let s = &status["flight"]["streams"][0];
    assert_eq!(s["stream"], json!("clicam"));
    assert_eq!(s["latest_t_ns"], json!(data::t_ns(119)));
    assert!(s["held_chunks"].as_u64().is_some_and(|n| n > 0), "{s}");
    let o = wshard_cli(
        &d,
        &[
            "trigger",
            "--pre",
            "200ms",
            "--post",
            "100ms",
            "--reason",
            "button",
            "--streams",
            "clicam",
            "--json",
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        wshard_e2e::check::output_text(&o)
    );
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    let w = v["result"]["episode"].as_str().expect("episode").to_owned();
    c.timesteps(&ch, 120..200);
    c.flush_until(200);
    wait_window(&d, &w);
    let t = data::t_ns(119);
    check_exact(
        &window_stream(&d, &w, "clicam"),
        &ch,
        first_at(t - 200 * NS_PER_MS)..=last_at(t + 100 * NS_PER_MS),
    );
    let status = trigger_ok(&d, json!({"verb":"status"}));
    assert_eq!(
        status["flight"]["triggers"]["persisted"],
        json!(1),
        "{status}"
    );
    let o = wshard_cli(&d, &["trigger", "--pre", "-5s"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(wshard_e2e::check::output_text(&o).contains("BAD_REQUEST"));
    c.close(Outcome::Completed, 200);
}

#[test]
fn flight_rust_client_opens_a_stream_in_flight_mode() {
    use wshard_client::FlightMode;
    let d = daemon();
    let ch = data::channels();
    let mut client = d.client("flight-client");
    let spec = data::open_spec("rustfl", &ch, Durability::Ack).flight_ring(Some(1), None);
    let mut w = client.open_episode(spec).expect("open in flight mode");
    data::push_steps(&mut w, &ch, 150).expect("push");
    assert!(w.flush().expect("flush") >= 150);
    let r = trigger_ok(&d, json!({"verb":"trigger","pre_ms":100,"post_ms":0}));
    let win = r["episode"].as_str().expect("w").to_owned();
    data::push_steps(&mut w, &ch, 30).expect("push");
    w.flush().expect("flush");
    wait_window(&d, &win);
    let t = data::t_ns(149);
    check_exact(
        &window_stream(&d, &win, "rustfl"),
        &ch,
        first_at(t - 100 * NS_PER_MS)..=149,
    );
    w.close(Outcome::Completed).expect("close");
    let m = manifest_of(&d.data_dir().join("rustfl"), "rustfl");
    assert!(
        m.ring_start().0 > 0,
        "the client's ring bound was not applied"
    );
}

#[test]
fn flight_trigger_refused_for_a_non_admin_peer() {
    if let Err(why) =
        wshard_e2e::privileged::require_root("flight_trigger_refused_for_a_non_admin_peer")
    {
        println!("skipped: {why}");
        return;
    }
    use std::os::unix::process::CommandExt;
    let d = Daemon::start(DaemonOptions {
        extra_toml: "[control]\nmode = \"0666\"\n".into(),
        ..DaemonOptions::default().rotation(8)
    });
    std::fs::set_permissions(
        d.root(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let ch = data::channels();
    let mut c = open_flight(&d, "guarded", &json!(true));
    c.timesteps(&ch, 0..20);
    c.flush_until(20);
    let o = Command::new(bins::wshard())
        .args(["trigger", "--json", "--control"])
        .arg(d.root().join("wshardd-control.sock"))
        .uid(65534)
        .gid(65534)
        .output()
        .expect("wshard as uid 65534");
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        wshard_e2e::check::output_text(&o)
    );
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["error"]["code"], json!("PERMISSION_DENIED"), "{v}");
    assert_eq!(v["verb"], json!("trigger"), "{v}");
    // Nothing was triggered; recording went on.
    let status = trigger_ok(&d, json!({"verb":"status"}));
    assert_eq!(
        status["flight"]["triggers"]["received"],
        json!(0),
        "{status}"
    );
    c.timesteps(&ch, 20..30);
    c.flush_until(30);
    c.close(Outcome::Completed, 30);
}

#[test]
fn flight_two_producers_at_different_rates_share_one_window() {
    use wshard_client::FlightMode;
    let d = daemon();
    let fast_ch = data::channels();
    let slow_ch = data::small_channels();
    // 200 Hz and 20 Hz on the same clock.
    let fast_t = |s: u64| T0 + i64::try_from(s).expect("seq") * 5 * NS_PER_MS;
    let slow_t = |s: u64| T0 + i64::try_from(s).expect("seq") * 50 * NS_PER_MS;
    let mut o = owner_flight(&d, "rates");
    let mut a = wshard_client::Client::connect_v2(d.socket(), "fast").expect("fast");
    let mut b = wshard_client::Client::connect_v2(d.socket(), "slow").expect("slow");
    let mut fast = a
        .join_stream(stream_spec("rates", "fast", &fast_ch, 200.0, Durability::Ack).flight())
        .expect("fast");
    let mut slow = b
        .join_stream(stream_spec("rates", "slow", &slow_ch, 20.0, Durability::Ack).flight())
        .expect("slow");
    // Three seconds of both.
    push_at(&mut fast, &fast_ch, 0..600, fast_t);
    push_at(&mut slow, &slow_ch, 0..60, slow_t);
    fast.flush().expect("flush");
    slow.flush().expect("flush");
    let at = fast_t(599);
    let r = trigger_ok(
        &d,
        json!({"verb":"trigger","pre_ms":1000,"post_ms":500,"at_ns":at,"reason":"rates"}),
    );
    let w = r["episode"].as_str().expect("w").to_owned();
    push_at(&mut fast, &fast_ch, 600..800, fast_t);
    push_at(&mut slow, &slow_ch, 60..80, slow_t);
    fast.flush().expect("flush");
    slow.flush().expect("flush");
    wait_window(&d, &w);
    let (start, end) = (at - 1000 * NS_PER_MS, at + 500 * NS_PER_MS);
    let span = |t: &dyn Fn(u64) -> i64| {
        let first = (0..).find(|&s| t(s) >= start).expect("first");
        let last = (0..).find(|&s| t(s + 1) > end).expect("last");
        first..=last
    };
    check_exact_at(
        &window_stream(&d, &w, "fast"),
        &fast_ch,
        span(&fast_t),
        fast_t,
    );
    check_exact_at(
        &window_stream(&d, &w, "slow"),
        &slow_ch,
        span(&slow_t),
        slow_t,
    );
    fast.close(Outcome::Completed).expect("close");
    slow.close(Outcome::Completed).expect("close");
    episode_close(&mut o);
    verify(&d.data_dir().join(&w));
}

#[test]
fn flight_back_to_back_windows_share_no_step_and_skip_none() {
    let d = daemon();
    let ch = data::channels();
    let mut c = open_flight(&d, "b2b", &json!(true));
    c.timesteps(&ch, 0..100);
    c.flush_until(100);
    let a = trigger_ok(&d, json!({"verb":"trigger","pre_ms":300,"post_ms":100}));
    let wa = a["episode"].as_str().expect("w").to_owned();
    c.timesteps(&ch, 100..140);
    c.flush_until(140);
    wait_window(&d, &wa);
    // The next trigger's pre-window reaches into the first window: it starts after it.
    let b = trigger_ok(&d, json!({"verb":"trigger","pre_ms":1000,"post_ms":100}));
    assert_eq!(b["merged"], json!(false), "{b}");
    let wb = b["episode"].as_str().expect("w").to_owned();
    c.timesteps(&ch, 140..180);
    c.flush_until(180);
    let index = wait_window(&d, &wb);
    assert_eq!(
        index.metadata["follows"],
        json!([wa]),
        "{:?}",
        index.metadata
    );
    let (ta, tb) = (data::t_ns(99), data::t_ns(139));
    let a_end = last_at(ta + 100 * NS_PER_MS);
    check_exact(
        &window_stream(&d, &wa, "b2b"),
        &ch,
        first_at(ta - 300 * NS_PER_MS)..=a_end,
    );
    check_exact(
        &window_stream(&d, &wb, "b2b"),
        &ch,
        a_end + 1..=last_at(tb + 100 * NS_PER_MS),
    );
    c.close(Outcome::Completed, 180);
}
