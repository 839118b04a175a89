//! `control_stop_*`, `control_abort_*`: an operator finalizes an open episode from outside
//! its producer, `complete` (`wshard stop`) or `aborted` (`wshard abort`), through the real
//! control socket of a real daemon, with real producers: single-stream (the Rust client,
//! a raw connection) and multi-stream (raw version 2 connections). Every acknowledged step
//! is in the finalized episode with the status asked for, `wshard verify` passes, the
//! producer learns it (`ERROR{STOPPED}` naming the status and the operator) and may open
//! again; an unknown or finished episode and a non-admin caller are refused with typed
//! errors, nothing changed.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use wshard::episode_dir::index::EpisodeStatus;
use wshard_client::{ClientError, Durability, ErrorCode, Outcome, Transport};
use wshard_e2e::check::{assert_verify_ok, check_episode, read_manifest};
use wshard_e2e::control_cli::{control_socket, json_err, json_ok, text, wshard};
use wshard_e2e::multi::{check_index_consistent, check_stream, owner, producer, stream_spec};
use wshard_e2e::{bins, data, Daemon, DaemonOptions, TIMEOUT};
use wshard_ingest_proto::{ChannelSpec, Durability as WireDurability, StreamOpen};

fn uid() -> u32 {
    nix::unistd::getuid().as_raw()
}

