//! `control_*` of split episodes: `wshard stop|abort|close|split|keep` given the producer's
//! id or the id of the part recording now act on the part recording now, for single- and
//! multi-stream episodes (a stream also as `EP.000N/STREAM`); a finished part of an
//! episode that records on is refused with `PART_FINISHED` naming the part recording now
//! (`keep` marks that part alone); a trigger window still being persisted is refused with
//! `WINDOW_PENDING` (`keep` marks it). Real daemon, real producers, the real `wshard`.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wshard::episode_dir::index::EpisodeStatus;
use wshard_client::{ClientError, Durability, ErrorCode};
use wshard_e2e::check::read_manifest;
use wshard_e2e::control_cli::{json_err, json_ok, text, wshard};
use wshard_e2e::flight::{open_flight, trigger_ok, wait_window};
use wshard_e2e::multi::{check_index_consistent, owner, producer, stream_spec};
use wshard_e2e::parts::check_part;
use wshard_e2e::{data, Daemon, DaemonOptions, TIMEOUT};
use wshard_ingest_proto::{ChannelSpec, Durability as WireDurability};

const EP: &str = "parts-ep";

/// `wshard split EP --json`, retried while a stream holds no timestep of the part yet:
/// (finished, recording).
fn split_ok(d: &Daemon, ep: &str) -> (String, String) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let o = wshard(d, &["split", ep, "--json"]);
        let v: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("wshard split {ep}: not JSON ({e}): {}", text(&o)));
        if v["error"]["code"] == "EMPTY_PART" && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        assert_eq!(o.status.code(), Some(0), "{v}");
        let r = &v["result"];
        return (
            r["finished"].as_str().unwrap().to_owned(),
            r["recording"].as_str().unwrap().to_owned(),
        );
    }
}

fn part(n: u64) -> String {
    wshard_e2e::parts::part_id(EP, n)
}

fn kept(d: &Daemon, id: &str) -> bool {
    d.data_dir().join(".keep").join(id).exists()
}

/// Every verb that acts on an open episode refuses finished part `named` with
/// `PART_FINISHED`, naming the episode and the part recording now (text: on stderr).
fn refuse_finished(d: &Daemon, named: &str, recording: &str) {
    for verb in ["stop", "abort", "close", "split"] {
        let e = json_err(d, &[verb, named, "--json"]);
        assert_eq!(e["code"], "PART_FINISHED", "{verb}: {e}");
        assert_eq!(e["episode"], named, "{e}");
        assert_eq!(e["part_of"], EP, "{e}");
        assert_eq!(e["recording"], recording, "{e}");
        let msg = e["message"].as_str().unwrap();
        assert!(
            msg.contains("finished part") && msg.contains(recording),
            "{msg}"
        );
    }
    let o = wshard(d, &["stop", named]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("PART_FINISHED") && err.contains(recording),
        "{err}"
    );
}

/// A multi-stream episode of two producers, split twice: `EP.0002` records.
struct Multi {
    d: Daemon,
    o: wshard_e2e::raw::RawConn,
    a: wshard_e2e::raw::RawConn,
    b: wshard_e2e::raw::RawConn,
    ch_a: Vec<ChannelSpec>,
    ch_b: Vec<ChannelSpec>,
}

fn multi_split_twice() -> Multi {
    let d = Daemon::start(DaemonOptions::default().rotation(8));
    let ch_a = data::channels();
    let ch_b = data::small_channels();
    let o = owner(&d.socket(), EP);
    let mut a = producer(
        &d.socket(),
        &stream_spec(EP, "joints", &ch_a, 1000.0, WireDurability::Ack),
    );
    let mut b = producer(
        &d.socket(),
        &stream_spec(EP, "imu", &ch_b, 200.0, WireDurability::Ack),
    );
    let mut sent = (0, 0);
    for k in 1..=3u64 {
        a.timesteps(&ch_a, sent.0..k * 20);
        b.timesteps(&ch_b, sent.1..k * 4);
        sent = (k * 20, k * 4);
        a.flush_until(sent.0);
        b.flush_until(sent.1);
        if k < 3 {
            // Named by the producer's id, then by the part recording now.
            let named = if k == 1 { EP.to_owned() } else { part(1) };
            assert_eq!(split_ok(&d, &named), (part(k - 1), part(k)));
        }
    }
    Multi {
        d,
        o,
        a,
        b,
        ch_a,
        ch_b,
    }
}

