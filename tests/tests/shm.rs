//! The shared-memory transport against the real daemon: recording over the ring read back
//! bit-exact, DURABLE as on the socket, concurrent rings and sockets; hostile producers
//! (`shm_hostile_*`: bad fds, bad headers, rings breaking the rules, a producer killed);
//! and SIGKILL of the daemon during shared-memory ingest (`shm_crash_*`).

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use wshard_client::{
    Client, ClientError, Durability, ErrorCode, OpenEpisode, Outcome, RingPolicy, Transport,
};
use wshard_e2e::check::{self, check_episode, wait_final};
use wshard_e2e::daemon::killed_by_sigkill;
use wshard_e2e::raw::{timestep_frame, RawConn};
use wshard_e2e::shm::{records, HandRing, RingSpec};
use wshard_e2e::workload::{self, EpisodeLog, Workload};
use wshard_e2e::{data, Daemon, DaemonOptions, Rng, TIMEOUT};
use wshard_ingest_proto::ring::ring_bytes;
use wshard_ingest_proto::{AcceptedWhat, Frame};

/// Nothing half-done may stay in the episode directories once every episode is final.
fn assert_no_leftovers(d: &Daemon) {
    let dd = d.data_dir();
    for suffix in [".partial", ".wal", ".tmp"] {
        let left = check::episode_files_ending(&dd, suffix);
        assert!(left.is_empty(), "left: {left:?}");
    }
}

#[test]
fn shm_record_read_back_bit_exact() {
    let d = Daemon::start(DaemonOptions::default());
    let ch = data::channels();
    let mut client = d.client("shm/basic");
    let w = client
        .open_episode_with(
            data::open_spec("shm-basic", &ch, Durability::Ack),
            Transport::shm(),
        )
        .unwrap();
    // Default geometry: 256 KiB of 254-byte records per slot, 64 slots.
    assert_eq!(
        w.transport(),
        Transport::Shm {
            slot_bytes: 262_144,
            slots: 64,
            policy: RingPolicy::Block,
        }
    );
    data::record_600_mixed_and_close(w, &ch);

    // A second episode on the same connection, through a tiny ring (3 steps per slot, 2
    // slots): every batch spans several slots and the producer waits on a full ring.
    let tiny = Transport::Shm {
        slot_bytes: 832,
        slots: 2,
        policy: RingPolicy::Block,
    };
    let mut w = client
        .open_episode_with(data::open_spec("shm-tiny", &ch, Durability::Ack), tiny)
        .unwrap();
    assert_eq!(w.transport(), tiny);
    for n in [1, 50, 3, 400] {
        data::push_steps(&mut w, &ch, n).unwrap();
    }
    let summary = w.close(Outcome::Completed).unwrap();
    assert_eq!((summary.timesteps, summary.durable_up_to), (454, 454));

    let dd = d.data_dir();
    for (id, n) in [("shm-basic", 600), ("shm-tiny", 454)] {
        let st = check_episode(&dd, id, &ch).unwrap();
        assert_eq!((st.status.as_str(), st.timesteps), ("complete", n), "{id}");
    }
    assert!(d.wait_log("shared-memory ring attached", 2, TIMEOUT));
    assert_no_leftovers(&d);
    check::assert_verify_ok(&dd);
}

