//! The protocol version 2 client API at the wire level, against a scripted FAKE server
//! (tests/common/scripted.rs): the HELLO negotiation, multi-stream episodes (owner,
//! streams on the socket and with a ring), events and their answers, what a version 1
//! connection refuses client-side. The server's behaviour is the daemon's to test.
#![allow(clippy::unwrap_used)]

mod common;

use common::scripted::Scripted;
use common::*;
use wshard::episode::{DType, Lane};
use wshard_client::{
    ChannelSpec, Client, ClientError, ClientOptions, EpisodeOpen, ErrorCode, Event, Outcome,
    ProtocolVersion, StreamOpen, TimebaseSpec, Transport,
};
use wshard_ingest_proto::{encode_to_vec, AcceptedWhat, Frame, FrameType};

/// What the fake does; the defaults are a well-behaved version 2 server.
#[derive(Default)]
struct Fake {
    /// Answer HELLO with this version instead of min(HELLO's, 2).
    hello_version: Option<u16>,
    /// Refuse STREAM_OPEN of these stream names with these codes.
    refuse_streams: Vec<(&'static str, ErrorCode)>,
    /// Refuse events with this label (`ERROR{LIMIT}` naming the EVENT).
    refuse_label: Option<&'static str>,
    /// Refuse the batch holding this seq, then answer the next EVENT in the same write.
    reject_seq: Option<u64>,
    /// Streams still recording, answered to EPISODE_CLOSE.
    still_recording: u64,
    // state
    events: u64,
    expected: u64,
}

fn accepted(what: AcceptedWhat, up_to_seq: u64) -> Frame {
    Frame::Accepted { what, up_to_seq }
}

impl Fake {
    fn reply(&mut self, frame: &Frame) -> Vec<Frame> {
        match frame {
            Frame::Hello { version, .. } => vec![Frame::HelloOk {
                version: self.hello_version.unwrap_or((*version).min(2)),
                server_name: "fake-wshardd/2".into(),
                max_frame_bytes: 1 << 20,
            }],
            Frame::Open(_) => {
                self.expected = 0;
                vec![accepted(AcceptedWhat::Open, 0)]
            }
            Frame::EpisodeOpen(_) => vec![accepted(AcceptedWhat::EpisodeOpen, 0)],
            Frame::StreamOpen(s) => match self.refuse_streams.iter().find(|r| r.0 == s.stream()) {
                Some((name, code)) => vec![Frame::error(*code, format!("STREAM_OPEN: {name}"))],
                None => {
                    self.expected = 0;
                    vec![accepted(AcceptedWhat::StreamOpen, 0)]
                }
            },
            Frame::Event(e) if Some(e.label.as_str()) == self.refuse_label => vec![Frame::error(
                ErrorCode::Limit,
                format!(
                    "EVENT: data is {} bytes, over limits.max_event_bytes 4",
                    e.data.len()
                ),
            )],
            Frame::Event(_) => {
                self.events += 1;
                vec![accepted(AcceptedWhat::Event, self.events - 1)]
            }
            Frame::TimestepBatch(b) => {
                if self
                    .reject_seq
                    .is_some_and(|s| (b.first_seq()..b.end_seq()).contains(&s))
                {
                    // The refusal is held back and sent with the next answer.
                    return vec![];
                }
                self.expected = b.end_seq();
                vec![]
            }
            Frame::Flush => vec![Frame::Durable {
                up_to_seq: self.expected,
            }],
            Frame::ShmAttach { .. } => vec![accepted(AcceptedWhat::ShmAttach, self.expected)],
            Frame::Close { .. } => vec![
                Frame::Durable {
                    up_to_seq: self.expected,
                },
                accepted(AcceptedWhat::Close, self.expected),
            ],
            Frame::EpisodeClose { .. } => {
                vec![accepted(AcceptedWhat::EpisodeClose, self.still_recording)]
            }
            other => panic!("the fake does not expect {other:?}"),
        }
    }

