//! The client against a FAKE server (tests/common): framing and state machine only; the
//! real durability guarantees are tested against wshardd itself. Errors: client-side
//! checks, server ERRORs, timeouts, closed connections.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use wshard_client::{Client, ClientError, ClientOptions, ErrorCode, Outcome, Step};

#[test]
fn proto_client_schema_mismatch_caught_before_sending() {
    let server = FakeServer::start(FakeConfig::default());
    {
        let mut client = connect(&server, opts());
        let mut ep = client.open_episode(spec("ep-mismatch")).unwrap();
        let e = ep
            .push(0, 0.0, false, &[&joints(0), &[0u8; 3]])
            .unwrap_err();
        assert!(
            matches!(&e, ClientError::SchemaMismatch { index: 1, channel, expected: 4, got: 3 } if channel == "gripper"),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            "channel 1 \"gripper\": payload is 3 bytes, schema step is 4 bytes"
        );
        let e = ep.push(0, 0.0, false, &[&joints(0)]).unwrap_err();
        assert!(
            matches!(
                e,
                ClientError::PayloadCount {
                    expected: 2,
                    got: 1
                }
            ),
            "{e}"
        );
        let e = ep.push_packed(0, 0.0, false, &[0; 31]).unwrap_err();
        assert!(
            matches!(
                e,
                ClientError::SchemaMismatch {
                    expected: 32,
                    got: 31,
                    ..
                }
            ),
            "{e}"
        );
        // the episode is still fine
        assert_eq!(ep.push_packed(0, 0.0, false, &[0; 32]).unwrap(), 0);
        assert_eq!(ep.close(Outcome::Completed).unwrap().timesteps, 1);
    }
    assert_eq!(server.join().steps.len(), 1);
}

#[test]
fn proto_client_bad_schema_refused_locally() {
    let server = FakeServer::start(FakeConfig::default());
    {
        let mut client = connect(&server, opts());
        let e = client.open_episode(spec(".hidden")).unwrap_err();
        match e {
            ClientError::Schema(p) => assert_eq!(p.error_code(), ErrorCode::BadEpisodeId),
            other => panic!("{other}"),
        }
        client
            .open_episode(spec("ok"))
            .unwrap()
            .close(Outcome::Completed)
            .unwrap();
    }
    assert_eq!(server.join().opens.len(), 1, "the bad OPEN never went out");
}

#[test]
fn proto_client_open_refused_by_server_then_retry() {
    let cfg = FakeConfig {
        existing: vec!["taken".into()],
        ..FakeConfig::default()
    };
    let server = FakeServer::start(cfg);
    {
        let mut client = connect(&server, opts());
        match client.open_episode(spec("taken")).unwrap_err() {
            ClientError::Server { code, message } => {
                assert_eq!(code, ErrorCode::EpisodeExists);
                assert!(message.contains("taken"));
            }
            other => panic!("{other}"),
        }
        let ep = client.open_episode(spec("fresh")).unwrap();
        ep.close(Outcome::Completed).unwrap();
    }
    assert_eq!(server.join().opens.len(), 2);
}

#[test]
fn proto_client_server_error_for_bad_seq_fails_episode() {
    let cfg = FakeConfig {
        reject_seq: Some(5),
        ..FakeConfig::default()
    };
    let server = FakeServer::start(cfg);
    {
        let options = ClientOptions {
            batch_steps: 4,
            ..opts()
        };
        let mut client = connect(&server, options);
        let mut ep = client.open_episode(spec("ep-seq")).unwrap();
        for i in 0..8u64 {
            // the batch with seq 4..8 is refused; the ERROR may be seen by a later push
            match ep.push(0, 0.0, false, &[&joints(i), &gripper(i)]) {
                Ok(_) | Err(ClientError::Server { .. }) => {}
                Err(e) => panic!("{e}"),
            }
        }
        let e = ep.flush().unwrap_err();
        let e = match e {
            ClientError::EpisodeFailed => None,
            ClientError::Server { code, message } => Some((code, message)),
            other => panic!("{other}"),
        };
        if let Some((code, message)) = e {
            assert_eq!(code, ErrorCode::Sequence);
            assert_eq!(message, "TIMESTEP seq 5: expected seq 6");
        }
        assert!(matches!(
            ep.push(0, 0.0, false, &[&joints(9), &gripper(9)]),
            Err(ClientError::EpisodeFailed)
        ));
        assert!(matches!(ep.flush(), Err(ClientError::EpisodeFailed)));
        let summary = ep.close(Outcome::Aborted).unwrap();
        assert_eq!(summary.timesteps, 4);
        // the connection is still usable
        client
            .open_episode(spec("ep-next"))
            .unwrap()
            .close(Outcome::Completed)
            .unwrap();
    }
    let rec = server.join();
    assert_eq!(rec.steps.len(), 4);
    assert_eq!(rec.closes, [Outcome::Aborted, Outcome::Completed]);
}