#[test]
fn shm_durable_semantics_like_socket() {
    let d = Daemon::start(DaemonOptions::default().rotation(100));
    let ch = data::channels();
    let dd = d.data_dir();
    let mut client = d.client("shm/durable");
    let small = Transport::Shm {
        slot_bytes: 4096,
        slots: 4,
        policy: RingPolicy::Block,
    };

    // ack: the fsync policy (interval) acknowledges without FLUSH; FLUSH covers all.
    let mut w = client
        .open_episode_with(data::open_spec("shm-ack", &ch, Durability::Ack), small)
        .unwrap();
    data::push_steps(&mut w, &ch, 250).unwrap();
    w.wait_durable(249).unwrap();
    assert!(w.durable_seq() >= 250);
    data::push_steps(&mut w, &ch, 31).unwrap();
    assert_eq!(w.flush().unwrap(), 281);
    assert!(matches!(
        w.wait_durable(281),
        Err(ClientError::NotPushed { seq: 281, .. })
    ));
    let summary = w.close(Outcome::Completed).unwrap();
    assert_eq!((summary.timesteps, summary.durable_up_to), (281, 281));

    // chunk: DURABLE only with finalized chunks, no journal.
    let mut w = client
        .open_episode_with(data::open_spec("shm-chunk", &ch, Durability::Chunk), small)
        .unwrap();
    for _ in 0..5 {
        data::push_steps(&mut w, &ch, 50).unwrap();
    }
    w.wait_durable(199).unwrap();
    assert_eq!(w.durable_seq(), 200);
    assert!(check::episode_files_ending(&dd, ".wal").is_empty());
    let summary = w.close(Outcome::Completed).unwrap();
    assert_eq!((summary.timesteps, summary.durable_up_to), (250, 250));

    // A producer vanishing without CLOSE: everything it published is kept.
    let mut client = d.client("shm/vanish");
    let mut w = client
        .open_episode_with(data::open_spec("shm-vanished", &ch, Durability::Ack), small)
        .unwrap();
    data::push_steps(&mut w, &ch, 400).unwrap();
    assert_eq!(w.flush().unwrap(), 400);
    data::push_steps(&mut w, &ch, 37).unwrap(); // published, never flushed
    std::mem::forget(w); // no CLOSE{aborted} from Drop
    drop(client);
    let m = wait_final(&dd, "shm-vanished", TIMEOUT).unwrap();
    assert_eq!(m.status.as_deref(), Some("interrupted"));
    assert_eq!(
        m.extra.get("reason"),
        Some(&serde_json::json!("client disconnected without CLOSE"))
    );

    for (id, n, status) in [
        ("shm-ack", 281, "complete"),
        ("shm-chunk", 250, "complete"),
        ("shm-vanished", 437, "interrupted"),
    ] {
        let st = check_episode(&dd, id, &ch).unwrap();
        assert_eq!((st.status.as_str(), st.timesteps), (status, n), "{id}");
    }
    assert_no_leftovers(&d);
    check::assert_verify_ok(&dd);
}

/// Record `total` steps of `id` with random batches and flushes; returns the close summary
/// timesteps.
fn record(socket: &std::path::Path, id: &str, transport: Transport, total: u64, seed: u64) {
    let ch = data::channels();
    let mut rng = Rng::new(seed);
    let mut client = Client::connect(socket, id).unwrap();
    let mut w = client
        .open_episode_with(data::open_spec(id, &ch, Durability::Ack), transport)
        .unwrap();
    while w.next_seq() < total {
        let n = rng.range(1, 120).min(total - w.next_seq());
        data::push_steps(&mut w, &ch, n).unwrap();
        if rng.chance(1, 8) {
            assert!(w.flush().unwrap() >= w.next_seq());
        }
    }
    let summary = w.close(Outcome::Completed).unwrap();
    assert_eq!((summary.timesteps, summary.durable_up_to), (total, total));
}

#[test]
fn shm_concurrent_rings_and_a_socket() {
    let d = Daemon::start(DaemonOptions::default().rotation(300));
    let socket = d.socket();
    let episodes: [(&str, Transport, u64); 4] = [
        ("conc-shm-0", Transport::shm(), 1500),
        (
            "conc-shm-1",
            Transport::Shm {
                slot_bytes: 2048,
                slots: 2,
                policy: RingPolicy::Block,
            },
            900,
        ),
        (
            "conc-shm-2",
            Transport::Shm {
                slot_bytes: 8192,
                slots: 16,
                policy: RingPolicy::Block,
            },
            1200,
        ),
        ("conc-socket", Transport::Socket, 1000),
    ];
    std::thread::scope(|s| {
        for (i, (id, transport, total)) in episodes.iter().enumerate() {
            let socket = &socket;
            s.spawn(move || record(socket, id, *transport, *total, 0xC0FFEE + i as u64));
        }
    });
    let dd = d.data_dir();
    let ch = data::channels();
    for (id, _, total) in episodes {
        let st = check_episode(&dd, id, &ch).unwrap();
        assert_eq!(
            (st.status.as_str(), st.timesteps),
            ("complete", total),
            "{id}"
        );
    }
    assert_no_leftovers(&d);
    check::assert_verify_ok(&dd);
}

