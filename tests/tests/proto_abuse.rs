//! Malformed and out-of-order frames over a raw socket against the real daemon: the right
//! ERROR code, a message naming the field and values, the connection kept or closed as
//! docs/PROTOCOL.md says, nothing accepted lost, and the daemon still serving afterwards.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::time::Duration;

use wshard_e2e::abuse::{self, assert_contains, small};
use wshard_e2e::check::{self, check_episode};
use wshard_e2e::raw::{raw_frame, timestep_frame, RawConn, Recv};
use wshard_e2e::{data, Daemon, DaemonOptions, Rng};
use wshard_ingest_proto::{
    push_step_record, ErrorCode, Frame, Outcome, TimestepBatch, PROTOCOL_VERSION,
};

const QUIET: Duration = Duration::from_millis(150);

fn daemon() -> Daemon {
    Daemon::start(DaemonOptions::default().rotation(64))
}

#[test]
fn proto_daemon_garbage_bytes() {
    let d = daemon();
    // An HTTP request: "GET " read as a little-endian body_len is 542393671.
    let mut c = RawConn::connect(&d.socket());
    let _ = c.send_bytes(b"GET / HTTP/1.1\r\nHost: wshardd\r\n\r\n");
    let msg = c.expect_error(ErrorCode::FrameTooLarge);
    assert_contains(&msg, &["542393671", "67108864"]);
    c.expect_closed();
    // A zero-length frame.
    let mut c = RawConn::hello(&d.socket());
    c.send_bytes(&[0, 0, 0, 0, 0x01]).unwrap();
    assert_contains(
        &c.expect_error(ErrorCode::MalformedFrame),
        &["body_len is 0"],
    );
    c.expect_closed();
    // Seeded random bytes in the middle of an episode.
    for seed in 0..4u64 {
        let mut c = RawConn::hello(&d.socket());
        c.open(&small(&format!("garbage-{seed}")));
        let _ = c.send_bytes(&Rng::new(seed).bytes(4096));
        let mut errors = Vec::new();
        loop {
            match c.recv(Duration::from_secs(2)) {
                Recv::Frame(Frame::Error { code, message }) => errors.push((code, message)),
                Recv::Frame(f) => panic!("unexpected {f:?}"),
                Recv::Closed => break,
                Recv::Timeout => c.shutdown_write(),
            }
        }
        assert!(!errors.is_empty(), "seed {seed}: no ERROR for garbage");
        let m = check::wait_final(
            &d.data_dir(),
            &format!("garbage-{seed}"),
            wshard_e2e::TIMEOUT,
        );
        assert_eq!(m.unwrap().status.as_deref(), Some("interrupted"));
    }
    d.record_ok("after-garbage", 40);
}

#[test]
fn proto_daemon_frame_announcing_4gib() {
    let d = daemon();
    let mut c = RawConn::hello(&d.socket());
    let _ = c.send_bytes(&[0xFF, 0xFF, 0xFF, 0xFF, 0x03, 0, 0, 0]);
    let msg = c.expect_error(ErrorCode::FrameTooLarge);
    assert_contains(&msg, &["body_len 4294967295", "max_frame_bytes 67108864"]);
    c.expect_closed();
    d.record_ok("after-4gib", 40);
}

