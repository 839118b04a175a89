//! The answers docs/PROTOCOL.md promises, against the real daemon over a raw socket: FLUSH
//! is always answered with a `DURABLE` (no timestep yet, everything already durable, either
//! durability class, an episode the operator stopped, an episode that failed on storage:
//! `ERROR{STORAGE}`); CLOSE is always `DURABLE` then `ACCEPTED{CLOSE}`; a `TIMESTEP_BATCH`
//! whose count does not match its bytes is `PAYLOAD_SIZE` whatever the sizes; error codes
//! past 18 reach clients.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use wshard_client::{ClientError, Durability, Outcome, Step};
use wshard_e2e::abuse::{assert_contains, small};
use wshard_e2e::check::check_episode;
use wshard_e2e::raw::{raw_frame, RawConn, Recv};
use wshard_e2e::shm::records;
use wshard_e2e::{bins, data, Daemon, DaemonOptions, TIMEOUT};
use wshard_ingest_proto::{AcceptedWhat, ErrorCode, Frame, TimestepBatch};

/// The next frame, whatever it is (`DURABLE`s included), within [`TIMEOUT`].
fn next(c: &mut RawConn) -> Frame {
    match c.recv(TIMEOUT) {
        Recv::Frame(f) => f,
        other => panic!("expected a frame, got {other:?}"),
    }
}

/// Send FLUSH; the very next frame must be `DURABLE{want}`.
fn flush_answered(c: &mut RawConn, want: u64) {
    c.send(&Frame::Flush);
    assert_eq!(
        next(c),
        Frame::Durable { up_to_seq: want },
        "answer to FLUSH"
    );
}

/// Send CLOSE and collect every frame up to `ACCEPTED{CLOSE}`: they must end with
/// `DURABLE{n}`, `ACCEPTED{CLOSE, n}`, and hold nothing but `DURABLE`s before.
fn close_answered(c: &mut RawConn, n: u64) -> Vec<Frame> {
    c.send(&Frame::Close {
        outcome: Outcome::Completed,
    });
    let mut frames = Vec::new();
    loop {
        let f = next(c);
        let end = matches!(
            f,
            Frame::Accepted {
                what: AcceptedWhat::Close,
                ..
            }
        );
        frames.push(f);
        if end {
            break;
        }
    }
    let tail = &frames[frames.len().saturating_sub(2)..];
    assert_eq!(
        tail,
        [
            Frame::Durable { up_to_seq: n },
            Frame::Accepted {
                what: AcceptedWhat::Close,
                up_to_seq: n
            }
        ],
        "answer to CLOSE: {frames:?}"
    );
    assert!(
        frames[..frames.len() - 2]
            .iter()
            .all(|f| matches!(f, Frame::Durable { .. })),
        "{frames:?}"
    );
    frames
}

#[test]
fn proto_flush_is_answered_even_with_nothing_to_sync() {
    let d = Daemon::start(DaemonOptions::default().rotation(64));
    let ch = data::small_channels();
    let mut c = RawConn::hello(&d.socket());
    // No timestep yet: DURABLE{0}, every time.
    c.open(&small("flush-empty"));
    flush_answered(&mut c, 0);
    flush_answered(&mut c, 0);
    // Everything already durable: the watermark again.
    c.timesteps(&ch, 0..10);
    assert_eq!(c.flush_until(10), 10);
    flush_answered(&mut c, 10);
    flush_answered(&mut c, 10);
    // Across a rotation (chunks of 64): still one answer covering everything.
    c.timesteps(&ch, 10..70);
    assert_eq!(c.flush_until(70), 70);
    flush_answered(&mut c, 70);
    close_answered(&mut c, 70);

    // Durability `chunk`: DURABLE only with published chunks, FLUSH publishes the open one.
    let mut spec = small("flush-chunk");
    spec.durability = Some(wshard_ingest_proto::Durability::Chunk);
    c.open(&spec);
    flush_answered(&mut c, 0);
    c.timesteps(&ch, 0..5);
    flush_answered(&mut c, 5);
    flush_answered(&mut c, 5);
    close_answered(&mut c, 5);
    for id in ["flush-empty", "flush-chunk"] {
        let st = check_episode(&d.data_dir(), id, &ch).unwrap();
        assert_eq!(st.status, "complete", "{id}");
    }
}