/// A well-behaved shared-memory episode streaming in the background while a hostile case
/// runs; [`Good::finish`] closes it and checks it bit-exact.
struct Good {
    id: String,
    stop: Arc<AtomicBool>,
    handle: JoinHandle<u64>,
}

impl Good {
    fn start(d: &Daemon, id: &str) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let (socket, id2, stop2) = (d.socket(), id.to_owned(), stop.clone());
        let handle = std::thread::spawn(move || {
            let ch = data::channels();
            let mut client = Client::connect(&socket, "shm/good").unwrap();
            let transport = Transport::Shm {
                slot_bytes: 4096,
                slots: 4,
                policy: RingPolicy::Block,
            };
            let mut w = client
                .open_episode_with(data::open_spec(&id2, &ch, Durability::Ack), transport)
                .unwrap();
            let mut round = 0u64;
            while !stop2.load(Ordering::Acquire) || w.next_seq() < 100 {
                data::push_steps(&mut w, &ch, 17).unwrap();
                round += 1;
                if round % 8 == 0 {
                    assert_eq!(w.flush().unwrap(), w.next_seq());
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            w.close(Outcome::Completed).unwrap().timesteps
        });
        Self {
            id: id.to_owned(),
            stop,
            handle,
        }
    }

    fn finish(self, d: &Daemon) {
        self.stop.store(true, Ordering::Release);
        let n = self.handle.join().unwrap();
        let st = check_episode(&d.data_dir(), &self.id, &data::channels()).unwrap();
        assert_eq!((st.status.as_str(), st.timesteps), ("complete", n));
    }
}

/// The one-channel schema (16-byte payloads, 37-byte records) of the hand-made rings.
fn small_spec(id: &str) -> OpenEpisode {
    data::open_spec(id, &data::small_channels(), Durability::Ack)
}

/// After an SHM_ATTACH refused with BAD_SHM, the episode carries on over the socket.
fn carries_on_over_the_socket(c: &mut RawConn, d: &Daemon, id: &str) {
    let ch = data::small_channels();
    c.timesteps(&ch, 0..5);
    assert_eq!(c.flush_until(5), 5);
    c.close(Outcome::Completed, 5);
    let st = check_episode(&d.data_dir(), id, &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 5), "{id}");
}

