//! A FAKE wshardd for the client tests: one connection, speaking protocol v1 through the
//! proto crate, with canned behaviour (HELLO_OK, ACCEPTED for OPEN, DURABLE after FLUSH,
//! ERROR for a chosen seq, ACCEPTED for CLOSE). It stores nothing and fsyncs nothing: these
//! tests exercise the client's framing and state machine only, not durability.
#![allow(clippy::unwrap_used, dead_code)]

pub mod scripted;

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::thread::JoinHandle;

use wshard::episode::{DType, Lane};
use wshard_ingest_proto::{
    encode, AcceptedWhat, ChannelSpec, ErrorCode, Frame, FrameDecoder, FrameType, OpenEpisode,
    Outcome, SchemaLimits, TimebaseSpec, PROTOCOL_VERSION,
};

#[derive(Clone, Debug)]
pub struct FakeConfig {
    pub version: u16,
    pub max_frame_bytes: u32,
    /// Refuse the batch holding this seq with ERROR{SEQUENCE} (the "bad seq").
    pub reject_seq: Option<u64>,
    /// Send DURABLE after every accepted batch.
    pub auto_durable: bool,
    /// Never answer FLUSH.
    pub ignore_flush: bool,
    /// After HELLO_OK, send this ERROR and close the connection.
    pub error_after_hello: Option<ErrorCode>,
    /// Episode ids that "exist already".
    pub existing: Vec<String>,
    /// Stop reading once, for this long, as soon as this many bytes were received (a slow
    /// reader: the client's writes block and may return short).
    pub pause_once: Option<(usize, std::time::Duration)>,
    /// Drop the connection (without a word) after this many TIMESTEP_BATCH frames.
    pub close_after_batches: Option<usize>,
}

impl Default for FakeConfig {
    fn default() -> Self {
        Self {
            version: PROTOCOL_VERSION,
            max_frame_bytes: 1 << 20,
            reject_seq: None,
            auto_durable: false,
            ignore_flush: false,
            error_after_hello: None,
            existing: Vec::new(),
            pause_once: None,
            close_after_batches: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub seq: u64,
    pub t_ns: i64,
    pub reward: f32,
    pub done: bool,
    pub payload: Vec<u8>,
}

/// What the fake received.
#[derive(Debug, Default)]
pub struct Recorded {
    pub client_name: String,
    pub frames: Vec<FrameType>,
    pub opens: Vec<OpenEpisode>,
    pub batch_counts: Vec<u32>,
    pub batch_frame_bytes: Vec<usize>,
    pub steps: Vec<Step>,
    pub closes: Vec<Outcome>,
    /// Every byte received, in order.
    pub raw: Vec<u8>,
}

pub struct FakeServer {
    pub path: PathBuf,
    _dir: tempfile::TempDir,
    handle: JoinHandle<Recorded>,
}

impl FakeServer {
    pub fn start(cfg: FakeConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ingest.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let handle = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            serve(stream, &cfg)
        });
        Self {
            path,
            _dir: dir,
            handle,
        }
    }

    /// Wait for the connection to end and return what was received.
    pub fn join(self) -> Recorded {
        self.handle.join().unwrap()
    }
}

fn send(stream: &mut UnixStream, frame: &Frame) {
    let mut out = Vec::new();
    encode(frame, &mut out).unwrap();
    // The client may be gone already; that is its business.
    let _ = stream.write_all(&out);
}

struct Episode {
    step_bytes: usize,
    expected: u64,
}