#[test]
fn proto_close_is_always_durable_then_accepted() {
    // fsync `never`: no DURABLE but the ones FLUSH, CLOSE and chunks cause.
    let d = Daemon::start(DaemonOptions::default().fsync("never", 10));
    let ch = data::small_channels();
    let mut c = RawConn::hello(&d.socket());
    // No timestep: DURABLE{0}, ACCEPTED{CLOSE, 0}.
    c.open(&small("close-empty"));
    assert_eq!(close_answered(&mut c, 0).len(), 2);
    // Everything already durable before the CLOSE: the DURABLE comes all the same.
    c.open(&small("close-durable"));
    c.timesteps(&ch, 0..7);
    assert_eq!(c.flush_until(7), 7);
    assert_eq!(close_answered(&mut c, 7).len(), 2);
    // Nothing durable yet: the CLOSE's sync is the DURABLE.
    c.open(&small("close-pending"));
    c.timesteps(&ch, 0..9);
    assert_eq!(close_answered(&mut c, 9).len(), 2);
    // Durability `chunk`, with and without timesteps.
    for (id, n) in [("close-chunk-empty", 0), ("close-chunk", 4)] {
        let mut spec = small(id);
        spec.durability = Some(wshard_ingest_proto::Durability::Chunk);
        c.open(&spec);
        c.timesteps(&ch, 0..n);
        assert_eq!(close_answered(&mut c, n).len(), 2, "{id}");
    }
    // An aborted episode is answered the same way.
    c.open(&small("close-aborted"));
    c.timesteps(&ch, 0..3);
    c.send(&Frame::Close {
        outcome: Outcome::Aborted,
    });
    assert_eq!(next(&mut c), Frame::Durable { up_to_seq: 3 });
    assert_eq!(c.expect_accepted(AcceptedWhat::Close), 3);
    for (id, n) in [
        ("close-empty", 0),
        ("close-durable", 7),
        ("close-pending", 9),
    ] {
        let st = check_episode(&d.data_dir(), id, &ch).unwrap();
        assert_eq!((st.status.as_str(), st.timesteps), ("complete", n), "{id}");
    }
}

#[test]
fn proto_close_and_flush_of_an_episode_the_operator_stopped_are_answered() {
    let d = Daemon::start(DaemonOptions::default());
    let ch = data::small_channels();
    let mut c = RawConn::hello(&d.socket());
    c.open(&small("stopped"));
    c.timesteps(&ch, 0..10);
    assert_eq!(c.flush_until(10), 10);
    let out = Command::new(bins::wshard())
        .args(["close", "stopped", "--control"])
        .arg(d.root().join("wshardd-control.sock"))
        .env_remove("WSHARDD_CONFIG")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    c.expect_error(ErrorCode::Stopped);
    // Timesteps sent before the client learned are dropped silently; FLUSH is answered
    // with the stopped episode's final watermark, CLOSE with DURABLE then ACCEPTED.
    c.timesteps(&ch, 10..12);
    flush_answered(&mut c, 10);
    close_answered(&mut c, 10);
    let st = check_episode(&d.data_dir(), "stopped", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("interrupted", 10));
}

/// Start `d`'s daemon with files limited to `blocks` x 512 bytes (`EFBIG` past it).
fn spawn_file_size_limited(d: &Daemon, blocks: u64) -> Child {
    let mut log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(d.log_path())
        .unwrap();
    let _ = writeln!(
        log,
        "===== proto_replies: start with ulimit -f {blocks} ====="
    );
    let out = log.try_clone().unwrap();
    // SIG_IGN survives exec: the write then fails with EFBIG instead of killing.
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {blocks} && exec \"$0\" --config \"$1\""
        ))
        .arg(bins::wshardd())
        .arg(d.config_path())
        .env_remove("RUST_LOG")
        .env_remove("WSHARDD_CONFIG")
        .current_dir(d.root())
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(log))
        .spawn()
        .unwrap();
    let deadline = Instant::now() + TIMEOUT;
    while UnixStream::connect(d.socket()).is_err() {
        if let Ok(Some(st)) = child.try_wait() {
            panic!("wshardd exited ({st}); log:\n{}", d.log());
        }
        assert!(Instant::now() < deadline, "wshardd did not start");
        std::thread::sleep(Duration::from_millis(5));
    }
    child
}