#[test]
fn shm_hostile_attach_refused() {
    let d = Daemon::start(DaemonOptions::default());
    let good = Good::start(&d, "good-while-attach-refused");
    let size = ring_bytes(256, 4).unwrap();
    let attach = Frame::ShmAttach {
        slot_size: 256,
        slot_count: 4,
        policy: None,
    };
    let not_eventfd = tempfile::tempfile().unwrap();
    let mut garbage = b"GARBAGE!".to_vec();
    garbage.extend_from_slice(&[0xFF; 12]);
    // (case, ring spec, fds to send: "r" ring, "d"/"s" its eventfds, "x" a plain file,
    // frame, expected message)
    let mk = |f: fn(&mut RingSpec)| {
        let mut s = RingSpec::new(256, 4);
        f(&mut s);
        s
    };
    let cases: Vec<(&str, RingSpec, &str, Frame, String)> = vec![
        (
            "magic",
            RingSpec {
                header: Some(garbage),
                ..RingSpec::new(256, 4)
            },
            "rds",
            attach.clone(),
            "ring magic is \"GARBAGE!\" (4741524241474521), expected \"WSHRING1\"".into(),
        ),
        (
            "size",
            mk(|s| s.file_size = Some(ring_bytes(256, 4).unwrap() - 256)),
            "rds",
            attach.clone(),
            format!(
                "ring fd is {} bytes, expected {size} (4096 + slot_size x slot_count)",
                size - 256
            ),
        ),
        (
            "seals",
            mk(|s| s.seal = false),
            "rds",
            attach.clone(),
            "lack F_SEAL_SHRINK | F_SEAL_GROW".into(),
        ),
        (
            "data-ready-not-eventfd",
            RingSpec::new(256, 4),
            "rxs",
            attach.clone(),
            "SHM_ATTACH data_ready fd is not an eventfd".into(),
        ),
        (
            "space-ready-not-eventfd",
            RingSpec::new(256, 4),
            "rdr",
            attach.clone(),
            "SHM_ATTACH space_ready fd is not an eventfd (it is /memfd:wshard-e2e-ring".into(),
        ),
        (
            "ring-not-memfd",
            RingSpec::new(256, 4),
            "dds",
            attach.clone(),
            "SHM_ATTACH ring fd is not a memfd".into(),
        ),
        (
            "two-fds",
            RingSpec::new(256, 4),
            "rd",
            attach.clone(),
            "SHM_ATTACH needs exactly 3 fds (ring, data_ready, space_ready), received 2".into(),
        ),
        (
            "no-fds",
            RingSpec::new(256, 4),
            "",
            attach.clone(),
            "received 0".into(),
        ),
        (
            "four-fds",
            RingSpec::new(256, 4),
            "rdsx",
            attach.clone(),
            "received 4".into(),
        ),
        (
            "geometry",
            RingSpec::new(256, 4),
            "rds",
            Frame::ShmAttach {
                slot_size: 200,
                slot_count: 4,
                policy: None,
            },
            "SHM_ATTACH slot_size 200 is not a multiple of 64".into(),
        ),
        (
            "slot-too-small",
            RingSpec::new(64, 4),
            "rds",
            Frame::ShmAttach {
                slot_size: 64,
                slot_count: 4,
                policy: None,
            },
            "SHM_ATTACH slot_size 64 is smaller than 64 + one timestep record (37 bytes) = 101"
                .into(),
        ),
        (
            "header-mismatch",
            mk(|s| {
                s.header = Some(
                    wshard_ingest_proto::RingHeader {
                        slot_size: 256,
                        slot_count: 8,
                    }
                    .encode()
                    .to_vec(),
                );
            }),
            "rds",
            attach.clone(),
            "ring header slot_count 8 differs from SHM_ATTACH slot_count 4".into(),
        ),
    ];
    for (case, spec, fds, frame, want) in cases {
        let id = format!("attach-{case}");
        let ring = HandRing::create(&spec);
        let [r, dr, sr] = ring.fds();
        let x = std::os::fd::AsRawFd::as_raw_fd(&not_eventfd);
        let fds: Vec<i32> = fds
            .chars()
            .map(|k| match k {
                'r' => r,
                'd' => dr,
                's' => sr,
                _ => x,
            })
            .collect();
        let mut c = RawConn::hello(&d.socket());
        c.open(&small_spec(&id));
        c.send_with_fds(&frame, &fds);
        let msg = c.expect_error(ErrorCode::BadShm);
        assert!(
            msg.contains(&want),
            "{case}: {msg:?} should contain {want:?}"
        );
        carries_on_over_the_socket(&mut c, &d, &id);
    }
    // SHM_ATTACH without an episode: NOT_OPEN, fds closed.
    let ring = HandRing::create(&RingSpec::new(256, 4));
    let mut c = RawConn::hello(&d.socket());
    c.send_with_fds(&attach, &ring.fds());
    assert!(c
        .expect_error(ErrorCode::NotOpen)
        .contains("SHM_ATTACH without an open episode"));
    // Fds sent with other frames are queued for the next SHM_ATTACH: 3 + 3 is refused.
    c.open(&small_spec("attach-extra-fds"));
    c.send_with_fds(&Frame::Flush, &ring.fds());
    c.send_with_fds(&attach, &ring.fds());
    assert!(c.expect_error(ErrorCode::BadShm).contains("received 6"));
    carries_on_over_the_socket(&mut c, &d, "attach-extra-fds");
    // A second SHM_ATTACH is refused; the first ring carries on.
    c.open(&small_spec("attach-twice"));
    c.send_with_fds(&attach, &ring.fds());
    assert_eq!(c.expect_accepted(AcceptedWhat::ShmAttach), 0);
    let ring2 = HandRing::create(&RingSpec::new(256, 4));
    c.send_with_fds(&attach, &ring2.fds());
    assert!(c
        .expect_error(ErrorCode::BadShm)
        .contains("already has a ring attached"));
    let mut ring = ring;
    ring.publish(&records(&data::small_channels(), 0..4), 4);
    assert_eq!(c.flush_until(4), 4);
    c.close(Outcome::Completed, 4);

    good.finish(&d);
    assert!(d.log().contains("SHM_ATTACH refused"));
    assert!(!d.log().contains("panicked"));
    d.record_ok("after-attach-abuse", 100);
}

