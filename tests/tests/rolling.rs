//! `[rolling]` against the real daemon with real clients: every episode cut into
//! consecutive parts by size or by `t_ns` span, each `complete` and linked, their
//! concatenation the stream sent; with the uploader and `publish.quota_bytes`: published
//! parts evicted oldest first, never the part recording or one not on the store, three
//! simulated hours on a tmpfs under the quota, and `rolling.quota_policy = "stop_rolling"`.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::time::{Duration, Instant};

use serde_json::Value;
use wshard_client::{ChannelSpec, Durability, Outcome};
use wshard_e2e::check::{assert_verify_ok, read_manifest, wait_final};
use wshard_e2e::parts::{check_part, check_parts, wshard};
use wshard_e2e::{data, Daemon, DaemonOptions, TIMEOUT};

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
    let o = wshard(&d, &["status"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("rolling         on: parts of at most"),
        "{text}"
    );
    let line = format!(
        "parts of {ep}: recording {ep}.{rolled:04} ({rolled} finished, {rolled} by rolling)"
    );
    assert!(text.contains(&line), "{line} not in {text}");
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