#[test]
fn proto_daemon_handshake_and_version() {
    let d = daemon();
    let mut c = RawConn::connect(&d.socket());
    c.send(&Frame::Open(small("no-hello")));
    assert_contains(
        &c.expect_error(ErrorCode::Handshake),
        &["expected HELLO", "got OPEN"],
    );
    c.expect_closed();
    assert!(check::episode_ids(&d.data_dir()).is_empty());

    let mut c = RawConn::connect(&d.socket());
    c.send(&Frame::Flush);
    assert_contains(&c.expect_error(ErrorCode::Handshake), &["got FLUSH"]);
    c.expect_closed();

    // Version 0 exists in no protocol; a newer client gets the newest this server speaks.
    let mut c = RawConn::connect(&d.socket());
    c.send(&Frame::Hello {
        version: 0,
        client_name: "from-nowhere".into(),
    });
    let msg = c.expect_error(ErrorCode::UnsupportedVersion);
    assert_contains(&msg, &["protocol_version 0", "speaks 1 and 2"]);
    c.expect_closed();
    for (asked, spoken) in [
        (2u16, 2u16),
        (0xFFFF, 2),
        (PROTOCOL_VERSION, PROTOCOL_VERSION),
    ] {
        let (_, got) = RawConn::hello_version(&d.socket(), asked);
        assert_eq!(got, spoken, "HELLO {asked}");
    }

    let mut c = RawConn::hello(&d.socket());
    c.send(&Frame::Hello {
        version: PROTOCOL_VERSION,
        client_name: "again".into(),
    });
    assert_contains(&c.expect_error(ErrorCode::Handshake), &["HELLO sent twice"]);
    c.expect_closed();
    d.record_ok("after-handshake", 40);
}

#[test]
fn proto_daemon_bad_schema() {
    let d = daemon();
    let mut c = RawConn::hello(&d.socket());
    let cases = abuse::bad_schemas();
    for (spec, parts) in &cases {
        c.send(&Frame::Open(spec.clone()));
        let msg = c.expect_error(ErrorCode::BadSchema);
        assert_contains(&msg, parts);
    }
    assert!(
        check::episode_ids(&d.data_dir()).is_empty(),
        "a refused OPEN created files"
    );
    // The connection is still usable: a good OPEN is accepted.
    let ch = data::small_channels();
    c.open(&small("good-after-bad"));
    c.timesteps(&ch, 0..10);
    c.close(Outcome::Completed, 10);
    check_episode(&d.data_dir(), "good-after-bad", &ch).unwrap();
    d.record_ok("after-schema", 40);
}

#[test]
fn proto_daemon_bad_episode_ids() {
    // data_dir three levels deep, so `../../etc/passwd` would still land in the tempdir.
    let opts = DaemonOptions {
        data_subdir: "a/b/data".into(),
        ..DaemonOptions::default()
    };
    let d = Daemon::start(opts);
    let before = check::walk(d.root());
    let mut c = RawConn::hello(&d.socket());
    for id in &abuse::hostile_ids() {
        c.send(&Frame::Open(small(id)));
        let msg = c.expect_error(ErrorCode::BadEpisodeId);
        assert_contains(&msg, &["episode_id"]);
        if !id.is_empty() && id.is_ascii() && !id.contains('\0') && id.len() < 100 {
            assert_contains(&msg, &[id.as_str()]);
        }
    }
    assert!(!d.root().join("a/etc").exists());
    assert!(!d.root().join("etc").exists());
    assert!(check::episode_ids(&d.data_dir()).is_empty());
    assert_eq!(
        check::walk(d.root()),
        before,
        "a refused OPEN created files"
    );
    c.open(&small("fine"));
    c.close(Outcome::Completed, 0);
    d.record_ok("after-ids", 40);
}

#[test]
fn proto_daemon_episode_exists_and_already_open() {
    let d = daemon();
    let ch = data::small_channels();
    d.record_ok("dup", 10);
    let mut c = RawConn::hello(&d.socket());
    c.send(&Frame::Open(small("dup")));
    assert_contains(
        &c.expect_error(ErrorCode::EpisodeExists),
        &["`dup`", "already exists"],
    );
    // Open on the same connection, then a second OPEN while it is open.
    c.open(&small("first"));
    c.timesteps(&ch, 0..3);
    c.send(&Frame::Open(small("second")));
    assert_contains(
        &c.expect_error(ErrorCode::AlreadyOpen),
        &["`second`", "`first`"],
    );
    c.timesteps(&ch, 3..4);
    assert_eq!(c.flush_until(4), 4);
    c.close(Outcome::Completed, 4);
    assert!(!d.data_dir().join("second").exists());
    assert_eq!(
        check_episode(&d.data_dir(), "first", &ch)
            .unwrap()
            .timesteps,
        4
    );
    // The existing episode was not touched.
    assert_eq!(
        check_episode(&d.data_dir(), "dup", &data::channels())
            .unwrap()
            .timesteps,
        10
    );
    d.record_ok("after-dup", 40);
}