/// Open `id` on a raw connection, attach a hand-made ring of 4 slots of 256 bytes,
/// publish two good slots (steps 0..6) and flush them.
fn attached(d: &Daemon, id: &str) -> (RawConn, HandRing) {
    let ch = data::small_channels();
    let mut c = RawConn::hello(&d.socket());
    c.open(&small_spec(id));
    let mut ring = HandRing::create(&RingSpec::new(256, 4));
    c.send_with_fds(
        &Frame::ShmAttach {
            slot_size: 256,
            slot_count: 4,
            policy: None,
        },
        &ring.fds(),
    );
    assert_eq!(c.expect_accepted(AcceptedWhat::ShmAttach), 0);
    ring.publish(&records(&ch, 0..3), 3);
    ring.publish(&records(&ch, 3..6), 3);
    assert_eq!(c.flush_until(6), 6);
    assert_eq!(ring.tail(), 2);
    (c, ring)
}

#[test]
fn shm_hostile_ring_breaks_rules() {
    let d = Daemon::start(DaemonOptions::default());
    let good = Good::start(&d, "good-while-rings-break");
    let ch = data::small_channels();
    let dd = d.data_dir();
    let recs = records(&ch, 6..9);
    let mut bad_done = recs.clone();
    bad_done[37 + 20] = 2; // seq 7: done = 2
    type Sabotage = Box<dyn Fn(&mut HandRing)>;
    let cases: Vec<(&str, Sabotage, ErrorCode, &str)> = vec![
        (
            "head-backwards",
            Box::new(|r| r.set_head(1)),
            ErrorCode::BadShm,
            "ring head 1 moved backwards (tail 2)",
        ),
        (
            "head-too-far",
            Box::new(|r| r.set_head(7)),
            ErrorCode::BadShm,
            "ring head 7 is more than slot_count 4 ahead of tail 2",
        ),
        (
            "len-over-slot",
            Box::new(move |r| {
                r.write_slot(2, 99_999, 3, &records(&data::small_channels(), 6..9));
                r.set_head(3);
            }),
            ErrorCode::BadShm,
            "ring slot 2: len 99999 exceeds slot_size 256",
        ),
        (
            "len-vs-count",
            Box::new(move |r| {
                r.write_slot(2, 111, 2, &records(&data::small_channels(), 6..9));
                r.set_head(3);
            }),
            ErrorCode::BadShm,
            "ring slot 2: len 111 does not match count 2 x record 37 bytes",
        ),
        (
            "count-zero",
            Box::new(|r| {
                r.write_slot(2, 0, 0, &[]);
                r.set_head(3);
            }),
            ErrorCode::BadShm,
            "ring slot 2: count 0 (must be >= 1)",
        ),
        (
            "bad-seq",
            Box::new(|r| r.publish(&records(&data::small_channels(), 7..10), 3)),
            ErrorCode::Sequence,
            "TIMESTEP seq 7: expected seq 6",
        ),
        (
            "seq-gap-inside-slot",
            Box::new(|r| {
                let ch = data::small_channels();
                let mut recs = records(&ch, 6..8);
                recs.extend(records(&ch, 9..10));
                r.publish(&recs, 3);
            }),
            ErrorCode::Sequence,
            "TIMESTEP seq 9: expected seq 8",
        ),
        (
            "bad-done",
            Box::new(move |r| r.publish(&bad_done, 3)),
            ErrorCode::MalformedFrame,
            "field seq 7 done has value 2",
        ),
    ];
    for (case, sabotage, code, want) in cases {
        let id = format!("ring-{case}");
        let (mut c, mut ring) = attached(&d, &id);
        sabotage(&mut ring);
        let msg = c.expect_error(code);
        assert!(
            msg.contains(want),
            "{case}: {msg:?} should contain {want:?}"
        );
        // The episode is finalized interrupted with everything accepted before.
        let m = wait_final(&dd, &id, TIMEOUT).unwrap();
        assert_eq!(m.status.as_deref(), Some("interrupted"), "{case}");
        let reason = m.extra.get("reason").and_then(|r| r.as_str()).unwrap_or("");
        assert!(
            reason.starts_with("shared-memory ring: "),
            "{case}: {reason}"
        );
        let st = check_episode(&dd, &id, &ch).unwrap();
        assert_eq!(st.timesteps, 6, "{case}");
        // The connection stays usable: CLOSE finds no episode, a new one records.
        c.send(&Frame::Close {
            outcome: Outcome::Completed,
        });
        c.expect_error(ErrorCode::NotOpen);
        let next = format!("{id}-next");
        c.open(&small_spec(&next));
        c.timesteps(&ch, 0..3);
        c.close(Outcome::Completed, 3);
    }

    // A TIMESTEP on the socket after SHM_ATTACH is refused; the ring carries on.
    let (mut c, mut ring) = attached(&d, "ring-socket-timestep");
    c.send(&timestep_frame(6, &ch));
    let msg = c.expect_error(ErrorCode::MalformedFrame);
    assert!(
        msg.contains("TIMESTEP on the socket after SHM_ATTACH"),
        "{msg}"
    );
    ring.publish(&records(&ch, 6..9), 3);
    c.close(Outcome::Completed, 9);
    let st = check_episode(&dd, "ring-socket-timestep", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 9));

    good.finish(&d);
    assert!(d.wait_log("episode interrupted: shared-memory ring", 8, TIMEOUT));
    assert!(!d.log().contains("panicked"));
    d.record_ok("after-ring-abuse", 100);
    check::assert_verify_ok(&dd);
}