    /// Serve one connection; with `reject_seq`, the batch's refusal goes out in the same
    /// write as the answer to the next EVENT, before it.
    fn start(mut self) -> Scripted {
        let mut held: Option<Frame> = None;
        Scripted::start(move |frame| {
            if let (Frame::TimestepBatch(b), Some(s)) = (frame, self.reject_seq) {
                if (b.first_seq()..b.end_seq()).contains(&s) {
                    held = Some(Frame::error(
                        ErrorCode::Sequence,
                        format!("TIMESTEP_BATCH seq {}: expected seq {s}", b.first_seq()),
                    ));
                }
            }
            let mut out = self.reply(frame);
            if matches!(frame, Frame::Event(_)) {
                if let Some(e) = held.take() {
                    out.insert(0, e);
                }
            }
            out
        })
    }
}

fn v2_opts() -> ClientOptions {
    ClientOptions {
        protocol_version: ProtocolVersion::V2,
        ..opts()
    }
}

fn stream_spec(episode: &str, name: &str) -> StreamOpen {
    StreamOpen::new(
        episode,
        name,
        TimebaseSpec::TimestampsNs { nominal_hz: 100.0 },
    )
    .channel(ChannelSpec::new(
        "joints",
        Lane::Signal,
        DType::F32,
        vec![7],
    ))
    .channel(ChannelSpec::new(
        "gripper",
        Lane::Action,
        DType::F32,
        vec![],
    ))
}

fn connect_to(server: &Scripted, options: ClientOptions) -> Client {
    Client::connect_with(&server.path, "v2-test/1", options).unwrap()
}

fn types(frames: &[Frame]) -> Vec<FrameType> {
    frames.iter().map(Frame::frame_type).collect()
}

#[test]
fn proto_v2_client_hello_asks_for_the_version_chosen() {
    // Default: HELLO 1, exactly as before version 2.
    let server = Fake::default().start();
    let client = connect_to(&server, opts());
    assert_eq!(client.protocol_version(), ProtocolVersion::V1);
    assert_eq!(client.server_info().version, 1);
    drop(client);
    let got = server.join();
    assert!(matches!(got[0], Frame::Hello { version: 1, .. }));
    // Asked for 2, answered 2.
    let server = Fake::default().start();
    let client = connect_to(&server, v2_opts());
    assert_eq!(client.protocol_version(), ProtocolVersion::V2);
    drop(client);
    assert!(matches!(server.join()[0], Frame::Hello { version: 2, .. }));
    // Asked for 2, answered 3: not a version this client asked for.
    let server = Fake {
        hello_version: Some(3),
        ..Fake::default()
    }
    .start();
    let e = Client::connect_with(&server.path, "v2-test/1", v2_opts()).unwrap_err();
    assert!(
        matches!(&e, ClientError::Unexpected(m) if m == "HELLO_OK protocol_version 3 (this client asked for 2)"),
        "{e}"
    );
    server.join();
}

#[test]
fn proto_v2_client_version_1_connection_refuses_v2_calls_before_sending() {
    // A server that answers 1 to a HELLO asking for 2: the connection speaks 1.
    let server = Fake {
        hello_version: Some(1),
        ..Fake::default()
    }
    .start();
    let mut client = connect_to(&server, v2_opts());
    assert_eq!(client.protocol_version(), ProtocolVersion::V1);
    let needs = |e: ClientError, frame: &str| {
        assert!(
            matches!(&e, ClientError::NeedsVersion { frame: f, needs: 2, speaks: 1 } if *f == frame),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "{frame} needs protocol version 2; this connection speaks version 1 (connect \
                 with protocol version 2)"
            )
        );
    };
    needs(
        client
            .open_multistream_episode(EpisodeOpen::new("ep", ""))
            .unwrap_err(),
        "EPISODE_OPEN",
    );
    needs(
        client.join_stream(stream_spec("ep", "s")).unwrap_err(),
        "STREAM_OPEN",
    );
    {
        // A version 1 episode records as before; events need version 2.
        let mut ep = client.open_episode(spec("v1-ep")).unwrap();
        needs(
            ep.send_event(Event::text(0, "l", "x")).unwrap_err(),
            "EVENT",
        );
        ep.push(0, 0.0, false, &[&joints(0), &gripper(0)]).unwrap();
        assert_eq!(ep.close(Outcome::Completed).unwrap().timesteps, 1);
    }
    drop(client);
    let got = server.join();
    assert_eq!(
        types(&got),
        [
            FrameType::Hello,
            FrameType::Open,
            FrameType::TimestepBatch,
            FrameType::Close
        ]
    );
}