#[test]
fn proto_daemon_not_open() {
    let d = daemon();
    let ch = data::small_channels();
    let mut c = RawConn::hello(&d.socket());
    c.send(&timestep_frame(0, &ch));
    assert_contains(
        &c.expect_error(ErrorCode::NotOpen),
        &["TIMESTEP without an open episode"],
    );
    c.open(&small("closed-early"));
    c.timesteps(&ch, 0..2);
    c.close(Outcome::Completed, 2);
    c.send(&timestep_frame(2, &ch));
    assert_contains(
        &c.expect_error(ErrorCode::NotOpen),
        &["TIMESTEP", "OPEN first"],
    );
    c.send(&Frame::Flush);
    assert_contains(&c.expect_error(ErrorCode::NotOpen), &["FLUSH"]);
    c.send(&Frame::Close {
        outcome: Outcome::Completed,
    });
    assert_contains(&c.expect_error(ErrorCode::NotOpen), &["CLOSE"]);
    c.open(&small("reopened"));
    c.timesteps(&ch, 0..1);
    c.close(Outcome::Completed, 1);
    assert_eq!(
        check_episode(&d.data_dir(), "closed-early", &ch)
            .unwrap()
            .timesteps,
        2
    );
    d.record_ok("after-not-open", 40);
}

#[test]
fn proto_daemon_payload_size_and_sequence() {
    let d = daemon();
    let ch = data::small_channels();
    let mut c = RawConn::hello(&d.socket());
    c.open(&small("sizes"));
    let mut f = timestep_frame(0, &ch);
    if let Frame::Timestep(t) = &mut f {
        t.payload.push(0);
    }
    c.send(&f);
    let msg = c.expect_error(ErrorCode::PayloadSize);
    assert_contains(&msg, &["seq 0", "17 bytes", "16 bytes"]);
    // A batch splitting evenly into the wrong size, then one not splitting at all.
    let mut rec = Vec::new();
    push_step_record(&mut rec, 0, 0, 0.0, false, &[&[0u8; 15]]);
    push_step_record(&mut rec, 1, 0, 0.0, false, &[&[0u8; 15]]);
    c.send(&Frame::TimestepBatch(
        TimestepBatch::from_records(2, rec.clone()).unwrap(),
    ));
    assert_contains(
        &c.expect_error(ErrorCode::PayloadSize),
        &["seq 0", "15 bytes", "16 bytes"],
    );
    rec.push(0);
    c.send(&Frame::TimestepBatch(
        TimestepBatch::from_records(2, rec).unwrap(),
    ));
    let msg = c.expect_error(ErrorCode::PayloadSize);
    assert_contains(
        &msg,
        &[
            "TIMESTEP_BATCH seq 0",
            "count 2",
            "73 bytes",
            "2 x (21 + 16)",
        ],
    );
    // Sequence: a gap, a repeat, a gap inside a batch.
    c.send(&timestep_frame(5, &ch));
    assert_contains(
        &c.expect_error(ErrorCode::Sequence),
        &["seq 5", "expected seq 0"],
    );
    c.timesteps(&ch, 0..2);
    c.send(&timestep_frame(1, &ch));
    assert_contains(
        &c.expect_error(ErrorCode::Sequence),
        &["seq 1", "expected seq 2"],
    );
    let mut rec = Vec::new();
    for seq in [2u64, 4] {
        push_step_record(
            &mut rec,
            seq,
            0,
            0.0,
            false,
            &[&data::packed_payload(seq, &ch)],
        );
    }
    c.send(&Frame::TimestepBatch(
        TimestepBatch::from_records(2, rec).unwrap(),
    ));
    assert_contains(
        &c.expect_error(ErrorCode::Sequence),
        &["seq 4", "expected seq 3"],
    );
    c.timesteps(&ch, 2..3);
    assert_eq!(c.flush_until(3), 3);
    c.close(Outcome::Completed, 3);
    assert_eq!(
        check_episode(&d.data_dir(), "sizes", &ch)
            .unwrap()
            .timesteps,
        3
    );
    d.record_ok("after-sizes", 40);
}