#[test]
fn shm_hostile_producer_killed() {
    let d = Daemon::start(DaemonOptions::default().rotation(150));
    let good = Good::start(&d, "good-while-producer-killed");
    let mut child = Command::new(env!("CARGO_BIN_EXE_shm_producer"))
        .arg(d.socket())
        .arg("killed-producer")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (mut pushing, mut acked) = (0u64, 0u64);
    while acked < 300 {
        let line = lines.next().expect("the producer stopped").unwrap();
        let (what, n) = line.split_once(' ').unwrap();
        let n: u64 = n.parse().unwrap();
        match what {
            "pushing" => pushing = n,
            "durable" => acked = n,
            other => panic!("producer said {other:?}"),
        }
    }
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert!(killed_by_sigkill(&status), "{status}");
    for line in lines.map_while(Result::ok) {
        if let Some(n) = line.strip_prefix("pushing ") {
            pushing = n.parse().unwrap();
        }
    }
    let dd = d.data_dir();
    let m = wait_final(&dd, "killed-producer", TIMEOUT).unwrap();
    assert_eq!(m.status.as_deref(), Some("interrupted"));
    let st = check_episode(&dd, "killed-producer", &data::channels()).unwrap();
    assert!(
        (acked..=pushing).contains(&st.timesteps),
        "{} timesteps on disk, acked {acked}, pushed at most {pushing}",
        st.timesteps
    );
    good.finish(&d);
    assert!(!d.log().contains("panicked"));
    d.record_ok("after-producer-killed", 100);
    check::assert_verify_ok(&dd);
}