/// An open single-stream episode `id` of the Rust client, `acked` steps acknowledged
/// DURABLE, `more` sent after them without waiting; stopped by `verb` (`stop`, `abort`).
/// The client learns it on its next call with `ERROR{STOPPED}`; the episode holds every
/// acknowledged step, bit-exact, with `status`; the same connection opens a new episode.
fn end_single(verb: &str, id: &str, status: &str, reason: &str, transport: Transport) {
    let d = Daemon::start(DaemonOptions::default().rotation(64));
    let ch = data::channels();
    let mut client = d.client("e2e/stop");
    let mut w = client
        .open_episode_with(data::open_spec(id, &ch, Durability::Ack), transport)
        .unwrap();
    data::push_steps(&mut w, &ch, 150).unwrap();
    w.flush().unwrap();
    let acked = w.durable_seq();
    assert_eq!(acked, 150);

    let r = json_ok(&d, &[verb, id, "--json"]);
    let why = format!("{reason} by operator (uid {})", uid());
    assert_eq!(r["status"], status, "{r}");
    assert_eq!(r["timesteps"], 150, "{r}");
    assert_eq!(r["uid"], uid(), "{r}");

    let deadline = Instant::now() + TIMEOUT;
    let err = loop {
        match data::push_steps(&mut w, &ch, 1).and_then(|_| w.flush()) {
            Err(e) => break e,
            Ok(_) => assert!(Instant::now() < deadline, "no ERROR after {verb}"),
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    match &err {
        ClientError::Server { code, message } => {
            assert_eq!(*code, ErrorCode::Stopped, "{message}");
            assert!(
                message.contains(id)
                    && message.contains(&format!("finalized as {status}"))
                    && message.contains(&why),
                "{message}"
            );
        }
        other => panic!("expected ERROR STOPPED, got {other}"),
    }
    drop(w);
    let st = check_episode(&d.data_dir(), id, &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), (status, acked));
    let m = read_manifest(&d.data_dir(), id).unwrap();
    assert_eq!(m.status.as_deref(), Some(status));
    assert_verify_ok(&d.data_dir());

    // Same connection, next episode.
    let mut w = client
        .open_episode(data::open_spec("after", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 20).unwrap();
    assert_eq!(w.close(Outcome::Completed).unwrap().timesteps, 20);

    let r = json_ok(&d, &["episodes", "--json"]);
    let listed = r["episodes"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["episode"] == id))
        .cloned()
        .unwrap();
    assert_eq!(listed["status"], status, "{listed}");
    let st = json_ok(&d, &["status", "--json"]);
    assert_eq!(st["daemon"]["counters"]["episodes_stopped"], 1, "{st}");
    assert!(
        d.wait_log(
            &format!("control: {verb} requested by an operator"),
            1,
            TIMEOUT
        ),
        "{}",
        d.log()
    );
}

#[test]
fn control_stop_single_stream_finalizes_complete_with_every_acked_step() {
    end_single("stop", "stop-me", "complete", "stopped", Transport::Socket);
}

#[test]
fn control_abort_single_stream_finalizes_aborted_with_every_acked_step() {
    end_single("abort", "abort-me", "aborted", "aborted", Transport::Socket);
}

/// The timesteps come through a shared-memory ring: the stop reaches the connection all
/// the same, and the ring's steps are all in.
#[test]
fn control_stop_shm_episode_finalizes_complete_with_every_acked_step() {
    end_single("stop", "stop-shm", "complete", "stopped", Transport::shm());
}

#[test]
fn control_abort_shm_episode_finalizes_aborted_with_every_acked_step() {
    end_single("abort", "abort-shm", "aborted", "aborted", Transport::shm());
}

/// Steps sent but not yet acknowledged when the stop arrives are kept too: a raw producer
/// sends without waiting, the operator stops, and the episode holds at least what was
/// acknowledged and exactly what the daemon counted.
#[test]
fn control_stop_raw_producer_in_flight_keeps_everything_received() {
    use wshard_e2e::abuse::small;
    use wshard_e2e::raw::RawConn;
    let d = Daemon::start(DaemonOptions::default().rotation(8));
    let ch = data::small_channels();
    let mut c = RawConn::hello(&d.socket());
    c.open(&small("raw-run"));
    c.timesteps(&ch, 0..40);
    let acked = c.flush_until(40);
    c.timesteps(&ch, 40..60);
    let r = json_ok(&d, &["stop", "raw-run", "--json"]);
    let n = r["timesteps"].as_u64().unwrap();
    assert!(n >= acked, "{r}");
    let msg = c.expect_error(ErrorCode::Stopped);
    assert!(msg.contains("finalized as complete"), "{msg}");
    let st = check_episode(&d.data_dir(), "raw-run", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", n));
    assert_verify_ok(&d.data_dir());
}

const EP: &str = "multi-ep";

fn joints() -> StreamOpen {
    stream_spec(EP, "joints", &data::channels(), 1000.0, WireDurability::Ack)
}

fn imu() -> StreamOpen {
    stream_spec(
        EP,
        "imu",
        &data::small_channels(),
        200.0,
        WireDurability::Chunk,
    )
}

/// A multi-stream episode of two producers and its owner, ended by `verb`: every stream
/// and the index end with `status`, each producer and the owner get `ERROR{STOPPED}`,
/// every acknowledged step is in its stream.
fn end_multi(verb: &str, status: EpisodeStatus) {
    let d = Daemon::start(DaemonOptions::default().rotation(8));
    let dd = d.data_dir();
    let mut o = owner(&d.socket(), EP);
    let mut a = producer(&d.socket(), &joints());
    let mut b = producer(&d.socket(), &imu());
    let ch_a: Vec<ChannelSpec> = data::channels();
    let ch_b: Vec<ChannelSpec> = data::small_channels();
    a.timesteps(&ch_a, 0..30);
    let acked_a = a.flush_until(30);
    b.timesteps(&ch_b, 0..6);
    let acked_b = b.flush_until(6);
    // In flight when the operator acts.
    b.timesteps(&ch_b, 6..9);
    let r = json_ok(&d, &[verb, EP, "--json"]);
    assert_eq!(r["status"], status.as_str(), "{r}");
    assert_eq!(r["streams"].as_array().map(Vec::len), Some(2), "{r}");
    for c in [&mut a, &mut b, &mut o] {
        let msg = c.expect_error(ErrorCode::Stopped);
        assert!(
            msg.contains(&format!("as {}", status.as_str())) && msg.contains("by operator"),
            "{msg}"
        );
    }
    let ix = check_index_consistent(&dd, EP).expect("consistent");
    assert_eq!(ix.status, status);
    assert!(ix.closed);
    for s in &ix.streams {
        assert_eq!(s.status, status, "{}", s.name);
    }
    let sa = check_stream(&dd, EP, "joints", &ch_a).expect("joints");
    assert_eq!(sa.timesteps, acked_a);
    assert_eq!(sa.status, status.as_str());
    let sb = check_stream(&dd, EP, "imu", &ch_b).expect("imu");
    assert!(sb.timesteps >= acked_b, "imu {} < {acked_b}", sb.timesteps);
    assert_verify_ok(&dd.join(EP).join("streams"));
    let dir = wshard::episode_dir::EpisodeDir::open(dd.join(EP)).expect("EpisodeDir");
    assert_eq!(dir.status(), Some(status));
}

#[test]
fn control_stop_multi_stream_every_stream_and_the_index_complete() {
    end_multi("stop", EpisodeStatus::Complete);
}

#[test]
fn control_abort_multi_stream_every_stream_and_the_index_aborted() {
    end_multi("abort", EpisodeStatus::Aborted);
}

/// `stop EP/STREAM` ends one stream `complete`; the others record on.
#[test]
fn control_stop_one_stream_leaves_the_others_recording() {
    let d = Daemon::start(DaemonOptions::default().rotation(8));
    let dd = d.data_dir();
    let mut o = owner(&d.socket(), EP);
    let mut a = producer(&d.socket(), &joints());
    let mut b = producer(&d.socket(), &imu());
    a.timesteps(&data::channels(), 0..10);
    a.flush_until(10);
    let r = json_ok(&d, &["stop", &format!("{EP}/joints"), "--json"]);
    assert_eq!(r["status"], "complete", "{r}");
    assert_eq!(r["timesteps"], 10, "{r}");
    let msg = a.expect_error(ErrorCode::Stopped);
    assert!(msg.contains("finalized as complete"), "{msg}");
    b.timesteps(&data::small_channels(), 0..4);
    b.close(wshard_ingest_proto::Outcome::Completed, 4);
    assert_eq!(wshard_e2e::multi::episode_close(&mut o), 0);
    let ix = check_index_consistent(&dd, EP).expect("consistent");
    assert_eq!(ix.status, EpisodeStatus::Complete);
    assert_eq!(
        ix.stream("joints").map(|s| (s.status, s.steps)),
        Some((EpisodeStatus::Complete, 10))
    );
}

#[test]
fn control_stop_unknown_or_finished_episode_is_unknown_episode() {
    let d = Daemon::start(DaemonOptions::default());
    for verb in ["stop", "abort"] {
        let e = json_err(&d, &[verb, "no-such-episode", "--json"]);
        assert_eq!(e["code"], "UNKNOWN_EPISODE", "{e}");
        assert_eq!(e["episode"], "no-such-episode", "{e}");
        assert_eq!(e["on_disk_status"], Value::Null, "{e}");
        // Text output names the code and the episode on stderr, exit 1.
        let o = wshard(&d, &[verb, "no-such-episode"]);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("UNKNOWN_EPISODE") && err.contains("no-such-episode"),
            "{err}"
        );
    }
    d.record_ok("finished", 5);
    for verb in ["stop", "abort"] {
        let e = json_err(&d, &[verb, "finished", "--json"]);
        assert_eq!(e["code"], "UNKNOWN_EPISODE", "{e}");
        assert_eq!(e["on_disk_status"], "complete", "{e}");
        assert!(
            e["message"].as_str().unwrap().contains("is not open"),
            "{e}"
        );
    }
    // Untouched.
    let st = check_episode(&d.data_dir(), "finished", &data::channels()).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 5));
    // A second stop of an episode already stopped is unknown too.
    let ch = data::channels();
    let mut client = d.client("e2e/twice");
    let mut w = client
        .open_episode(data::open_spec("twice", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 3).unwrap();
    w.flush().unwrap();
    json_ok(&d, &["stop", "twice", "--json"]);
    let e = json_err(&d, &["abort", "twice", "--json"]);
    assert_eq!(e["on_disk_status"], "complete", "{e}");
}