#[test]
fn proto_daemon_malformed_payloads_keep_the_connection() {
    let d = daemon();
    let ch = data::small_channels();
    let mut c = RawConn::hello(&d.socket());
    c.open(&small("malformed"));
    c.send_bytes(&raw_frame(0x05, &[7])).unwrap();
    assert_contains(
        &c.expect_error(ErrorCode::MalformedFrame),
        &["CLOSE", "outcome", "7"],
    );
    c.send_bytes(&raw_frame(0x02, &[3, 0, b'a'])).unwrap();
    assert_contains(
        &c.expect_error(ErrorCode::MalformedFrame),
        &["OPEN", "truncated"],
    );
    c.send_bytes(&raw_frame(0x04, &0u32.to_le_bytes())).unwrap();
    assert_contains(
        &c.expect_error(ErrorCode::MalformedFrame),
        &["TIMESTEP_BATCH", "count"],
    );
    let mut rec = Vec::new();
    push_step_record(&mut rec, 0, 0, 0.0, false, &[&data::packed_payload(0, &ch)]);
    rec[20] = 2; // done
    c.send_bytes(&raw_frame(0x03, &rec)).unwrap();
    assert_contains(&c.expect_error(ErrorCode::MalformedFrame), &["done", "2"]);
    c.send(&Frame::Durable { up_to_seq: 9 });
    assert_contains(
        &c.expect_error(ErrorCode::MalformedFrame),
        &["DURABLE", "server-to-client"],
    );
    c.send_bytes(&raw_frame(0x06, &[1, 2])).unwrap();
    assert_contains(
        &c.expect_error(ErrorCode::MalformedFrame),
        &["FLUSH", "trailing"],
    );
    c.expect_silence(QUIET);
    c.timesteps(&ch, 0..5);
    assert_eq!(c.flush_until(5), 5);
    c.close(Outcome::Completed, 5);
    d.record_ok("after-malformed", 40);
}

#[test]
fn proto_daemon_unknown_frame_type() {
    let d = daemon();
    let mut c = RawConn::connect(&d.socket());
    let _ = c.send_bytes(&raw_frame(0x42, &[]));
    assert_contains(&c.expect_error(ErrorCode::UnknownFrame), &["0x42"]);
    c.expect_closed();
    let mut c = RawConn::hello(&d.socket());
    let _ = c.send_bytes(&raw_frame(0x7F, &[1, 2, 3]));
    assert_contains(&c.expect_error(ErrorCode::UnknownFrame), &["0x7f"]);
    c.expect_closed();
    d.record_ok("after-unknown", 40);
}

#[test]
fn proto_daemon_data_accepted_before_an_error_stays() {
    let d = daemon();
    let ch = data::small_channels();
    let dd = d.data_dir();
    // A refused frame, then CLOSE: complete with the N steps.
    let mut c = RawConn::hello(&d.socket());
    c.open(&small("kept"));
    c.timesteps(&ch, 0..120);
    assert_eq!(c.flush_until(120), 120);
    c.send(&timestep_frame(7, &ch));
    c.expect_error(ErrorCode::Sequence);
    c.close(Outcome::Completed, 120);
    let st = check_episode(&dd, "kept", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 120));
    // A fatal error: the connection closes and the episode is interrupted with the N steps.
    let mut c = RawConn::hello(&d.socket());
    c.open(&small("kept-fatal"));
    c.timesteps(&ch, 0..80);
    assert_eq!(c.flush_until(80), 80);
    let _ = c.send_bytes(&raw_frame(0x99, &[]));
    c.expect_error(ErrorCode::UnknownFrame);
    c.expect_closed();
    let m = check::wait_final(&dd, "kept-fatal", wshard_e2e::TIMEOUT).unwrap();
    assert_eq!(m.status.as_deref(), Some("interrupted"));
    let st = check_episode(&dd, "kept-fatal", &ch).unwrap();
    assert_eq!(st.timesteps, 80);
    check::assert_verify_ok(&dd);
    d.record_ok("after-errors", 40);
}