#[test]
fn control_stop_multi_by_part_id_finalizes_the_part_recording_and_refuses_finished_parts() {
    let Multi {
        d,
        mut o,
        mut a,
        mut b,
        ch_a,
        ch_b,
    } = multi_split_twice();
    let dd = d.data_dir();
    refuse_finished(&d, &part(1), &part(2));
    refuse_finished(&d, &format!("{}/joints", part(1)), &part(2));
    // The producer's id of a multi-stream episode is part 0, never a finished part.
    let e = json_err(&d, &["split", &format!("{EP}/imu"), "--json"]);
    assert_eq!(e["code"], "NOT_SPLITTABLE", "{e}");

    // One stream named through the part recording now: its manifest there is the reply's.
    let r = json_ok(&d, &["stop", &format!("{}/imu", part(2)), "--json"]);
    assert_eq!(r["status"], "complete", "{r}");
    let imu = check_part(&dd.join(part(2)).join("streams"), "imu", &ch_b, 8);
    assert_eq!(r["timesteps"], imu.total_timesteps, "{r}");
    assert_eq!(imu.total_timesteps, 4, "imu in {}", part(2));
    let msg = b.expect_error(ErrorCode::Stopped);
    assert!(msg.contains("finalized as complete"), "{msg}");

    // The episode named by the part recording now: that part is stopped, complete.
    a.timesteps(&ch_a, 60..65);
    let acked = a.flush_until(65);
    assert_eq!(acked, 65);
    let r = json_ok(&d, &["stop", &part(2), "--json"]);
    assert_eq!(r["episode"], part(2), "{r}");
    assert_eq!(r["part"], part(2), "{r}");
    assert_eq!(r["status"], "complete", "{r}");
    for c in [&mut a, &mut o] {
        let msg = c.expect_error(ErrorCode::Stopped);
        assert!(
            msg.contains("as complete") && msg.contains("by operator"),
            "{msg}"
        );
    }
    let mut joints = 0;
    for n in 0..=2 {
        let ix = check_index_consistent(&dd, &part(n)).unwrap();
        assert_eq!(ix.status, EpisodeStatus::Complete, "{}", part(n));
        joints += ix.stream("joints").unwrap().steps;
    }
    assert_eq!(joints, 65);
    assert!(!dd.join(part(3)).exists());
    // Gone: a part id of a finished episode is not open, its status on disk said.
    let e = json_err(&d, &["abort", &part(2), "--json"]);
    assert_eq!(e["code"], "UNKNOWN_EPISODE", "{e}");
    assert_eq!(e["on_disk_status"], "complete", "{e}");
}

#[test]
fn control_abort_multi_by_base_id_after_splits_aborts_the_part_recording_and_keeps_parts() {
    let Multi {
        d,
        mut o,
        mut a,
        mut b,
        ..
    } = multi_split_twice();
    let dd = d.data_dir();
    // A finished part is kept alone.
    let r = json_ok(&d, &["keep", &part(1), "--json"]);
    assert_eq!(
        (r["kept"].clone(), r["part"].clone()),
        (json!(true), Value::Null),
        "{r}"
    );
    assert!(kept(&d, &part(1)) && !kept(&d, EP) && !kept(&d, &part(2)));
    // The producer's id: part 0 and the part recording now.
    let r = json_ok(&d, &["keep", EP, "--json"]);
    assert_eq!(r["part"], part(2), "{r}");
    assert!(kept(&d, EP) && kept(&d, &part(2)));
    let o_text = wshard(&d, &["keep", EP]);
    let out = String::from_utf8_lossy(&o_text.stdout);
    assert!(
        out.contains(&format!("part `{}` (recording now) kept too", part(2))),
        "{out}"
    );
    let st = json_ok(&d, &["status", "--json"]);
    let m = &st["multi_episodes"][0];
    assert_eq!(
        (m["episode"].clone(), m["kept"].clone()),
        (json!(EP), json!(true)),
        "{m}"
    );
    for s in st["episodes"].as_array().unwrap() {
        assert_eq!(s["kept"], true, "{s}");
    }
    let r = json_ok(&d, &["keep", EP, "--release", "--json"]);
    assert_eq!(r["part"], part(2), "{r}");
    assert!(!kept(&d, EP) && !kept(&d, &part(2)) && kept(&d, &part(1)));
    // The part recording now, by its own id: that part alone.
    json_ok(&d, &["keep", &part(2), "--json"]);
    assert!(kept(&d, &part(2)) && !kept(&d, EP));

    let r = json_ok(&d, &["abort", EP, "--json"]);
    assert_eq!(r["episode"], EP, "{r}");
    assert_eq!(r["part"], part(2), "{r}");
    assert_eq!(r["status"], "aborted", "{r}");
    for c in [&mut a, &mut b, &mut o] {
        let msg = c.expect_error(ErrorCode::Stopped);
        assert!(msg.contains("as aborted"), "{msg}");
    }
    let last = check_index_consistent(&dd, &part(2)).unwrap();
    assert_eq!(last.status, EpisodeStatus::Aborted);
    for n in 0..2 {
        let ix = check_index_consistent(&dd, &part(n)).unwrap();
        assert_eq!(ix.status, EpisodeStatus::Complete, "{}", part(n));
    }
    assert!(kept(&d, &part(2)) && kept(&d, &part(1)));
}

