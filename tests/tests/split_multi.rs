//! `wshard split` of a multi-stream episode against the real daemon with real producers:
//! every stream is cut into the next part (`EP.000N/streams/STREAM/`); each stream's parts
//! concatenate to exactly what its producer sent (bit-exact, no gap, no duplicate), each
//! part is a `complete` multi-stream episode whose index agrees with its streams and is
//! linked to its neighbours, and each part verifies; events after a cut, and streams
//! opened after it, go to the part recording then; a stream alone is not split.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::path::Path;
use std::process::Output;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use wshard::episode_dir::index::EpisodeStatus;
use wshard_e2e::check::assert_verify_ok;
use wshard_e2e::multi::{
    check_index_consistent, episode_close, event, owner, producer, read_events, rolling_pair,
    stream_spec, wait_index_final, RollingPair,
};
use wshard_e2e::parts::{check_part, part_id, wshard};
use wshard_e2e::{data, Daemon, DaemonOptions, TIMEOUT};
use wshard_ingest_proto::{ChannelSpec, Durability, Outcome};

fn text(o: &Output) -> String {
    wshard_e2e::check::output_text(o)
}

/// `wshard split EP --json`: the exit code and the reply document.
fn split(d: &Daemon, ep: &str) -> (Option<i32>, Value) {
    let o = wshard(d, &["split", ep, "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("wshard split {ep}: not JSON ({e}): {}", text(&o)));
    (o.status.code(), v)
}

/// A split that must succeed (retried while a stream holds no timestep of the part yet);
/// returns (finished, recording).
fn split_ok(d: &Daemon, ep: &str) -> (String, String) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let (code, v) = split(d, ep);
        if code == Some(1) && v["error"]["code"] == "EMPTY_PART" && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        assert_eq!(code, Some(0), "{v}");
        let r = &v["result"];
        assert_eq!(r["episode"], ep, "{r}");
        assert!(r["not_cut"].as_array().unwrap().is_empty(), "{r}");
        return (
            r["finished"].as_str().unwrap().to_owned(),
            r["recording"].as_str().unwrap().to_owned(),
        );
    }
}

/// A stream of the episode: its name, channels and how many timesteps were sent.
struct Sent<'a> {
    name: &'a str,
    channels: &'a [ChannelSpec],
    steps: u64,
}