#[test]
fn proto_client_server_error_returned_by_next_call() {
    let cfg = FakeConfig {
        reject_seq: Some(0),
        ..FakeConfig::default()
    };
    let server = FakeServer::start(cfg);
    {
        let mut client = connect(&server, opts());
        let mut ep = client.open_episode(spec("ep-next-call")).unwrap();
        let steps = [Step {
            t_ns: 0,
            reward: 0.0,
            done: false,
            payloads: &[&joints(0), &gripper(0)],
        }];
        ep.push_batch(&steps).unwrap();
        // wait until the reader has the ERROR, then the next call returns it
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            match ep.push(0, 0.0, false, &[&joints(1), &gripper(1)]) {
                Err(ClientError::Server { code, .. }) => {
                    assert_eq!(code, ErrorCode::Sequence);
                    break;
                }
                Ok(_) => assert!(std::time::Instant::now() < deadline),
                Err(e) => panic!("{e}"),
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let rec = server.join();
    assert_eq!(
        rec.closes,
        [Outcome::Aborted],
        "dropping the writer closes as aborted"
    );
}

#[test]
fn proto_client_flush_times_out_without_durable() {
    let cfg = FakeConfig {
        ignore_flush: true,
        ..FakeConfig::default()
    };
    let server = FakeServer::start(cfg);
    {
        let options = ClientOptions {
            timeout: Some(Duration::from_millis(100)),
            ..opts()
        };
        let mut client = connect(&server, options);
        let mut ep = client.open_episode(spec("ep-timeout")).unwrap();
        ep.push(0, 0.0, false, &[&joints(0), &gripper(0)]).unwrap();
        assert!(matches!(ep.flush(), Err(ClientError::Timeout(_))));
        ep.close(Outcome::Completed).unwrap();
    }
    server.join();
}

#[test]
fn proto_client_server_closes_connection() {
    let cfg = FakeConfig {
        error_after_hello: Some(ErrorCode::ShuttingDown),
        ..FakeConfig::default()
    };
    let server = FakeServer::start(cfg);
    let mut client = connect(&server, opts());
    server.join(); // the fake has sent the ERROR and closed
    match client.open_episode(spec("ep-late")).unwrap_err() {
        ClientError::Server { code, message } => {
            assert_eq!(code, ErrorCode::ShuttingDown);
            assert_eq!(message, "fake: going away");
        }
        other => panic!("{other}"),
    }
    assert!(matches!(
        client.open_episode(spec("ep-later")),
        Err(ClientError::Closed)
    ));
}

#[test]
fn proto_client_refuses_other_protocol_version() {
    let cfg = FakeConfig {
        version: 2,
        ..FakeConfig::default()
    };
    let server = FakeServer::start(cfg);
    let e = Client::connect_with(&server.path, "v1-client", opts()).unwrap_err();
    assert!(
        matches!(&e, ClientError::Unexpected(m) if m.contains("protocol_version 2")),
        "{e}"
    );
    server.join();
}

#[test]
fn proto_client_connect_to_missing_socket_is_io() {
    let dir = tempfile::tempdir().unwrap();
    let e = Client::connect(dir.path().join("nope.sock"), "x").unwrap_err();
    assert!(matches!(e, ClientError::Io(_)), "{e}");
}
