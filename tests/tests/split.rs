//! `wshard split` and `[rolling]` against the real daemon with real clients: the parts of a
//! split episode concatenate to exactly the stream the producer sent (values, seqs, t_ns),
//! each part is a normal `complete` episode linked to its neighbours, the producer notices
//! nothing; typed refusals; a SIGKILL right after a split.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;
use wshard::manifest::{read_episode_chunked, Manifest};
use wshard_client::{ChannelSpec, Durability, Outcome, Transport};
use wshard_e2e::check::{assert_verify_ok, manifest_path, read_manifest, wait_final};
use wshard_e2e::{bins, data, Daemon, DaemonOptions, TIMEOUT};

fn control_socket(d: &Daemon) -> PathBuf {
    d.root().join("wshardd-control.sock")
}

/// Run `wshard ARGS --control <socket>`.
fn wshard(d: &Daemon, args: &[&str]) -> Output {
    Command::new(bins::wshard())
        .args(args)
        .arg("--control")
        .arg(control_socket(d))
        .env_remove("WSHARDD_CONFIG")
        .output()
        .expect("cannot run wshard")
}

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

/// Check that part `id` holds exactly the generator's timesteps from producer seq
/// `first_seq` on (channels, reward, done, t_ns, bit for bit); returns its manifest.
fn check_part(data_dir: &Path, id: &str, ch: &[ChannelSpec], first_seq: u64) -> Manifest {
    let m = read_manifest(data_dir, id).unwrap();
    m.validate_continuity().unwrap();
    assert_eq!(m.episode_id, id);
    if m.chunks.is_empty() {
        return m;
    }
    let ep = read_episode_chunked(&manifest_path(data_dir, id)).unwrap();
    assert_eq!(ep.length, m.total_timesteps, "{id}");
    let ts = ep.timestamps_ns.as_ref().unwrap();
    for (i, (got, spec)) in ep.channels.iter().zip(ch).enumerate() {
        let n = data::elements(&spec.shape);
        let sz = n * spec.dtype.size();
        assert_eq!(got.data.len() as u64, sz as u64 * ep.length, "{id}");
        for (k, chunk) in (0u64..).zip(got.data.chunks_exact(sz)) {
            let seq = first_seq + k;
            assert!(
                chunk == data::channel_payload(seq, i, spec.dtype, n).as_slice(),
                "{id}: channel {} differs at producer seq {seq}",
                got.id
            );
        }
    }
    for k in 0..ep.length {
        let seq = first_seq + k;
        let i = usize::try_from(k).unwrap();
        assert_eq!(
            ep.reward[i].to_bits(),
            data::reward(seq).to_bits(),
            "{id} seq {seq}"
        );
        assert_eq!(ep.done[i], data::done(seq), "{id} seq {seq}");
        assert_eq!(ts[i], data::t_ns(seq), "{id} seq {seq}");
    }
    m
}