fn serve(mut stream: UnixStream, cfg: &FakeConfig) -> Recorded {
    let mut rec = Recorded::default();
    let mut dec = FrameDecoder::new(cfg.max_frame_bytes);
    let mut open: Option<Episode> = None;
    let mut pause = cfg.pause_once;
    loop {
        if let Some((after, d)) = pause {
            if rec.raw.len() >= after {
                std::thread::sleep(d);
                pause = None;
            }
        }
        let buf = dec.buffer_mut();
        let n = match stream.read(buf) {
            Ok(0) | Err(_) => return rec,
            Ok(n) => n,
        };
        rec.raw.extend_from_slice(&buf[..n]);
        dec.commit(n);
        loop {
            let frame = match dec.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) => {
                    send(&mut stream, &e.to_error_frame());
                    if e.is_fatal() {
                        return rec;
                    }
                    continue;
                }
            };
            rec.frames.push(frame.frame_type());
            match frame {
                Frame::Hello { client_name, .. } => {
                    rec.client_name = client_name;
                    send(
                        &mut stream,
                        &Frame::HelloOk {
                            version: cfg.version,
                            server_name: "fake-wshardd/0".into(),
                            max_frame_bytes: cfg.max_frame_bytes,
                        },
                    );
                    if let Some(code) = cfg.error_after_hello {
                        send(&mut stream, &Frame::error(code, "fake: going away"));
                        let _ = stream.shutdown(std::net::Shutdown::Both);
                        return rec;
                    }
                }
                Frame::Open(o) => {
                    let limits = SchemaLimits {
                        max_channels: 64,
                        max_frame_bytes: cfg.max_frame_bytes,
                        max_episode_id_bytes: 128,
                    };
                    let reply = if open.is_some() {
                        Frame::error(ErrorCode::AlreadyOpen, "OPEN: an episode is open")
                    } else if let Err(e) = o.validate(&limits) {
                        e.to_error_frame()
                    } else if cfg.existing.contains(&o.episode_id) {
                        Frame::error(ErrorCode::EpisodeExists, format!("{} exists", o.episode_id))
                    } else {
                        open = Some(Episode {
                            step_bytes: o.step_bytes().unwrap(),
                            expected: 0,
                        });
                        Frame::Accepted {
                            what: AcceptedWhat::Open,
                            up_to_seq: 0,
                        }
                    };
                    rec.opens.push(o);
                    send(&mut stream, &reply);
                }
                Frame::TimestepBatch(b) => {
                    rec.batch_counts.push(b.count());
                    rec.batch_frame_bytes.push(b.records().len() + 9);
                    if cfg.close_after_batches == Some(rec.batch_counts.len()) {
                        let _ = stream.shutdown(std::net::Shutdown::Both);
                        return rec;
                    }
                    let Some(ep) = open.as_mut() else {
                        send(&mut stream, &Frame::error(ErrorCode::NotOpen, "no episode"));
                        continue;
                    };
                    if let Some(bad) = cfg
                        .reject_seq
                        .filter(|s| (b.first_seq()..b.end_seq()).contains(s))
                    {
                        let msg = format!("TIMESTEP seq {bad}: expected seq {}", bad + 1);
                        send(&mut stream, &Frame::error(ErrorCode::Sequence, msg));
                        continue;
                    }
                    let checked = b
                        .check_sequence(ep.expected)
                        .and_then(|()| b.steps(ep.step_bytes));
                    match checked {
                        Err(e) => send(&mut stream, &e.to_error_frame()),
                        Ok(steps) => {
                            for s in steps {
                                rec.steps.push(Step {
                                    seq: s.seq,
                                    t_ns: s.t_ns,
                                    reward: s.reward,
                                    done: s.done,
                                    payload: s.payload.to_vec(),
                                });
                            }
                            ep.expected = b.end_seq();
                            if cfg.auto_durable {
                                send(
                                    &mut stream,
                                    &Frame::Durable {
                                        up_to_seq: ep.expected,
                                    },
                                );
                            }
                        }
                    }
                }
                Frame::Flush => {
                    if let (Some(ep), false) = (&open, cfg.ignore_flush) {
                        send(
                            &mut stream,
                            &Frame::Durable {
                                up_to_seq: ep.expected,
                            },
                        );
                    }
                }
                Frame::Close { outcome } => {
                    rec.closes.push(outcome);
                    match open.take() {
                        None => send(&mut stream, &Frame::error(ErrorCode::NotOpen, "no episode")),
                        Some(ep) => {
                            if ep.expected > 0 {
                                send(
                                    &mut stream,
                                    &Frame::Durable {
                                        up_to_seq: ep.expected,
                                    },
                                );
                            }
                            send(
                                &mut stream,
                                &Frame::Accepted {
                                    what: AcceptedWhat::Close,
                                    up_to_seq: ep.expected,
                                },
                            );
                        }
                    }
                }
                other => {
                    let msg = format!("fake does not handle {:?}", other.frame_type());
                    send(&mut stream, &Frame::error(ErrorCode::UnknownFrame, msg));
                    return rec;
                }
            }
        }
    }
}

/// joints f32[7] (28 bytes) + gripper f32 (4 bytes).
pub fn spec(id: &str) -> OpenEpisode {
    OpenEpisode::new(id, "FakeEnv-v0", TimebaseSpec::Ticks { tick_hz: 100.0 })
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

pub fn joints(i: u64) -> Vec<u8> {
    (0..7)
        .flat_map(|j| (i as f32 + j as f32 * 0.1).to_le_bytes())
        .collect()
}

pub fn gripper(i: u64) -> [u8; 4] {
    ((i % 2) as f32).to_le_bytes()
}

/// Client options for the fake-server tests: no batch delay, a 10 s timeout.
pub fn opts() -> wshard_client::ClientOptions {
    wshard_client::ClientOptions {
        batch_delay: None,
        timeout: Some(std::time::Duration::from_secs(10)),
        ..wshard_client::ClientOptions::default()
    }
}

/// Connect to the fake server.
pub fn connect(
    server: &FakeServer,
    options: wshard_client::ClientOptions,
) -> wshard_client::Client {
    wshard_client::Client::connect_with(&server.path, "client-test/1", options).unwrap()
}