#[test]
fn control_stop_split_single_stream_by_part_id_and_finished_parts_refused() {
    let d = Daemon::start(DaemonOptions::default().rotation(8));
    let dd = d.data_dir();
    let ch = data::channels();
    let mut client = d.client("e2e/parts");
    let mut w = client
        .open_episode(data::open_spec(EP, &ch, Durability::Ack))
        .unwrap();
    for (k, n) in [(1u64, 30), (2, 20)] {
        data::push_steps(&mut w, &ch, n).unwrap();
        w.flush().unwrap();
        let named = if k == 1 { EP.to_owned() } else { part(1) };
        assert_eq!(split_ok(&d, &named), (part(k - 1), part(k)));
    }
    data::push_steps(&mut w, &ch, 10).unwrap();
    w.flush().unwrap();
    refuse_finished(&d, &part(1), &part(2));
    // `episodes` shows the parts: the open one with its parts, the finished ones linked.
    let r = json_ok(&d, &["episodes", "--json"]);
    let list = r["episodes"].as_array().unwrap();
    let row = |id: &str| list.iter().find(|e| e["episode"] == id).unwrap().clone();
    assert_eq!(row(&part(2))["parts"]["part_number"], 2, "{r}");
    assert_eq!(row(&part(2))["parts"]["last_cut"]["reason"], "split", "{r}");
    assert_eq!(row(&part(1))["split"]["next"], part(2), "{r}");
    // keep: a finished part alone; the producer's id with the part recording now.
    json_ok(&d, &["keep", &part(1), "--json"]);
    assert!(kept(&d, &part(1)) && !kept(&d, EP));
    let r = json_ok(&d, &["keep", EP, "--json"]);
    assert_eq!(r["part"], part(2), "{r}");
    assert!(kept(&d, EP) && kept(&d, &part(2)));
    let st = json_ok(&d, &["status", "--json"]);
    assert_eq!(st["episodes"][0]["kept"], true, "{st}");

    let r = json_ok(&d, &["abort", &part(2), "--json"]);
    assert_eq!(r["episode"], part(2), "{r}");
    assert_eq!(r["part"], part(2), "{r}");
    assert_eq!(r["status"], "aborted", "{r}");
    assert_eq!(r["timesteps"], 10, "{r}");
    let err = loop {
        match data::push_steps(&mut w, &ch, 1).and_then(|_| w.flush()) {
            Err(e) => break e,
            Ok(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    assert!(
        matches!(
            &err,
            ClientError::Server {
                code: ErrorCode::Stopped,
                ..
            }
        ),
        "{err}"
    );
    drop(w);
    let statuses: Vec<_> = (0..=2)
        .map(|n| read_manifest(&dd, &part(n)).unwrap().status.unwrap())
        .collect();
    assert_eq!(statuses, ["complete", "complete", "aborted"]);
}

#[test]
fn control_stop_of_a_trigger_window_being_persisted_is_window_pending() {
    let d = Daemon::start(DaemonOptions::default().rotation(8));
    let ch = data::channels();
    let mut c = open_flight(&d, "fl", &json!(true));
    c.timesteps(&ch, 0..20);
    c.flush_until(20);
    let r = trigger_ok(
        &d,
        json!({"verb": "trigger", "pre_ms": 100, "post_ms": 500}),
    );
    let w = r["episode"].as_str().unwrap().to_owned();
    for verb in ["stop", "abort", "close", "split"] {
        let e = json_err(&d, &[verb, &w, "--json"]);
        assert_eq!(e["code"], "WINDOW_PENDING", "{verb}: {e}");
        assert_eq!(e["episode"], w.as_str(), "{e}");
    }
    // A window may be kept before it is in place.
    let r = json_ok(&d, &["keep", &w, "--json"]);
    assert_eq!(r["kept"], true, "{r}");
    c.timesteps(&ch, 20..100);
    c.flush_until(100);
    wait_window(&d, &w);
    assert!(kept(&d, &w));
    let e = json_err(&d, &["stop", &w, "--json"]);
    assert_eq!(e["code"], "UNKNOWN_EPISODE", "{e}");
    assert_eq!(e["on_disk_status"], "complete", "{e}");
}