#[test]
fn proto_flush_of_a_failed_episode_is_answered_with_storage() {
    // Files of at most 256 KiB: the journal of the open chunk fails first.
    let d = Daemon::new(DaemonOptions::default().fsync("always", 10));
    let mut child = spawn_file_size_limited(&d, 512);
    let ch = data::channels();
    let mut c = RawConn::hello(&d.socket());
    c.open(&data::open_spec("fails", &ch, Durability::Ack));
    let mut next_seq = 0u64;
    let message = loop {
        assert!(
            next_seq < 100_000,
            "the journal never hit the file size limit"
        );
        let recs = records(&ch, next_seq..next_seq + 200);
        c.send(&Frame::TimestepBatch(
            TimestepBatch::from_records(200, recs).unwrap(),
        ));
        next_seq += 200;
        c.send(&Frame::Flush);
        let refused = loop {
            match next(&mut c) {
                Frame::Durable { up_to_seq } if up_to_seq == next_seq => break None,
                Frame::Durable { .. } => {}
                Frame::Error { code, message } => {
                    assert_eq!(code, ErrorCode::Storage, "{message}");
                    break Some(message);
                }
                other => panic!("{other:?}"),
            }
        };
        if let Some(message) = refused {
            break message;
        }
    };
    assert_contains(&message, &["File too large"]);
    // Whatever else the failure left in flight, the next FLUSH gets an answer: STORAGE.
    let mut found = false;
    c.send(&Frame::Flush);
    let deadline = Instant::now() + TIMEOUT;
    while !found && Instant::now() < deadline {
        match next(&mut c) {
            Frame::Error { code, message } if message.starts_with("FLUSH") => {
                assert_eq!(code, ErrorCode::Storage);
                assert_contains(&message, &["failed earlier", "File too large"]);
                found = true;
            }
            Frame::Error {
                code: ErrorCode::Storage,
                ..
            }
            | Frame::Durable { .. } => {}
            other => panic!("{other:?}"),
        }
    }
    assert!(found, "FLUSH of a failed episode was not answered");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn proto_batch_count_not_matching_its_bytes_is_payload_size() {
    let d = Daemon::start(DaemonOptions::default());
    let ch = data::small_channels(); // 16-byte payloads, 37-byte records
    let mut c = RawConn::hello(&d.socket());
    c.open(&small("batch-sizes"));
    let frame = |count: u32, len: usize| {
        let mut p = count.to_le_bytes().to_vec();
        p.extend(records(&ch, 0..4).into_iter().cycle().take(len));
        raw_frame(0x04, &p)
    };
    // Fewer bytes than the record headers alone, fewer than the records, more.
    for (count, len, parts) in [
        (3, 10, vec!["count 3", "10 bytes", "3 x 21"]),
        (
            4,
            21 * 4,
            vec!["seq 0", "payload is 0 bytes, schema step is 16"],
        ),
        (3, 37 * 2, vec!["count 3", "74 bytes"]),
        (
            1,
            37 + 5,
            vec!["seq 0", "payload is 21 bytes, schema step is 16"],
        ),
        (
            2,
            2 * 40,
            vec!["seq 0", "payload is 19 bytes, schema step is 16"],
        ),
    ] {
        c.send_bytes(&frame(count, len)).unwrap();
        let msg = c.expect_error(ErrorCode::PayloadSize);
        assert_contains(&msg, &parts);
    }
    // The connection and the episode carry on.
    c.timesteps(&ch, 0..4);
    close_answered(&mut c, 4);
    let st = check_episode(&d.data_dir(), "batch-sizes", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 4));
}