#[test]
fn proto_v2_client_owner_opens_sends_events_and_closes() {
    let server = Fake {
        still_recording: 2,
        ..Fake::default()
    }
    .start();
    let mut client = connect_to(&server, v2_opts());
    let spec = EpisodeOpen::new("ep-multi", "Franka").with_metadata_json(r#"{"task":"pick"}"#);
    let mut ep = client.open_multistream_episode(spec.clone()).unwrap();
    assert_eq!(ep.episode_id(), "ep-multi");
    let events = [
        Event::text(5, "instruction", "pick up the red cube"),
        Event::json(6, "score", r#"{"ok":true}"#),
        Event::binary(7, "button", vec![1, 0, 255]),
    ];
    for (i, e) in events.iter().enumerate() {
        assert_eq!(ep.send_event(e.clone()).unwrap(), i as u64);
    }
    assert_eq!(ep.close(Outcome::Aborted).unwrap(), 2);
    drop(client);
    let got = server.join();
    let mut want = vec![Frame::EpisodeOpen(spec)];
    want.extend(events.into_iter().map(Frame::Event));
    want.push(Frame::EpisodeClose {
        outcome: Outcome::Aborted,
    });
    assert_eq!(got[1..], want[..]);
}

#[test]
fn proto_v2_client_join_stream_records_like_an_episode() {
    let server = Fake::default().start();
    let mut client = connect_to(&server, v2_opts());
    let spec = stream_spec("ep-multi", "joints");
    let mut w = client.join_stream(spec.clone()).unwrap();
    assert_eq!(w.spec(), &spec.schema);
    for i in 0..5u64 {
        assert_eq!(
            w.push(i as i64 * 10, 0.0, false, &[&joints(i), &gripper(i)])
                .unwrap(),
            i
        );
    }
    assert_eq!(
        w.send_event(Event::text(25, "note", "half way")).unwrap(),
        0
    );
    assert_eq!(w.flush().unwrap(), 5);
    let summary = w.close(Outcome::Completed).unwrap();
    assert_eq!((summary.timesteps, summary.durable_up_to), (5, 5));
    // The connection may join again: seqs and DURABLE start from 0 for the new stream.
    let mut w = client.join_stream(stream_spec("ep-multi", "imu")).unwrap();
    assert_eq!(w.durable_seq(), 0);
    assert_eq!(w.push(1, 0.0, true, &[&joints(9), &gripper(9)]).unwrap(), 0);
    assert_eq!(w.close(Outcome::Completed).unwrap().timesteps, 1);
    drop(client);
    let got = server.join();
    assert_eq!(
        types(&got),
        [
            FrameType::Hello,
            FrameType::StreamOpen,
            // An event does not send the pending steps: it has its own t_ns and ack.
            FrameType::Event,
            FrameType::TimestepBatch,
            FrameType::Flush,
            FrameType::Close,
            FrameType::StreamOpen,
            FrameType::TimestepBatch,
            FrameType::Close,
        ]
    );
    assert_eq!(got[1], Frame::StreamOpen(Box::new(spec)));
    assert_eq!(
        encode_to_vec(&got[1]).unwrap()[5..],
        encode_to_vec(&Frame::StreamOpen(Box::new(stream_spec(
            "ep-multi", "joints"
        ))))
        .unwrap()[5..]
    );
}

#[test]
fn proto_v2_client_owner_records_a_stream_of_its_own_episode() {
    let server = Fake::default().start();
    let mut client = connect_to(&server, v2_opts());
    let mut ep = client
        .open_multistream_episode(EpisodeOpen::new("ep-own", ""))
        .unwrap();
    {
        let mut w = ep.join_stream(stream_spec("ep-own", "joints")).unwrap();
        w.push(0, 0.0, false, &[&joints(0), &gripper(0)]).unwrap();
        w.close(Outcome::Completed).unwrap();
    }
    assert_eq!(ep.send_event(Event::text(1, "done", "")).unwrap(), 0);
    assert_eq!(ep.close(Outcome::Completed).unwrap(), 0);
    drop(client);
    assert_eq!(
        types(&server.join()),
        [
            FrameType::Hello,
            FrameType::EpisodeOpen,
            FrameType::StreamOpen,
            FrameType::TimestepBatch,
            FrameType::Close,
            FrameType::Event,
            FrameType::EpisodeClose,
        ]
    );
}

#[test]
fn proto_v2_client_event_refusal_leaves_the_stream_recording() {
    let server = Fake {
        refuse_label: Some("huge"),
        ..Fake::default()
    }
    .start();
    let mut client = connect_to(&server, v2_opts());
    let mut w = client.join_stream(stream_spec("ep", "joints")).unwrap();
    w.push(0, 0.0, false, &[&joints(0), &gripper(0)]).unwrap();
    let e = w
        .send_event(Event::binary(1, "huge", vec![0; 10]))
        .unwrap_err();
    assert!(
        matches!(&e, ClientError::Server { code: ErrorCode::Limit, message } if message.starts_with("EVENT: data is 10 bytes")),
        "{e}"
    );
    // Reported once; the stream and further events carry on.
    assert_eq!(w.send_event(Event::text(2, "ok", "fine")).unwrap(), 0);
    w.push(3, 0.0, true, &[&joints(1), &gripper(1)]).unwrap();
    assert_eq!(w.close(Outcome::Completed).unwrap().timesteps, 2);
    drop(client);
    server.join();
}

#[test]
fn proto_v2_client_timestep_refusal_before_an_event_fails_the_stream_not_the_event() {
    // The server refuses a batch sent before the event, and answers the event in the same
    // write: the refusal is the stream's (reported once, then EpisodeFailed), the
    // acknowledgement the event's.
    let server = Fake {
        reject_seq: Some(0),
        ..Fake::default()
    }
    .start();
    let mut client = connect_to(&server, v2_opts());
    let mut w = client.join_stream(stream_spec("ep", "joints")).unwrap();
    w.push_batch(&[wshard_client::Step {
        t_ns: 0,
        reward: 0.0,
        done: false,
        payloads: &[&joints(0), &gripper(0)],
    }])
    .unwrap();
    let sequence = |e: &ClientError| {
        matches!(
            e,
            ClientError::Server {
                code: ErrorCode::Sequence,
                ..
            }
        )
    };
    match w.send_event(Event::text(1, "note", "x")) {
        // The refusal was read before the event's answer: it ends the wait.
        Err(e) => assert!(sequence(&e), "{e}"),
        // Both were read together: the event is acknowledged, the refusal comes next.
        Ok(seq) => {
            assert_eq!(seq, 0);
            let e = w
                .push(1, 0.0, false, &[&joints(1), &gripper(1)])
                .unwrap_err();
            assert!(sequence(&e), "{e}");
        }
    }
    let e = w
        .push(2, 0.0, false, &[&joints(2), &gripper(2)])
        .unwrap_err();
    assert!(matches!(e, ClientError::EpisodeFailed), "{e}");
    w.close(Outcome::Aborted).unwrap();
    drop(client);
    server.join();
}

#[test]
fn proto_v2_client_join_refusals_and_client_side_checks() {
    let server = Fake {
        refuse_streams: vec![
            ("ghost", ErrorCode::UnknownEpisode),
            ("late", ErrorCode::EpisodeClosed),
            ("twice", ErrorCode::StreamExists),
        ],
        ..Fake::default()
    }
    .start();
    let mut client = connect_to(&server, v2_opts());
    for (name, code) in [
        ("ghost", ErrorCode::UnknownEpisode),
        ("late", ErrorCode::EpisodeClosed),
        ("twice", ErrorCode::StreamExists),
    ] {
        let e = client.join_stream(stream_spec("ep", name)).unwrap_err();
        assert!(
            matches!(&e, ClientError::Server { code: c, .. } if *c == code),
            "{name}: {e}"
        );
    }
    // Refused client-side, nothing sent: a bad stream name, a bad schema, bad event data.
    let e = client
        .join_stream(stream_spec("ep", "cam/rgb"))
        .unwrap_err();
    assert!(
        matches!(&e, ClientError::Schema(p) if p.error_code() == ErrorCode::BadEpisodeId),
        "{e}"
    );
    assert!(e.to_string().contains("stream name \"cam/rgb\""), "{e}");
    let no_channels = StreamOpen::new("ep", "empty", TimebaseSpec::Ticks { tick_hz: 10.0 });
    let e = client.join_stream(no_channels).unwrap_err();
    assert!(
        e.to_string().contains("stream \"empty\": channel_count 0"),
        "{e}"
    );
    let e = client
        .open_multistream_episode(EpisodeOpen::new("ep", "").with_metadata_json("[]"))
        .unwrap_err();
    assert!(matches!(&e, ClientError::Schema(_)), "{e}");
    {
        let mut w = client.join_stream(stream_spec("ep", "joints")).unwrap();
        let e = w.send_event(Event::json(0, "j", "{nope")).unwrap_err();
        assert!(matches!(&e, ClientError::Event(_)), "{e}");
        assert!(
            e.to_string()
                .starts_with("event refused before sending: EVENT: field data of kind json"),
            "{e}"
        );
        w.close(Outcome::Completed).unwrap();
    }
    drop(client);
    let got = server.join();
    let opens = got
        .iter()
        .filter(|f| f.frame_type() == FrameType::StreamOpen)
        .count();
    assert_eq!(opens, 4, "three refused by the server, one joined");
    assert!(!types(&got).contains(&FrameType::Event));
    assert!(!types(&got).contains(&FrameType::EpisodeOpen));
}

#[test]
fn proto_v2_client_dropped_owner_closes_aborted() {
    let server = Fake::default().start();
    let mut client = connect_to(&server, v2_opts());
    drop(
        client
            .open_multistream_episode(EpisodeOpen::new("ep", ""))
            .unwrap(),
    );
    drop(client);
    let got = server.join();
    assert_eq!(
        got.last(),
        Some(&Frame::EpisodeClose {
            outcome: Outcome::Aborted
        })
    );
}

#[test]
fn proto_v2_client_join_stream_with_a_ring_attaches_it() {
    let server = Fake::default().start();
    let mut client = connect_to(&server, v2_opts());
    let w = client
        .join_stream_with(stream_spec("ep", "cams"), Transport::shm())
        .unwrap();
    assert!(matches!(w.transport(), Transport::Shm { .. }));
    assert_eq!(w.close(Outcome::Completed).unwrap().timesteps, 0);
    drop(client);
    assert_eq!(
        types(&server.join()),
        [
            FrameType::Hello,
            FrameType::StreamOpen,
            FrameType::ShmAttach,
            FrameType::Close
        ]
    );
}