/// The parts of `ep` in order, following the manifests' `split` links from `ep`; checks
/// each part against the generator and the links both ways; returns the part ids and
/// the timesteps they hold together.
fn check_parts(data_dir: &Path, ep: &str, ch: &[ChannelSpec]) -> (Vec<String>, u64) {
    let mut ids = vec![ep.to_owned()];
    let mut first_seq = 0;
    let mut previous: Option<String> = None;
    loop {
        let id = ids.last().unwrap().clone();
        let m = check_part(data_dir, &id, ch, first_seq);
        let links = m.extra.get("split").cloned();
        let Some(links) = links else {
            // Never split: only the episode itself.
            assert_eq!(ids.len(), 1, "part {id} has no split links");
            return (ids, m.total_timesteps);
        };
        assert_eq!(links["episode"], ep, "{id}: {links}");
        assert_eq!(links["part"], ids.len() as u64 - 1, "{id}: {links}");
        assert_eq!(links["first_seq"], first_seq, "{id}: {links}");
        assert_eq!(
            links["previous"].as_str(),
            previous.as_deref(),
            "{id}: {links}"
        );
        first_seq += m.total_timesteps;
        match links["next"].as_str() {
            Some(next) => {
                assert_eq!(m.status.as_deref(), Some("complete"), "{id}");
                previous = Some(id);
                ids.push(next.to_owned());
            }
            None => return (ids, first_seq),
        }
    }
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
fn split_multi_stream_is_refused() {
    let d = Daemon::start(DaemonOptions::default());
    let mut owner = wshard_e2e::multi::owner(&d.socket(), "multi-1");
    let e = split_refused(&d, "multi-1");
    assert_eq!(e["code"], "NOT_SPLITTABLE", "{e}");
    assert_eq!(e["episode"], "multi-1", "{e}");
    wshard_e2e::multi::episode_close(&mut owner);
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

/// `[rolling]` with `extra` as its keys: `n` timesteps in batches of 10, closed.
fn roll(extra: &str, ep: &str, n: u64) -> (Daemon, Vec<String>) {
    let opts = DaemonOptions {
        extra_toml: format!("[rolling]\n{extra}"),
        ..DaemonOptions::default().rotation(32)
    };
    let d = Daemon::start(opts);
    let ch = data::channels();
    let mut client = d.client("e2e/rolling");
    let mut w = client
        .open_episode(data::open_spec(ep, &ch, Durability::Ack))
        .unwrap();
    for _ in 0..n / 10 {
        data::push_steps(&mut w, &ch, 10).unwrap();
    }
    w.flush().unwrap();
    let o = wshard(&d, &["status", "--json"]);
    let st: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(st["result"]["daemon"]["rolling"]["enabled"], true, "{st}");
    let live = &st["result"]["episodes"][0];
    assert_eq!(live["episode"], ep, "{live}");
    let rolled = live["parts"]["parts_rolled"].as_u64().unwrap();
    assert!(rolled >= 1, "{live}");
    assert_eq!(live["parts"]["part"], format!("{ep}.{rolled:04}"), "{live}");
    let o = wshard(&d, &["metrics"]);
    let metrics = String::from_utf8_lossy(&o.stdout);
    assert!(metrics.contains("wshardd_rolling_enabled 1"), "{metrics}");
    let series = format!(
        "wshardd_episode_parts_rolled_total{{episode=\"{ep}\",part=\"{ep}.{rolled:04}\"}} {rolled}"
    );
    assert!(metrics.contains(&series), "{series} not in {metrics}");
    assert_eq!(w.close(Outcome::Completed).unwrap().timesteps, n);
    let (ids, steps) = check_parts(&d.data_dir(), ep, &ch);
    assert_eq!(steps, n);
    wait_final(&d.data_dir(), ids.last().unwrap(), TIMEOUT).unwrap();
    assert_verify_ok(&d.data_dir());
    (d, ids)
}

#[test]
fn rolling_by_duration_cuts_every_part_at_the_bound() {
    // 100 Hz timesteps: a part spans 0.5 s, i.e. 51 timesteps, cut after the batch of 10
    // that reaches it: 60 timesteps per part.
    let (d, ids) = roll("max_duration_ms = 500\n", "roll-t", 1000);
    assert_eq!(ids.len(), 17, "{ids:?}");
    for id in &ids[..ids.len() - 1] {
        let m = read_manifest(&d.data_dir(), id).unwrap();
        assert_eq!(m.total_timesteps, 60, "{id}");
        assert_eq!(m.status.as_deref(), Some("complete"), "{id}");
    }
}

#[test]
fn rolling_by_size_cuts_every_part_at_the_bound() {
    let step = data::step_bytes(&data::channels()) as u64;
    // Reached by the 25th timestep: the batch of 10 that gets there ends the part (30).
    let extra = format!("max_bytes = {}\n", step * 25);
    let (d, ids) = roll(&extra, "roll-b", 600);
    assert_eq!(ids.len(), 20, "{ids:?}");
    for id in &ids {
        let m = read_manifest(&d.data_dir(), id).unwrap();
        assert_eq!(m.total_timesteps, 30, "{id}");
    }
}

/// A daemon uploading to `s3` with `publish` lines in `[publish]` and `rolling` lines in
/// `[rolling]`.
fn quota_daemon(s3: &wshard_e2e::s3::S3Server, publish: &str, rolling: &str) -> Daemon {
    wshard_e2e::upload::set_credentials();
    Daemon::start(DaemonOptions {
        extra_toml: format!(
            "{}\n[rolling]\n{rolling}\n",
            wshard_e2e::upload::publish_toml(s3.endpoint(), publish)
        ),
        ..DaemonOptions::default()
    })
}

/// `status.episodes[0].parts` and `status.daemon.quota`.
fn parts_and_quota(d: &Daemon) -> (Value, Value) {
    let s = wshard_e2e::upload::status(d);
    (
        s["episodes"][0]["parts"].clone(),
        s["daemon"]["quota"].clone(),
    )
}

#[test]
fn rolling_quota_evicts_published_parts_oldest_first_never_the_open_one() {
    let s3 = wshard_e2e::s3::S3Server::start();
    // Parts of 2 MiB (two 1 MiB timesteps), a quota of 5 MiB.
    let d = quota_daemon(&s3, "quota_bytes = 5242880", "max_bytes = 2097152");
    let ch = wshard_e2e::upload::big_channels();
    let ep = "q-roll";
    let mut client = d.client("e2e/quota");
    let mut w = client
        .open_episode(data::open_spec(ep, &ch, Durability::Ack))
        .unwrap();
    let mut evicted_seen = 0;
    for _ in 0..16 {
        data::push_steps(&mut w, &ch, 1).unwrap();
        w.flush().unwrap();
        // The part recording is never evicted.
        let (parts, _) = parts_and_quota(&d);
        let part = parts["part"].as_str().unwrap().to_owned();
        assert!(d.data_dir().join(&part).is_dir(), "{part} gone while open");
        std::thread::sleep(Duration::from_millis(120));
        let up = wshard_e2e::upload::status(&d)["upload"].clone();
        evicted_seen = evicted_seen.max(wshard_e2e::upload::queued(&up, "evicted"));
    }
    assert_eq!(w.close(Outcome::Completed).unwrap().timesteps, 16);
    // Eight parts; the quota keeps about two of them; the rest are evicted, oldest first,
    // each only once its remote copy is verified.
    let up = wshard_e2e::upload::wait_upload(
        &d,
        wshard_e2e::upload::UPLOAD_TIMEOUT,
        "all published, the oldest evicted",
        |u| {
            wshard_e2e::upload::queued(u, "published") + wshard_e2e::upload::queued(u, "evicted")
                == 8
                && wshard_e2e::upload::queued(u, "evicted") >= 5
        },
    );
    let evicted = wshard_e2e::upload::queued(&up, "evicted");
    assert!(evicted_seen >= 1, "nothing evicted while recording");
    let ids: Vec<String> = (0..8)
        .map(|n| {
            if n == 0 {
                ep.to_owned()
            } else {
                format!("{ep}.{n:04}")
            }
        })
        .collect();
    for (n, id) in ids.iter().enumerate() {
        let gone = !d.data_dir().join(id).exists();
        assert_eq!(
            gone,
            (n as u64) < evicted,
            "{id}: oldest first ({evicted} evicted)"
        );
        if gone {
            wshard_e2e::upload::assert_remote_episode_verifies(
                &s3,
                "",
                &format!("{}/{id}", wshard_e2e::upload::ROBOT),
            );
        }
    }
    let (_, quota) = parts_and_quota(&d);
    assert_eq!(quota["exceeded"], false, "{quota}");
    assert!(
        quota["kept_bytes"].as_u64().unwrap() <= 5_242_880,
        "{quota}"
    );
}

#[test]
fn rolling_quota_stop_rolling_stops_recording_while_kept_exceeds_quota() {
    let mut s3 = wshard_e2e::s3::S3Server::start();
    s3.stop();
    // Parts of 1 MiB, a quota of 3 MiB, and the store down: nothing can be evicted.
    let d = quota_daemon(
        &s3,
        "quota_bytes = 3145728",
        "max_bytes = 1048576\nquota_policy = \"stop_rolling\"",
    );
    let ch = wshard_e2e::upload::big_channels();
    let ep = "q-stop";
    let mut client = d.client("e2e/quota-stop");
    let mut w = client
        .open_episode(data::open_spec(ep, &ch, Durability::Ack))
        .unwrap();
    // Recording goes on until the quota is exceeded; then the episode is stopped.
    let deadline = Instant::now() + TIMEOUT;
    let mut acked = 0;
    let err = loop {
        match data::push_steps(&mut w, &ch, 1).and_then(|_| w.flush()) {
            Ok(durable) => acked = durable,
            Err(e) => break e,
        }
        assert!(
            Instant::now() < deadline,
            "never stopped: {:?}",
            parts_and_quota(&d)
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    match &err {
        wshard_client::ClientError::Server { code, message } => {
            assert_eq!(*code, wshard_client::ErrorCode::Stopped, "{message}");
            assert!(message.contains("quota"), "{message}");
        }
        other => panic!("expected ERROR STOPPED, got {other:?}"),
    }
    drop(w);
    let (_, quota) = parts_and_quota(&d);
    assert_eq!(quota["exceeded"], true, "{quota}");
    assert_eq!(quota["rolling_suspended"], true, "{quota}");
    let o = wshard(&d, &["metrics"]);
    let metrics = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(metrics.contains("wshardd_quota_exceeded 1"), "{metrics}");
    assert!(
        metrics.contains("wshardd_quota_rolling_suspended 1"),
        "{metrics}"
    );
    // A new episode is refused while it lasts, naming the quota.
    let mut c2 = d.client("e2e/quota-stop-2");
    match c2.open_episode(data::open_spec("q-stop-2", &ch, Durability::Ack)) {
        Err(wshard_client::ClientError::Server { code, message }) => {
            assert_eq!(code, wshard_client::ErrorCode::DiskLow, "{message}");
            assert!(message.contains("publish.quota_bytes"), "{message}");
        }
        other => panic!("OPEN accepted over the quota: {:?}", other.map(|_| ())),
    }
    // Every part is there: the last one `interrupted` for the quota; together the stream.
    let mut first_seq = 0;
    let mut n = 0;
    loop {
        let id = if n == 0 {
            ep.to_owned()
        } else {
            format!("{ep}.{n:04}")
        };
        if !d.data_dir().join(&id).exists() {
            break;
        }
        let m = wait_final(&d.data_dir(), &id, TIMEOUT).unwrap();
        let m2 = check_part(&d.data_dir(), &id, &ch, first_seq);
        first_seq += m2.total_timesteps;
        if m.extra["split"]["next"].is_null() {
            assert_eq!(m.status.as_deref(), Some("interrupted"), "{id}");
            assert!(
                m.extra["reason"].as_str().unwrap().contains("quota"),
                "{id}"
            );
        } else {
            assert_eq!(m.status.as_deref(), Some("complete"), "{id}");
        }
        n += 1;
    }
    assert!(n >= 3, "{n} parts");
    assert!(first_seq >= acked, "{first_seq} < {acked}");
    // The store comes back: the parts are published and evicted, the quota passes, and
    // recording is accepted again.
    s3.start_again_same_port();
    let deadline = Instant::now() + wshard_e2e::upload::UPLOAD_TIMEOUT;
    while parts_and_quota(&d).1["exceeded"] != false {
        assert!(
            Instant::now() < deadline,
            "quota never passed: {:?}",
            parts_and_quota(&d)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut c3 = d.client("e2e/quota-stop-3");
    let mut w = c3
        .open_episode(data::open_spec("q-stop-3", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 1).unwrap();
    assert_eq!(w.close(Outcome::Completed).unwrap().timesteps, 1);
}

/// Three hours of a 1 Hz producer (simulated `t_ns`, 4 KiB timesteps) recorded in
/// seconds on a 32 MiB tmpfs under `[rolling] max_duration_ms` of 599 s (600 timesteps,
/// first to last) and a quota
/// of 8 MiB, the store up: 18 consecutive parts; the part recording is never evicted, an
/// evicted part is always one verified on the store, oldest first; while the uploader
/// keeps up, the data directory never holds more than the quota and the part recording.
#[test]
fn rolling_hours_on_a_tmpfs_never_over_the_quota() {
    if let Err(why) =
        wshard_e2e::privileged::require_root("rolling_hours_on_a_tmpfs_never_over_the_quota")
    {
        println!("skipped: {why}");
        return;
    }
    const MIB: u64 = 1 << 20;
    const QUOTA: u64 = 8 * MIB;
    const STEP: u64 = 4096;
    const PART_STEPS: u64 = 600;
    const PARTS: u64 = 18;
    let s3 = wshard_e2e::s3::S3Server::start();
    wshard_e2e::upload::set_credentials();
    let opts = DaemonOptions {
        data_subdir: "fs/data".into(),
        disk_low_watermark: 2 * MIB,
        disk_high_watermark: MIB,
        extra_toml: format!(
            "{}\n[rolling]\nmax_duration_ms = 599000\n",
            wshard_e2e::upload::publish_toml(s3.endpoint(), &format!("quota_bytes = {QUOTA}"))
        ),
        ..DaemonOptions::default()
    };
    let mut d = Daemon::new(opts);
    let _fs = match wshard_e2e::privileged::Tmpfs::mount(&d.root().join("fs"), "32m") {
        Ok(fs) => fs,
        Err(why) => {
            println!("skipped: cannot mount a tmpfs: {why}");
            return;
        }
    };
    d.spawn();
    d.wait_ready();
    let ch = vec![ChannelSpec::new(
        "blob",
        wshard::episode::Lane::Signal,
        wshard::episode::DType::U8,
        vec![u32::try_from(STEP).unwrap()],
    )
    .with_codec(wshard_client::CodecChoice::None)];
    let ep = "hours";
    let mut client = d.client("e2e/hours");
    let mut w = client
        .open_episode(data::open_spec(ep, &ch, Durability::Ack))
        .unwrap();
    let data_dir = d.data_dir();
    let mut max_seen = 0;
    for minute in 0..PARTS * 10 {
        // One simulated minute: 60 timesteps one second apart.
        let first = minute * 60;
        let payloads: Vec<Vec<u8>> = (first..first + 60)
            .map(|s| data::channel_payload(s, 0, wshard::episode::DType::U8, STEP as usize))
            .collect();
        let refs: Vec<[&[u8]; 1]> = payloads.iter().map(|p| [p.as_slice()]).collect();
        let steps: Vec<wshard_client::Step<'_>> = refs
            .iter()
            .zip(first..)
            .map(|(r, s)| wshard_client::Step {
                t_ns: 1_700_000_000_000_000_000 + i64::try_from(s).unwrap() * 1_000_000_000,
                reward: data::reward(s),
                done: false,
                payloads: r,
            })
            .collect();
        w.push_batch(&steps).unwrap();
        w.flush().unwrap();
        let (parts, _) = parts_and_quota(&d);
        let part = parts["part"].as_str().unwrap().to_owned();
        assert!(data_dir.join(&part).is_dir(), "{part} gone while recording");
        if minute % 10 == 9 {
            // Let the uploader catch up with the finished parts, then measure.
            wshard_e2e::upload::wait_upload(
                &d,
                wshard_e2e::upload::UPLOAD_TIMEOUT,
                "finished parts published",
                |u| {
                    wshard_e2e::upload::queued(u, "queued")
                        + wshard_e2e::upload::queued(u, "uploading")
                        + wshard_e2e::upload::queued(u, "uploaded")
                        == 0
                },
            );
            std::thread::sleep(Duration::from_millis(250));
            let used = wshard_e2e::check::walk(&data_dir)
                .iter()
                .filter_map(|p| std::fs::metadata(p).ok())
                .map(|m| m.len())
                .sum::<u64>();
            max_seen = max_seen.max(used);
            // The quota, plus the part recording (a part's payload and its journal).
            let open_part = PART_STEPS * STEP * 2;
            assert!(
                used <= QUOTA + open_part,
                "minute {minute}: {used} bytes in the data directory, quota {QUOTA}"
            );
        }
    }
    assert_eq!(
        w.close(Outcome::Completed).unwrap().timesteps,
        PARTS * PART_STEPS
    );
    let up = wshard_e2e::upload::wait_upload(
        &d,
        wshard_e2e::upload::UPLOAD_TIMEOUT,
        "every part published or evicted",
        |u| {
            wshard_e2e::upload::queued(u, "published") + wshard_e2e::upload::queued(u, "evicted")
                == PARTS
        },
    );
    let evicted = wshard_e2e::upload::queued(&up, "evicted");
    assert!(evicted >= PARTS - 4, "{up}");
    for n in 0..PARTS {
        let id = if n == 0 {
            ep.to_owned()
        } else {
            format!("{ep}.{n:04}")
        };
        let gone = !data_dir.join(&id).exists();
        assert_eq!(gone, n < evicted, "{id}: oldest first ({evicted} evicted)");
        if gone {
            wshard_e2e::upload::assert_remote_episode_verifies(
                &s3,
                "",
                &format!("{}/{id}", wshard_e2e::upload::ROBOT),
            );
        } else {
            let m = read_manifest(&data_dir, &id).unwrap();
            assert_eq!(m.status.as_deref(), Some("complete"), "{id}");
            assert_eq!(m.total_timesteps, PART_STEPS, "{id}");
        }
    }
    println!("max data directory size seen: {max_seen} bytes (quota {QUOTA})");
}