#[test]
fn proto_error_codes_past_18_reach_the_rust_client() {
    let d = Daemon::start(DaemonOptions::default());
    let ch = data::small_channels();
    let mut client = d.client("replies/codes");
    let mut w = client
        .open_episode(data::open_spec("codes", &ch, Durability::Ack))
        .unwrap();
    let payload = data::packed_payload(0, &ch);
    let payloads = [payload.as_slice()];
    let step = |t_ns| Step {
        t_ns,
        reward: 0.0,
        done: false,
        payloads: &payloads,
    };
    w.push_batch(&[step(100), step(50)]).unwrap();
    match w.flush().unwrap_err() {
        ClientError::Server { code, message } => {
            assert_eq!(code, ErrorCode::TimestampOrder, "{message}");
            assert_eq!(code.code(), 22);
        }
        other => panic!("{other}"),
    }
    let _ = w.close(Outcome::Aborted);
    // The connection is still fine for the next episode.
    let mut w = client
        .open_episode(data::open_spec("codes-next", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 5).unwrap();
    assert_eq!(w.close(Outcome::Completed).unwrap().timesteps, 5);
}

/// docs/PROTOCOL.md "Extra `data_ready` signals are harmless": a producer may signal
/// without anything published, signal once for several slots, or never signal at all (the
/// daemon looks at `head` at least every 100 ms); slots are written with plain stores.
#[test]
fn proto_ring_extra_data_ready_signals_are_harmless_and_none_are_needed() {
    use std::os::unix::fs::FileExt;
    use wshard_e2e::shm::{HandRing, RingSpec};
    use wshard_ingest_proto::ring::OFFSET_HEAD;
    let d = Daemon::start(DaemonOptions::default());
    let ch = data::small_channels();
    let mut c = RawConn::hello(&d.socket());
    c.open(&small("wakeups"));
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
    // A thousand signals with nothing published: no ERROR, nothing recorded.
    for _ in 0..1000 {
        ring.wake();
    }
    c.expect_silence(Duration::from_millis(300));
    // Three slots, one signal.
    for k in 0..3u64 {
        let len = u32::try_from(records(&ch, k * 2..k * 2 + 2).len()).unwrap();
        ring.write_slot(k, len, 2, &records(&ch, k * 2..k * 2 + 2));
    }
    ring.set_head(3);
    assert_eq!(c.flush_until(6), 6);
    // No signal at all: the daemon finds the slot on its own and the interval fsync acks
    // it, without a FLUSH.
    let recs = records(&ch, 6..8);
    ring.write_slot(3, u32::try_from(recs.len()).unwrap(), 2, &recs);
    ring.file
        .write_all_at(&4u64.to_le_bytes(), OFFSET_HEAD as u64)
        .unwrap();
    ring.head = 4;
    loop {
        match next(&mut c) {
            Frame::Durable { up_to_seq: 8 } => break,
            Frame::Durable { .. } => {}
            other => panic!("{other:?}"),
        }
    }
    close_answered(&mut c, 8);
    let st = check_episode(&d.data_dir(), "wakeups", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 8));
}

/// A HELLO that does not parse is MALFORMED_FRAME and the connection still expects one; a
/// second HELLO during an episode closes the connection, the episode is interrupted with
/// what was accepted.
#[test]
fn proto_malformed_and_second_hello() {
    let d = Daemon::start(DaemonOptions::default());
    let ch = data::small_channels();
    let mut c = RawConn::connect(&d.socket());
    // client_name of length 2 holding invalid UTF-8.
    c.send_bytes(&raw_frame(0x01, &[1, 0, 2, 0, 0xC3, 0x28]))
        .unwrap();
    assert_contains(
        &c.expect_error(ErrorCode::MalformedFrame),
        &["HELLO", "client_name", "UTF-8"],
    );
    c.send_bytes(&raw_frame(0x01, &[1, 0])).unwrap(); // cut short
    c.expect_error(ErrorCode::MalformedFrame);
    // Still in the handshake: OPEN is refused as the first frame, HELLO is answered.
    let mut c2 = RawConn::connect(&d.socket());
    c2.send_bytes(&raw_frame(0x01, &[1, 0])).unwrap();
    c2.expect_error(ErrorCode::MalformedFrame);
    c2.send(&Frame::Open(small("too-early")));
    c2.expect_error(ErrorCode::Handshake);
    c2.expect_closed();
    c.send(&Frame::Hello {
        version: 1,
        client_name: "retry".into(),
    });
    assert!(matches!(next(&mut c), Frame::HelloOk { .. }));
    c.open(&small("second-hello"));
    c.timesteps(&ch, 0..4);
    assert_eq!(c.flush_until(4), 4);
    c.send(&Frame::Hello {
        version: 1,
        client_name: "again".into(),
    });
    assert_contains(&c.expect_error(ErrorCode::Handshake), &["HELLO sent twice"]);
    c.expect_closed();
    let m = wshard_e2e::check::wait_final(&d.data_dir(), "second-hello", TIMEOUT).unwrap();
    assert_eq!(m.status.as_deref(), Some("interrupted"));
    assert_eq!(
        m.extra["reason"].as_str(),
        Some("connection closed after a protocol error")
    );
    let st = check_episode(&d.data_dir(), "second-hello", &ch).unwrap();
    assert_eq!(st.timesteps, 4);
}
