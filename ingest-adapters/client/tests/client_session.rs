//! The client against a FAKE server (tests/common): framing and state machine only; the
//! real durability guarantees are tested against wshardd itself. Happy paths, batching,
//! durability waits.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use wshard_client::{ClientError, ClientOptions, Outcome, Step};
use wshard_ingest_proto::FrameType;

#[test]
fn proto_client_open_push_flush_close() {
    let server = FakeServer::start(FakeConfig::default());
    {
        let mut client = connect(&server, opts());
        assert_eq!(client.server_info().server_name, "fake-wshardd/0");
        assert_eq!(client.server_info().max_frame_bytes, 1 << 20);
        let mut ep = client.open_episode(spec("ep-1")).unwrap();
        assert_eq!(ep.step_bytes(), 32);
        for i in 0..100u64 {
            let seq = ep
                .push(i as i64 * 10, i as f32, i == 99, &[&joints(i), &gripper(i)])
                .unwrap();
            assert_eq!(seq, i);
        }
        assert_eq!(
            ep.durable_seq(),
            0,
            "nothing sent yet: below every threshold"
        );
        assert_eq!(ep.flush().unwrap(), 100);
        assert_eq!(ep.durable_seq(), 100);
        let summary = ep.close(Outcome::Completed).unwrap();
        assert_eq!(summary.timesteps, 100);
        assert_eq!(summary.durable_up_to, 100);
    }
    let rec = server.join();
    assert_eq!(rec.client_name, "client-test/1");
    assert_eq!(rec.opens.len(), 1);
    assert_eq!(rec.opens[0], spec("ep-1"));
    assert_eq!(rec.steps.len(), 100);
    for (i, s) in rec.steps.iter().enumerate() {
        let i = i as u64;
        assert_eq!(s.seq, i);
        assert_eq!(s.t_ns, i as i64 * 10);
        assert_eq!(s.reward, i as f32);
        assert_eq!(s.done, i == 99);
        assert_eq!(s.payload, [joints(i), gripper(i).to_vec()].concat());
    }
    assert_eq!(rec.batch_counts, vec![100], "one batch, sent by flush");
    assert_eq!(
        rec.frames,
        [
            FrameType::Hello,
            FrameType::Open,
            FrameType::TimestepBatch,
            FrameType::Flush,
            FrameType::Close
        ]
    );
    assert_eq!(rec.closes, [Outcome::Completed]);
}

#[test]
fn proto_client_batches_by_steps_and_bytes() {
    let server = FakeServer::start(FakeConfig::default());
    {
        let options = ClientOptions {
            batch_steps: 4,
            ..opts()
        };
        let mut client = connect(&server, options);
        let mut ep = client.open_episode(spec("ep-steps")).unwrap();
        for i in 0..10u64 {
            ep.push(0, 0.0, false, &[&joints(i), &gripper(i)]).unwrap();
        }
        ep.flush().unwrap();
        ep.close(Outcome::Completed).unwrap();
    }
    let rec = server.join();
    assert_eq!(rec.batch_counts, [4, 4, 2]);
    assert_eq!(rec.steps.len(), 10);

    let server = FakeServer::start(FakeConfig::default());
    {
        // 53-byte records (21 + 32): the third one brings the frame to the threshold
        let options = ClientOptions {
            batch_bytes: 9 + 3 * 53,
            ..opts()
        };
        let mut client = connect(&server, options);
        let mut ep = client.open_episode(spec("ep-bytes")).unwrap();
        for i in 0..7u64 {
            ep.push(0, 0.0, false, &[&joints(i), &gripper(i)]).unwrap();
        }
        ep.close(Outcome::Completed).unwrap();
    }
    assert_eq!(server.join().batch_counts, [3, 3, 1]);
}

#[test]
fn proto_client_batches_never_exceed_server_max_frame() {
    let cfg = FakeConfig {
        max_frame_bytes: 200, // a batch frame holds 9 + 3 x 53 = 168 bytes at most
        ..FakeConfig::default()
    };
    let server = FakeServer::start(cfg);
    {
        let mut client = connect(&server, opts());
        let mut ep = client.open_episode(spec("ep-small")).unwrap();
        let steps: Vec<(Vec<u8>, [u8; 4])> = (0..8).map(|i| (joints(i), gripper(i))).collect();
        let payloads: Vec<[&[u8]; 2]> = steps.iter().map(|(j, g)| [&j[..], &g[..]]).collect();
        let batch: Vec<Step<'_>> = payloads
            .iter()
            .map(|p| Step {
                t_ns: 1,
                reward: 0.0,
                done: false,
                payloads: p,
            })
            .collect();
        assert_eq!(ep.push_batch(&batch).unwrap(), 0..8);
        assert_eq!(ep.flush().unwrap(), 8);
        ep.close(Outcome::Completed).unwrap();
    }
    let rec = server.join();
    assert_eq!(rec.batch_counts, [3, 3, 2]);
    assert!(rec.batch_frame_bytes.iter().all(|&b| b <= 204));
    assert_eq!(rec.steps.len(), 8);
}

#[test]
fn proto_client_wait_durable_and_durable_seq() {
    let cfg = FakeConfig {
        auto_durable: true,
        ..FakeConfig::default()
    };
    let server = FakeServer::start(cfg);
    {
        let options = ClientOptions {
            batch_steps: 10,
            ..opts()
        };
        let mut client = connect(&server, options);
        let mut ep = client.open_episode(spec("ep-durable")).unwrap();
        let mut last = 0;
        for i in 0..25u64 {
            last = ep.push(0, 0.0, false, &[&joints(i), &gripper(i)]).unwrap();
        }
        ep.wait_durable(3).unwrap();
        assert!(ep.durable_seq() >= 10);
        ep.wait_durable(last).unwrap(); // seq 24 is pending: sent, then acknowledged
        assert_eq!(ep.durable_seq(), 25);
        assert!(matches!(
            ep.wait_durable(25),
            Err(ClientError::NotPushed {
                seq: 25,
                next_seq: 25
            })
        ));
        ep.close(Outcome::Completed).unwrap();
    }
    assert_eq!(server.join().batch_counts, [10, 10, 5]);
}

#[test]
fn proto_client_batch_delay_sends_old_steps() {
    let cfg = FakeConfig {
        auto_durable: true,
        ..FakeConfig::default()
    };
    let server = FakeServer::start(cfg);
    {
        let options = ClientOptions {
            batch_delay: Some(Duration::from_millis(1)),
            ..opts()
        };
        let mut client = connect(&server, options);
        let mut ep = client.open_episode(spec("ep-delay")).unwrap();
        ep.push(0, 0.0, false, &[&joints(0), &gripper(0)]).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        ep.push(0, 0.0, false, &[&joints(1), &gripper(1)]).unwrap();
        ep.close(Outcome::Completed).unwrap();
    }
    assert_eq!(server.join().batch_counts, [2]);
}