#[test]
fn control_stop_and_abort_refused_for_non_admin_peer() {
    if let Err(why) =
        wshard_e2e::privileged::require_root("control_stop_and_abort_refused_for_non_admin_peer")
    {
        println!("skipped: {why}");
        return;
    }
    let opts = DaemonOptions {
        extra_toml: "[control]\nmode = \"0666\"\n".into(),
        ..DaemonOptions::default()
    };
    let d = Daemon::start(opts);
    std::fs::set_permissions(
        d.root(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let ch = data::channels();
    let mut client = d.client("e2e/admin");
    let mut w = client
        .open_episode(data::open_spec("guarded", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 10).unwrap();
    w.flush().unwrap();
    let as_nobody = |args: &[&str]| {
        Command::new(bins::wshard())
            .args(args)
            .arg("--control")
            .arg(control_socket(&d))
            .uid(65534)
            .gid(65534)
            .output()
            .expect("cannot run wshard as uid 65534")
    };
    for verb in ["stop", "abort"] {
        let o = as_nobody(&[verb, "guarded", "--json"]);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["error"]["code"], "PERMISSION_DENIED", "{v}");
        assert_eq!(v["error"]["uid"], 65534, "{v}");
        assert_eq!(v["verb"], verb, "{v}");
    }
    // The episode was not touched: it records on and closes as its producer says.
    data::push_steps(&mut w, &ch, 10).unwrap();
    assert_eq!(w.close(Outcome::Completed).unwrap().timesteps, 20);
    let st = check_episode(&d.data_dir(), "guarded", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 20));
    assert!(
        d.wait_log("control: permission denied", 2, TIMEOUT),
        "{}",
        d.log()
    );
}