#[test]
fn shm_crash_sigkill_loop() {
    let iterations: u64 = std::env::var("WSHARD_SHM_CRASH_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let opts = DaemonOptions::default().rotation(200).fsync("interval", 5);
    let mut d = Daemon::new(opts.clone());
    let mut rng = Rng::new(0x5EED_5A4D);
    let mut logs: Vec<EpisodeLog> = Vec::new();
    let dd = d.data_dir();
    let check_all = |d: &Daemon, logs: &[EpisodeLog]| {
        let mut by_status = std::collections::BTreeMap::<String, usize>::new();
        for log in logs {
            match workload::check_logged(&dd, log, &["complete", "recovered"]) {
                Ok(Some(st)) => *by_status.entry(st.status).or_default() += 1,
                Ok(None) => {}
                Err(e) => panic!("{e}\nlog:\n{}", d.log()),
            }
        }
        for suffix in [".partial", ".wal", ".tmp"] {
            assert!(
                check::episode_files_ending(&dd, suffix).is_empty(),
                "{suffix} left"
            );
        }
        by_status
    };
    let started = Instant::now();
    for iter in 0..iterations {
        d.set_options(opts.clone().rotation(rng.range(50, 300)));
        d.spawn();
        d.wait_ready();
        let _ = check_all(&d, &logs);
        let delay = Duration::from_millis(rng.range(50, 300));
        let workloads: Vec<Workload> = (0..2u64)
            .map(|c| Workload {
                prefix: format!("shm-i{iter:02}-c{c}"),
                durability: Durability::Ack,
                episode_len: (50, 1500),
                batch: (1, 60),
                sync_every: 5,
                seed: rng.next_u64(),
                transport: if c == 0 {
                    Transport::shm()
                } else {
                    Transport::Shm {
                        slot_bytes: 2048,
                        slots: 4,
                        policy: RingPolicy::Block,
                    }
                },
            })
            .collect();
        let socket = d.socket();
        let stop = AtomicBool::new(false);
        let round: Vec<EpisodeLog> = std::thread::scope(|s| {
            let handles: Vec<_> = workloads
                .iter()
                .map(|w| {
                    let (socket, stop) = (&socket, &stop);
                    s.spawn(move || workload::run(socket, w, stop))
                })
                .collect();
            std::thread::sleep(delay);
            assert!(killed_by_sigkill(&d.kill9().unwrap()));
            handles
                .into_iter()
                .flat_map(|h| {
                    let (logs, ended) = h.join().unwrap();
                    assert!(ended.error.is_some(), "a client did not notice the kill");
                    logs
                })
                .collect()
        });
        logs.extend(round);
    }
    d.spawn();
    d.wait_ready();
    let by_status = check_all(&d, &logs);
    let acked: u64 = logs.iter().map(|l| l.acked).sum();
    println!(
        "shm crash loop: iterations={iterations} episodes={} {by_status:?} acknowledged={acked} \
         ({:.1} s)",
        logs.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(acked > 0);
    assert!(
        by_status.get("recovered").copied().unwrap_or(0) > 0,
        "{by_status:?}"
    );
    check::assert_verify_ok(&dd);
    d.record_ok("after-shm-crashes", 200);
}