/// Follow the parts of `ep` (`ep`, `ep.0001`, ... while they exist): each is `complete`,
/// its index agrees with its streams and links its neighbours, it verifies; each stream's
/// parts hold exactly the producer's timesteps, in order, from seq 0 to what was sent.
/// Returns the part ids.
fn check_multi_parts(dd: &Path, ep: &str, sent: &[Sent<'_>]) -> Vec<String> {
    let mut next_seq: Vec<u64> = vec![0; sent.len()];
    let mut ids = Vec::new();
    let mut n = 0;
    while dd.join(part_id(ep, n)).exists() {
        let id = part_id(ep, n);
        let index = wait_index_final(dd, &id, TIMEOUT).unwrap();
        let index = check_index_consistent(dd, &id).unwrap_or_else(|e| panic!("{e} ({index:?})"));
        assert_eq!(index.status, EpisodeStatus::Complete, "{id}");
        assert!(index.closed, "{id}");
        let links = index.metadata.get("split").cloned().unwrap_or(Value::Null);
        let later = dd.join(part_id(ep, n + 1)).exists();
        if n > 0 || later {
            assert_eq!(links["episode"], ep, "{id}: {links}");
            assert_eq!(links["part"], n, "{id}: {links}");
            let previous = (n > 0).then(|| part_id(ep, n - 1));
            assert_eq!(
                links["previous"],
                serde_json::json!(previous),
                "{id}: {links}"
            );
            if later {
                assert_eq!(links["next"], part_id(ep, n + 1), "{id}: {links}");
            }
        }
        let streams = dd.join(&id).join("streams");
        for (k, s) in sent.iter().enumerate() {
            let Some(entry) = index.stream(s.name) else {
                continue;
            };
            assert_eq!(entry.status, EpisodeStatus::Complete, "{id}/{}", s.name);
            let m = check_part(&streams, s.name, s.channels, next_seq[k]);
            if let Some(l) = m.extra.get("split") {
                assert_eq!(l["first_seq"], next_seq[k], "{id}/{}: {l}", s.name);
                assert_eq!(l["episode"], ep, "{id}/{}: {l}", s.name);
                assert_eq!(l["part"], n, "{id}/{}: {l}", s.name);
            }
            // Only a rolling cut right before the producers closed leaves a stream's last
            // part empty.
            assert!(
                m.total_timesteps > 0 || !later,
                "{id}/{}: an empty part",
                s.name
            );
            next_seq[k] += m.total_timesteps;
        }
        assert_verify_ok(&streams);
        ids.push(id);
        n += 1;
    }
    for (k, s) in sent.iter().enumerate() {
        assert_eq!(
            next_seq[k], s.steps,
            "stream {}: parts hold {} of {}",
            s.name, next_seq[k], s.steps
        );
    }
    ids
}

/// Stream `seqs` batches of 1 to 7 timesteps on `c` until `stop`, then `tail` more,
/// flushing now and then; returns how many were sent (all durable).
fn stream_until(
    c: &mut wshard_e2e::raw::RawConn,
    ch: &[ChannelSpec],
    stop: &AtomicBool,
    pause: Duration,
    tail: u64,
    sent_now: &AtomicU64,
) -> u64 {
    let mut sent = 0;
    let mut until = u64::MAX;
    while sent < until {
        if until == u64::MAX && stop.load(Ordering::Acquire) {
            until = sent + tail;
        }
        let n = (sent % 7 + 1).min(until - sent);
        c.timesteps(ch, sent..sent + n);
        sent += n;
        sent_now.store(sent, Ordering::Release);
        if sent % 50 < 7 {
            c.flush_until(sent.saturating_sub(n));
        }
        std::thread::sleep(pause);
    }
    c.flush_until(sent);
    sent
}

/// Sets its flag when dropped (also while unwinding).
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

#[test]
fn split_multi_two_producers_parts_concatenate() {
    const EP: &str = "msplit-1";
    let d = Daemon::start(DaemonOptions::default().rotation(8));
    let dd = d.data_dir();
    let joints_ch = data::channels();
    let imu_ch = data::small_channels();
    let joints = stream_spec(EP, "joints", &joints_ch, 1000.0, Durability::Ack);
    let imu = stream_spec(EP, "imu", &imu_ch, 200.0, Durability::Chunk);
    let mut o = owner(&d.socket(), EP);
    let stop = AtomicBool::new(false);
    let (a_now, b_now) = (AtomicU64::new(0), AtomicU64::new(0));
    let mut splits = Vec::new();
    let (a_sent, b_sent) = std::thread::scope(|s| {
        let a = s.spawn(|| {
            let mut c = producer(&d.socket(), &joints);
            let n = stream_until(
                &mut c,
                &joints_ch,
                &stop,
                Duration::from_micros(300),
                200,
                &a_now,
            );
            c.close(Outcome::Completed, n);
            n
        });
        let b = s.spawn(|| {
            let mut c = producer(&d.socket(), &imu);
            let n = stream_until(&mut c, &imu_ch, &stop, Duration::from_millis(2), 40, &b_now);
            c.close(Outcome::Completed, n);
            n
        });
        // A failed check below stops the producers too (else the scope waits forever).
        let _stop = StopOnDrop(&stop);
        for k in 0..3u64 {
            std::thread::sleep(Duration::from_millis(120));
            splits.push(split_ok(&d, EP));
            // An event after the cut goes to the part recording now.
            assert_eq!(
                event(&mut o, data::t_ns(k), "cut", &format!("after cut {k}")),
                0
            );
        }
        std::thread::sleep(Duration::from_millis(120));
        stop.store(true, Ordering::Release);
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_eq!(episode_close(&mut o), 0);
    assert_eq!(
        splits,
        vec![
            (EP.to_owned(), format!("{EP}.0001")),
            (format!("{EP}.0001"), format!("{EP}.0002")),
            (format!("{EP}.0002"), format!("{EP}.0003")),
        ]
    );
    let ids = check_multi_parts(
        &dd,
        EP,
        &[
            Sent {
                name: "joints",
                channels: &joints_ch,
                steps: a_sent,
            },
            Sent {
                name: "imu",
                channels: &imu_ch,
                steps: b_sent,
            },
        ],
    );
    assert_eq!(ids.len(), 4, "{ids:?}");
    // Each part after a cut holds the one event sent after it.
    assert!(read_events(&dd, EP).map_or(true, |e| e.is_empty()));
    for k in 1..=3u64 {
        let ev = read_events(&dd, &part_id(EP, k)).unwrap();
        assert_eq!(ev.len(), 1, "{}", part_id(EP, k));
        assert_eq!(
            ev[0].data,
            wshard::episode_dir::events::EventData::Text(format!("after cut {}", k - 1))
        );
    }
}

#[test]
fn split_multi_stream_opened_after_a_cut_joins_the_current_part() {
    const EP: &str = "msplit-join";
    let d = Daemon::start(DaemonOptions::default().rotation(8));
    let dd = d.data_dir();
    let ch = data::channels();
    let small = data::small_channels();
    let mut o = owner(&d.socket(), EP);
    let mut a = producer(
        &d.socket(),
        &stream_spec(EP, "joints", &ch, 1000.0, Durability::Ack),
    );
    a.timesteps(&ch, 0..20);
    a.flush_until(20);
    assert_eq!(split_ok(&d, EP), (EP.to_owned(), format!("{EP}.0001")));
    // `episodes`: the finished part from its index, the part recording as open.
    let listed = wshard(&d, &["episodes", "--json"]);
    let v: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let list = v["result"]["episodes"].as_array().unwrap().clone();
    let find = |id: &str| list.iter().find(|e| e["episode"] == id).cloned().unwrap();
    assert_eq!(find(EP)["open"], false, "{list:?}");
    assert_eq!(find(EP)["status"], "complete", "{list:?}");
    assert_eq!(find(&format!("{EP}.0001"))["open"], true, "{list:?}");
    assert_eq!(find(&format!("{EP}.0001"))["part_of"], EP, "{list:?}");
    let mut b = producer(
        &d.socket(),
        &stream_spec(EP, "imu", &small, 200.0, Durability::Ack),
    );
    assert!(dd.join(format!("{EP}.0001/streams/imu")).is_dir());
    assert!(!dd.join(format!("{EP}/streams/imu")).exists());
    a.timesteps(&ch, 20..35);
    b.timesteps(&small, 0..9);
    a.flush_until(35);
    b.flush_until(9);
    // Named by the part recording now, the episode is split as well.
    assert_eq!(
        split_ok(&d, &format!("{EP}.0001")),
        (format!("{EP}.0001"), format!("{EP}.0002"))
    );
    a.timesteps(&ch, 35..41);
    b.timesteps(&small, 9..12);
    a.close(Outcome::Completed, 41);
    b.close(Outcome::Completed, 12);
    assert_eq!(episode_close(&mut o), 0);
    let ids = check_multi_parts(
        &dd,
        EP,
        &[
            Sent {
                name: "joints",
                channels: &ch,
                steps: 41,
            },
            Sent {
                name: "imu",
                channels: &small,
                steps: 12,
            },
        ],
    );
    assert_eq!(ids.len(), 3);
    let first = check_index_consistent(&dd, EP).unwrap();
    assert!(first.stream("imu").is_none(), "imu joined after the cut");
}

#[test]
fn split_multi_stream_alone_is_refused_and_empty_stream_named() {
    const EP: &str = "msplit-refused";
    let d = Daemon::start(DaemonOptions::default());
    let ch = data::channels();
    let mut o = owner(&d.socket(), EP);
    let mut a = producer(
        &d.socket(),
        &stream_spec(EP, "joints", &ch, 1000.0, Durability::Ack),
    );
    // A stream is never split alone.
    let (code, v) = split(&d, &format!("{EP}/joints"));
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(v["error"]["code"], "NOT_SPLITTABLE", "{v}");
    // A stream with no timestep in the part: refused, naming it; nothing cut.
    let (code, v) = split(&d, EP);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(v["error"]["code"], "EMPTY_PART", "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("`joints`"),
        "{v}"
    );
    assert!(!d.data_dir().join(format!("{EP}.0001")).exists());
    a.timesteps(&ch, 0..10);
    a.close(Outcome::Completed, 10);
    assert_eq!(episode_close(&mut o), 0);
    // Finalized: nothing to split.
    let (code, v) = split(&d, EP);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(v["error"]["code"], "UNKNOWN_EPISODE", "{v}");
    let ids = check_multi_parts(
        &d.data_dir(),
        EP,
        &[Sent {
            name: "joints",
            channels: &ch,
            steps: 10,
        }],
    );
    assert_eq!(ids, [EP]);
}

#[test]
fn split_multi_then_sigkill_keeps_every_acknowledged_step_once() {
    const EP: &str = "msplit-kill";
    let mut d = Daemon::start(DaemonOptions::default().rotation(40));
    let ch = data::channels();
    let small = data::small_channels();
    let (a_acked, b_acked);
    {
        let mut o = owner(&d.socket(), EP);
        let mut a = producer(
            &d.socket(),
            &stream_spec(EP, "joints", &ch, 1000.0, Durability::Ack),
        );
        let mut b = producer(
            &d.socket(),
            &stream_spec(EP, "imu", &small, 200.0, Durability::Ack),
        );
        a.timesteps(&ch, 0..130);
        b.timesteps(&small, 0..26);
        a.flush_until(130);
        b.flush_until(26);
        split_ok(&d, EP);
        a.timesteps(&ch, 130..200);
        b.timesteps(&small, 26..40);
        a.flush_until(200);
        b.flush_until(40);
        split_ok(&d, EP);
        event(&mut o, data::t_ns(1), "cut", "in the last part");
        a.timesteps(&ch, 200..255);
        b.timesteps(&small, 40..51);
        a_acked = a.flush_until(255);
        b_acked = b.flush_until(51);
        d.kill9();
    }
    d.restart();
    // Recovery settles every part; each stream's parts hold its acknowledged timesteps
    // exactly once; the last part keeps its event and its link back.
    let dd = d.data_dir();
    let mut next = [0u64; 2];
    for n in 0..3u64 {
        let id = part_id(EP, n);
        let index = wait_index_final(&dd, &id, TIMEOUT).unwrap();
        let index = check_index_consistent(&dd, &index.episode_id).unwrap();
        assert!(
            matches!(
                index.status,
                EpisodeStatus::Complete | EpisodeStatus::Recovered
            ),
            "{id}: {}",
            index.status
        );
        let streams = dd.join(&id).join("streams");
        for (k, (name, channels)) in [("joints", &ch), ("imu", &small)].into_iter().enumerate() {
            let m = check_part(&streams, name, channels, next[k]);
            next[k] += m.total_timesteps;
        }
        assert_verify_ok(&streams);
    }
    assert!(!dd.join(part_id(EP, 3)).exists());
    assert_eq!(next, [a_acked, b_acked]);
    let last = wshard_e2e::multi::read_index(&dd, &part_id(EP, 2)).unwrap();
    assert_eq!(last.metadata["split"]["previous"], part_id(EP, 1));
    assert_eq!(read_events(&dd, &part_id(EP, 2)).unwrap().len(), 1);
}

#[test]
fn rolling_multi_cuts_every_stream_by_the_episode_total() {
    const EP: &str = "mroll-1";
    let ch = data::channels();
    let small = data::small_channels();
    let RollingPair {
        d,
        owner: mut o,
        joints: mut a,
        imu: mut b,
    } = rolling_pair(EP, 60, Durability::Chunk);
    let dd = d.data_dir();
    for k in 0..40u64 {
        a.timesteps(&ch, k * 10..k * 10 + 10);
        b.timesteps(&small, k * 2..k * 2 + 2);
        a.flush_until(k * 10 + 10);
        b.flush_until(k * 2 + 2);
        std::thread::sleep(Duration::from_millis(5));
    }
    a.close(Outcome::Completed, 400);
    b.close(Outcome::Completed, 80);
    assert_eq!(episode_close(&mut o), 0);
    let ids = check_multi_parts(
        &dd,
        EP,
        &[
            Sent {
                name: "joints",
                channels: &ch,
                steps: 400,
            },
            Sent {
                name: "imu",
                channels: &small,
                steps: 80,
            },
        ],
    );
    // 400 joints timesteps, cut at about 60 (plus the imu's few bytes): several parts.
    assert!(ids.len() >= 4, "{ids:?}");
    // Each finished part holds about the bound (the cut is made after the bound is seen,
    // while the producers go on).
    for id in &ids[..ids.len() - 1] {
        let ix = check_index_consistent(&dd, id).unwrap();
        assert!(ix.stream("joints").unwrap().steps >= 50, "{id}: {ix:?}");
    }
}
