//! Recording through the real daemon with the Rust client, reading back with the format
//! library, and checking with `wshard verify`.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use wshard::episode::{Episode, Timebase};
use wshard::manifest::read_episode_chunked;
use wshard_client::{Durability, Outcome, TimebaseSpec};
use wshard_e2e::check::{self, assert_verify_ok, check_episode};
use wshard_e2e::{data, Daemon, DaemonOptions, Rng};

/// Nothing half-done may stay in the episode directories once every episode is final.
fn assert_no_leftovers(d: &Daemon) {
    let dd = d.data_dir();
    assert_eq!(
        check::episode_files_ending(&dd, ".partial"),
        Vec::<std::path::PathBuf>::new()
    );
    assert_eq!(
        check::episode_files_ending(&dd, ".wal"),
        Vec::<std::path::PathBuf>::new()
    );
    assert_eq!(
        check::episode_files_ending(&dd, ".tmp"),
        Vec::<std::path::PathBuf>::new()
    );
    assert!(check::quarantine_files(&dd).is_empty());
}

#[test]
fn e2e_record_close_read_back_bit_exact() {
    let d = Daemon::start(DaemonOptions::default());
    let ch = data::channels();
    let mut client = d.client("e2e/basic");
    assert!(client.server_info().server_name.starts_with("wshardd/"));

    // Episode 1: ticks, uneven batches, then single pushes.
    let w = client
        .open_episode(data::open_spec("ep-ticks", &ch, Durability::Ack))
        .unwrap();
    data::record_600_mixed_and_close(w, &ch);

    // Episode 2 on the same connection: per-step timestamps.
    let mut spec = data::open_spec("ep-stamps", &ch, Durability::Ack);
    spec.timebase = TimebaseSpec::TimestampsNs { nominal_hz: 100.0 };
    let mut w = client.open_episode(spec).unwrap();
    data::push_steps(&mut w, &ch, 250).unwrap();
    let summary = w.close(Outcome::Completed).unwrap();
    assert_eq!((summary.timesteps, summary.durable_up_to), (250, 250));

    let dd = d.data_dir();
    for (id, n, timebase) in [
        ("ep-ticks", 600, Timebase::Ticks { tick_hz: 100.0 }),
        (
            "ep-stamps",
            250,
            Timebase::TimestampsNs { dt_ns: 10_000_000 },
        ),
    ] {
        let st = check_episode(&dd, id, &ch).unwrap();
        assert_eq!(
            (st.status.as_str(), st.timesteps, st.chunks),
            ("complete", n, 1)
        );
        assert_eq!(st.manifest.env_id, data::ENV_ID);
        let ep = read_episode_chunked(&check::manifest_path(&dd, id)).unwrap();
        assert_eq!(ep.id, id);
        assert_eq!(ep.env_id, data::ENV_ID);
        assert_eq!(ep.timebase, timebase);
        let want: serde_json::Value = serde_json::from_str(data::METADATA_JSON).unwrap();
        assert_eq!(serde_json::Value::Object(ep.metadata.clone()), want);
        let cam = ep.channel("cam/rgb").unwrap();
        assert_eq!(cam.modality.as_deref(), Some("rgb"));
    }
    assert_no_leftovers(&d);
    assert_verify_ok(&dd);
}

#[test]
fn e2e_rotation_into_several_chunks() {
    let d = Daemon::start(DaemonOptions::default().rotation(100));
    let ch = data::channels();
    let mut client = d.client("e2e/rotation");
    let mut w = client
        .open_episode(data::open_spec("rot", &ch, Durability::Ack))
        .unwrap();
    while w.next_seq() < 1050 {
        let n = (1050 - w.next_seq()).min(64);
        data::push_steps(&mut w, &ch, n).unwrap();
    }
    assert_eq!(w.close(Outcome::Completed).unwrap().timesteps, 1050);

    let dd = d.data_dir();
    let st = check_episode(&dd, "rot", &ch).unwrap();
    assert_eq!(
        (st.status.as_str(), st.timesteps, st.chunks),
        ("complete", 1050, 11)
    );
    for (k, c) in st.manifest.chunks.iter().enumerate() {
        let k = k as u64;
        let len = if k == 10 { 50 } else { 100 };
        assert_eq!(c.chunk_index, k);
        assert_eq!(c.uri, format!("rot_chunk_{k:04}.wshard"));
        assert_eq!(c.timestep_range, [k * 100, k * 100 + len - 1]);
        assert_eq!(c.length_t, len);
        let part = Episode::read_file(dd.join("rot").join(&c.uri)).unwrap();
        assert_eq!(part.length, len);
        assert_eq!(part.chunk.map(|i| i.chunk_index), Some(k));
        assert_eq!(part.timestep_range, Some([k * 100, k * 100 + len - 1]));
    }
    assert_no_leftovers(&d);
    assert_verify_ok(&dd);
}

