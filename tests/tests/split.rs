//! `wshard split` against the real daemon with real clients: the parts of a split episode
//! concatenate to exactly the stream the producer sent (values, seqs, t_ns), each part is
//! a normal `complete` episode linked to its neighbours, the producer notices nothing;
//! typed refusals; a SIGKILL right after a split. `[rolling]` is in `rolling.rs`.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::os::unix::process::CommandExt;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;
use wshard_client::{Durability, Outcome, Transport};
use wshard_e2e::check::{assert_verify_ok, read_manifest, wait_final};
use wshard_e2e::parts::{check_part, check_parts, control_socket, wshard};
use wshard_e2e::{bins, data, Daemon, DaemonOptions, TIMEOUT};

fn text(o: &Output) -> String {
    wshard_e2e::check::output_text(o)
}

/// `wshard split EP --json`: the reply document and the exit code.
fn split(d: &Daemon, ep: &str) -> (Option<i32>, Value) {
    let o = wshard(d, &["split", ep, "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("wshard split {ep}: not JSON ({e}): {}", text(&o)));
    (o.status.code(), v)
}

/// A split that must succeed; returns (finished, recording).
fn split_ok(d: &Daemon, ep: &str) -> (String, String) {
    let (code, v) = split(d, ep);
    assert_eq!(code, Some(0), "{v}");
    let r = &v["result"];
    assert_eq!(r["episode"], ep, "{r}");
    (
        r["finished"].as_str().unwrap().to_owned(),
        r["recording"].as_str().unwrap().to_owned(),
    )
}

/// A refused split: its error code.
fn split_refused(d: &Daemon, ep: &str) -> Value {
    let (code, v) = split(d, ep);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(v["ok"], false, "{v}");
    v["error"].clone()
}

#[test]
fn split_under_load_parts_concatenate_to_the_stream() {
    split_under_load("load-1", Durability::Ack, Transport::Socket);
}

#[test]
fn split_under_load_over_the_shared_memory_ring() {
    split_under_load("load-shm", Durability::Ack, Transport::shm());
}

#[test]
fn split_under_load_durability_chunk() {
    split_under_load("load-chunk", Durability::Chunk, Transport::Socket);
}

/// A producer streams batches of 1 to 13 timesteps (a FLUSH now and then) while `wshard
/// split` is called four times; then the parts must be the stream sent, exactly.
fn split_under_load(ep: &str, durability: Durability, transport: Transport) {
    let d = Daemon::start(DaemonOptions::default().rotation(64));
    let ch = data::channels();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut splits = Vec::new();
    let (summary, total) = std::thread::scope(|s| {
        let producer = s.spawn(|| {
            let mut client = d.client("e2e/split");
            let mut w = client
                .open_episode_with(data::open_spec(ep, &ch, durability), transport)
                .unwrap();
            let mut sent = 0;
            // Streams until the splits are done, then 500 more timesteps.
            let mut until = u64::MAX;
            while sent < until {
                if until == u64::MAX && stop.load(std::sync::atomic::Ordering::Acquire) {
                    until = sent + 500;
                }
                let n = (sent % 13 + 1).min(until - sent);
                data::push_steps(&mut w, &ch, n).unwrap();
                sent += n;
                if sent % 500 < 13 {
                    let durable = w.flush().unwrap();
                    assert!(durable >= sent.saturating_sub(n), "{durable} < {sent}");
                }
                std::thread::sleep(Duration::from_micros(300));
            }
            let durable = w.flush().unwrap();
            assert_eq!(durable, sent);
            (w.close(Outcome::Completed).unwrap(), sent)
        });
        // Wait for the first timesteps, then split four times while they stream.
        let deadline = Instant::now() + TIMEOUT;
        while !d.data_dir().join(ep).exists() {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(150));
        for _ in 0..4 {
            splits.push(split_ok(&d, ep));
            std::thread::sleep(Duration::from_millis(150));
        }
        stop.store(true, std::sync::atomic::Ordering::Release);
        producer.join().unwrap()
    });
    // The producer saw one episode of `total` timesteps.
    assert_eq!(summary.timesteps, total);
    assert_eq!(
        splits,
        vec![
            (ep.to_owned(), format!("{ep}.0001")),
            (format!("{ep}.0001"), format!("{ep}.0002")),
            (format!("{ep}.0002"), format!("{ep}.0003")),
            (format!("{ep}.0003"), format!("{ep}.0004")),
        ]
    );
    let last = wait_final(&d.data_dir(), &format!("{ep}.0004"), TIMEOUT).unwrap();
    assert_eq!(last.status.as_deref(), Some("complete"));
    let (ids, steps) = check_parts(&d.data_dir(), ep, &ch);
    assert_eq!(ids.len(), 5, "{ids:?}");
    assert_eq!(steps, total);
    for id in &ids {
        let m = read_manifest(&d.data_dir(), id).unwrap();
        assert_eq!(m.status.as_deref(), Some("complete"), "{id}");
        assert!(m.total_timesteps > 0, "{id}");
    }
    assert_verify_ok(&d.data_dir());
}

#[test]
fn split_typed_errors_and_nothing_lost() {
    let d = Daemon::start(DaemonOptions::default());
    let ch = data::channels();
    // Unknown episode.
    let e = split_refused(&d, "no-such");
    assert_eq!(e["code"], "UNKNOWN_EPISODE", "{e}");
    assert_eq!(e["episode"], "no-such", "{e}");
    // A finished one.
    d.record_ok("done-1", 30);
    let e = split_refused(&d, "done-1");
    assert_eq!(e["code"], "UNKNOWN_EPISODE", "{e}");
    assert_eq!(e["on_disk_status"], "complete", "{e}");
    // Nothing recorded yet: nothing to split.
    let mut client = d.client("e2e/split-errors");
    let mut w = client
        .open_episode(data::open_spec("empty-1", &ch, Durability::Ack))
        .unwrap();
    let e = split_refused(&d, "empty-1");
    assert_eq!(e["code"], "EMPTY_PART", "{e}");
    assert_eq!(e["part"], "empty-1", "{e}");
    data::push_steps(&mut w, &ch, 40).unwrap();
    w.flush().unwrap();
    assert_eq!(split_ok(&d, "empty-1").1, "empty-1.0001");
    // Right after a split the new part is empty too.
    let e = split_refused(&d, "empty-1");
    assert_eq!(e["code"], "EMPTY_PART", "{e}");
    assert_eq!(e["part"], "empty-1.0001", "{e}");
    // Status names the part recording now under the producer's id.
    let o = wshard(&d, &["status", "--json"]);
    let st: Value = serde_json::from_slice(&o.stdout).unwrap();
    let live = st["result"]["episodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["episode"] == "empty-1")
        .unwrap()
        .clone();
    assert_eq!(live["parts"]["part"], "empty-1.0001", "{live}");
    assert_eq!(live["parts"]["parts_finished"], 1, "{live}");
    data::push_steps(&mut w, &ch, 25).unwrap();
    assert_eq!(w.close(Outcome::Completed).unwrap().timesteps, 65);
    wait_final(&d.data_dir(), "empty-1.0001", TIMEOUT).unwrap();
    let (ids, steps) = check_parts(&d.data_dir(), "empty-1", &ch);
    assert_eq!(ids, vec!["empty-1".to_owned(), "empty-1.0001".to_owned()]);
    assert_eq!(steps, 65);
    assert_verify_ok(&d.data_dir());
}

#[test]
fn split_part_id_too_long_is_refused() {
    // Ids of at most 12 bytes: `twelve-bytes` fits, `twelve-bytes.0001` does not.
    let mut d = Daemon::new(DaemonOptions::default());
    d.write_config_text(
        &d.options()
            .to_toml(&d.data_dir(), &d.socket())
            .replace("[limits]\n", "[limits]\nmax_episode_id_bytes = 12\n"),
    );
    d.spawn();
    d.wait_ready();
    let ch = data::channels();
    let mut client = d.client("e2e/split-long");
    let mut w = client
        .open_episode(data::open_spec("twelve-bytes", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 30).unwrap();
    w.flush().unwrap();
    let e = split_refused(&d, "twelve-bytes");
    assert_eq!(e["code"], "PART_ID_TOO_LONG", "{e}");
    assert_eq!(e["part"], "twelve-bytes.0001", "{e}");
    data::push_steps(&mut w, &ch, 30).unwrap();
    assert_eq!(w.close(Outcome::Completed).unwrap().timesteps, 60);
    let (ids, steps) = check_parts(&d.data_dir(), "twelve-bytes", &ch);
    assert_eq!(ids.len(), 1);
    assert_eq!(steps, 60);
}

#[test]
fn split_refused_for_non_admin_peer() {
    if let Err(why) = wshard_e2e::privileged::require_root("split_refused_for_non_admin_peer") {
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
    let mut client = d.client("e2e/split-admin");
    let mut w = client
        .open_episode(data::open_spec("guarded-split", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 10).unwrap();
    w.flush().unwrap();
    let o = Command::new(bins::wshard())
        .args(["split", "guarded-split", "--json", "--control"])
        .arg(control_socket(&d))
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["error"]["code"], "PERMISSION_DENIED", "{v}");
    assert_eq!(v["verb"], "split", "{v}");
    data::push_steps(&mut w, &ch, 10).unwrap();
    assert_eq!(w.close(Outcome::Completed).unwrap().timesteps, 20);
    assert!(!d.data_dir().join("guarded-split.0001").exists());
    let (ids, steps) = check_parts(&d.data_dir(), "guarded-split", &ch);
    assert_eq!((ids.len(), steps), (1, 20));
}

#[test]
fn split_then_sigkill_keeps_every_acknowledged_step_once() {
    let mut d = Daemon::start(DaemonOptions::default().rotation(40));
    let ch = data::channels();
    let ep = "kill-1";
    let acked;
    {
        let mut client = d.client("e2e/split-kill");
        let mut w = client
            .open_episode(data::open_spec(ep, &ch, Durability::Ack))
            .unwrap();
        data::push_steps(&mut w, &ch, 130).unwrap();
        w.flush().unwrap();
        split_ok(&d, ep);
        data::push_steps(&mut w, &ch, 70).unwrap();
        w.flush().unwrap();
        split_ok(&d, ep);
        data::push_steps(&mut w, &ch, 55).unwrap();
        acked = w.flush().unwrap();
        assert_eq!(acked, 255);
        d.kill9();
        drop(w);
    }
    d.restart();
    // Recovery settles every part; they hold the acknowledged stream exactly once.
    let data_dir = d.data_dir();
    for id in [ep.to_owned(), format!("{ep}.0001"), format!("{ep}.0002")] {
        let m = read_manifest(&data_dir, &id).unwrap();
        assert!(
            matches!(m.status.as_deref(), Some("complete" | "recovered")),
            "{id}: {:?}",
            m.status
        );
    }
    let mut first_seq = 0;
    for id in [ep.to_owned(), format!("{ep}.0001"), format!("{ep}.0002")] {
        let m = check_part(&data_dir, &id, &ch, first_seq);
        first_seq += m.total_timesteps;
    }
    assert_eq!(first_seq, acked);
    // The last part was recovered: its links back are in its manifest from its creation.
    let m = read_manifest(&data_dir, &format!("{ep}.0002")).unwrap();
    assert_eq!(m.extra["split"]["previous"], format!("{ep}.0001"));
    assert_eq!(m.extra["split"]["first_seq"], 200);
    assert_verify_ok(&data_dir);
}

#[test]
fn split_then_close_and_episodes_name_the_part_recording() {
    let d = Daemon::start(DaemonOptions::default());
    let ch = data::channels();
    let mut client = d.client("e2e/split-close");
    let mut w = client
        .open_episode(data::open_spec("sc-1", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 30).unwrap();
    w.flush().unwrap();
    split_ok(&d, "sc-1");
    data::push_steps(&mut w, &ch, 20).unwrap();
    w.flush().unwrap();
    // `episodes`: the finished part from its manifest, the part recording as open.
    wait_final(&d.data_dir(), "sc-1", TIMEOUT).unwrap();
    let o = wshard(&d, &["episodes", "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let list = v["result"]["episodes"].as_array().unwrap().clone();
    let find = |id: &str| list.iter().find(|e| e["episode"] == id).cloned().unwrap();
    assert_eq!(find("sc-1")["open"], false, "{list:?}");
    assert_eq!(find("sc-1")["status"], "complete", "{list:?}");
    assert_eq!(find("sc-1.0001")["open"], true, "{list:?}");
    assert_eq!(find("sc-1.0001")["part_of"], "sc-1", "{list:?}");
    // A directory named as the next part: the split is refused, nothing is cut.
    std::fs::create_dir(d.data_dir().join("sc-1.0002")).unwrap();
    let e = split_refused(&d, "sc-1");
    assert_eq!(e["code"], "PART_EXISTS", "{e}");
    assert_eq!(e["part"], "sc-1.0002", "{e}");
    std::fs::remove_dir(d.data_dir().join("sc-1.0002")).unwrap();
    // The part recording may be named too.
    assert_eq!(
        split_ok(&d, "sc-1.0001"),
        ("sc-1.0001".to_owned(), "sc-1.0002".to_owned())
    );
    data::push_steps(&mut w, &ch, 20).unwrap();
    w.flush().unwrap();
    // `close` names the producer's id (or the part) and finalizes the part recording.
    let o = wshard(&d, &["close", "sc-1.0002", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &v["result"];
    assert_eq!(r["part"], "sc-1.0002", "{r}");
    assert_eq!(r["status"], "interrupted", "{r}");
    assert_eq!(r["timesteps"], 20, "{r}");
    drop(w);
    let m = read_manifest(&d.data_dir(), "sc-1.0002").unwrap();
    assert_eq!(m.status.as_deref(), Some("interrupted"));
    assert_eq!(m.extra["split"]["previous"], "sc-1.0001");
    assert_eq!(check_parts(&d.data_dir(), "sc-1", &ch).1, 70);
}