#[test]
fn e2e_concurrent_clients() {
    let d = Daemon::start(DaemonOptions::default().rotation(150));
    let ch = data::channels();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (d, ch) = (&d, &ch);
            s.spawn(move || {
                let mut rng = Rng::new(0xC0FFEE + t);
                let mut client = d.client(&format!("e2e/concurrent-{t}"));
                let id = format!("conc-{t}");
                let mut w = client
                    .open_episode(data::open_spec(&id, ch, Durability::Ack))
                    .unwrap();
                let total = 700 + 50 * t;
                while w.next_seq() < total {
                    let n = rng.range(1, 80).min(total - w.next_seq());
                    data::push_steps(&mut w, ch, n).unwrap();
                    if rng.chance(1, 8) {
                        assert!(w.flush().unwrap() >= w.next_seq());
                    }
                }
                let summary = w.close(Outcome::Completed).unwrap();
                assert_eq!((summary.timesteps, summary.durable_up_to), (total, total));
            });
        }
    });
    let dd = d.data_dir();
    assert_eq!(check::episode_ids(&dd).len(), 4);
    for t in 0..4u64 {
        let st = check_episode(&dd, &format!("conc-{t}"), &ch).unwrap();
        let total = 700 + 50 * t;
        assert_eq!((st.status.as_str(), st.timesteps), ("complete", total));
        assert_eq!(st.chunks as u64, total.div_ceil(150));
    }
    assert_no_leftovers(&d);
    assert_verify_ok(&dd);
}

#[test]
fn e2e_chunk_durability_class() {
    let d = Daemon::start(DaemonOptions::default().rotation(100));
    let ch = data::channels();
    let dd = d.data_dir();
    let mut client = d.client("e2e/chunk");
    let mut w = client
        .open_episode(data::open_spec("chunky", &ch, Durability::Chunk))
        .unwrap();
    for _ in 0..5 {
        data::push_steps(&mut w, &ch, 50).unwrap();
    }
    // DURABLE comes with finalized chunks only: 2 chunks of 100, not the open 50.
    w.wait_durable(199).unwrap();
    assert_eq!(w.durable_seq(), 200);
    // No journal in durability `chunk`.
    assert!(check::episode_files_ending(&dd, ".wal").is_empty());
    let summary = w.close(Outcome::Completed).unwrap();
    assert_eq!((summary.timesteps, summary.durable_up_to), (250, 250));
    let m = check::read_manifest(&dd, "chunky").unwrap();
    assert_eq!(m.status.as_deref(), Some("complete"));
    assert_eq!(m.extra.get("durability"), Some(&serde_json::json!("chunk")));
    let st = check_episode(&dd, "chunky", &ch).unwrap();
    assert_eq!(st.timesteps, 250);
    assert_no_leftovers(&d);
    assert_verify_ok(&dd);
}

#[test]
fn e2e_fsync_never_acks_with_chunks() {
    let d = Daemon::start(DaemonOptions::default().rotation(100).fsync("never", 10));
    let ch = data::channels();
    let mut client = d.client("e2e/never");
    let mut w = client
        .open_episode(data::open_spec("never", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 250).unwrap();
    // No fsync policy: a published chunk is what makes steps DURABLE.
    w.wait_durable(199).unwrap();
    assert_eq!(w.durable_seq(), 200);
    // FLUSH syncs the journal whatever the policy.
    assert_eq!(w.flush().unwrap(), 250);
    let summary = w.close(Outcome::Completed).unwrap();
    assert_eq!((summary.timesteps, summary.durable_up_to), (250, 250));
    let st = check_episode(&d.data_dir(), "never", &ch).unwrap();
    assert_eq!(
        (st.status.as_str(), st.timesteps, st.chunks),
        ("complete", 250, 3)
    );
    assert_no_leftovers(&d);
}

#[test]
fn e2e_close_aborted_keeps_data() {
    let d = Daemon::start(DaemonOptions::default().rotation(128));
    let ch = data::channels();
    let mut client = d.client("e2e/abort");
    let mut w = client
        .open_episode(data::open_spec("aborted", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 300).unwrap();
    let summary = w.close(Outcome::Aborted).unwrap();
    assert_eq!(summary.timesteps, 300);
    let dd = d.data_dir();
    let st = check_episode(&dd, "aborted", &ch).unwrap();
    assert_eq!(
        (st.status.as_str(), st.timesteps, st.chunks),
        ("aborted", 300, 3)
    );
    assert_no_leftovers(&d);
    assert_verify_ok(&dd);
}

#[test]
fn e2e_disconnect_without_close_is_interrupted() {
    let d = Daemon::start(DaemonOptions::default().rotation(150));
    let ch = data::channels();
    let dd = d.data_dir();
    let mut client = d.client("e2e/vanish");
    let mut w = client
        .open_episode(data::open_spec("vanished", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 400).unwrap();
    assert_eq!(w.flush().unwrap(), 400);
    data::push_steps(&mut w, &ch, 37).unwrap(); // sent, never flushed
                                                // Dropping the writer would send CLOSE{aborted}: forget it and drop the connection.
    std::mem::forget(w);
    drop(client);
    let m = check::wait_final(&dd, "vanished", wshard_e2e::TIMEOUT).unwrap();
    assert_eq!(m.status.as_deref(), Some("interrupted"));
    assert_eq!(
        m.extra.get("reason"),
        Some(&serde_json::json!("client disconnected without CLOSE"))
    );
    let st = check_episode(&dd, "vanished", &ch).unwrap();
    // Everything acknowledged DURABLE, and everything received after it, is kept.
    assert_eq!(st.timesteps, 437);
    assert_no_leftovers(&d);
    assert_verify_ok(&dd);
}
