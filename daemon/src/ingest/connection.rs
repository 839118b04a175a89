//! One client connection: handshake, then OPEN / TIMESTEP(_BATCH) / FLUSH / CLOSE, with
//! every check of docs/PROTOCOL.md. Frames are checked here (sizes, sequence, limits) so
//! that the writer only ever sees valid records.
//!
//! The socket is read with `recvmsg` so that file descriptors passed with `SHM_ATTACH`
//! arrive; once a ring is attached, timesteps come from it (see the `shm_session` module).
//!
//! Large `TIMESTEP_BATCH` frames are read straight into their records buffer (the decoder's
//! direct batches), and that buffer is one the episode's writer has finished with when
//! there is one ([`Session::recycled_records`]): a batch's records are written once by the
//! kernel, into memory already mapped, then copied once by the writer into the chunk.

use std::io::ErrorKind;
use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use wshard_ingest_proto::{
    AcceptedWhat, ErrorCode, Frame, FrameDecoder, OpenEpisode, Outcome, ProtoError, SchemaLimits,
    StepValues, TimebaseSpec, PROTOCOL_VERSION,
};

use super::deadline::{DeadlineClock, Deadlines, Phase};
use super::responder::SocketResponder;
use super::shm::{recv_with_fds, FdQueue, Ring};
use super::shm_session::Pump;
use crate::episode::{validate_episode_id, Durability, EpisodeSchema};
use crate::registry::{NewEpisode, PeerCred, Registration, StopReason};
use crate::runtime::ServerContext;
use crate::session::{FinalStatus, OpenError, Session};

/// How often a blocked read wakes up to look at the shutdown flag.
pub(super) const READ_POLL: Duration = Duration::from_millis(100);

/// `TIMESTEP_BATCH` frames with at least this many bytes of records are read straight into
/// their records buffer rather than through the decoder's buffer and a copy. Smaller ones
/// gain little (and would cost a read each: the direct room ends with the batch).
pub(super) const DIRECT_BATCH_BYTES: usize = 64 * 1024;

pub(super) enum State {
    Handshake,
    Idle,
    /// The daemon finalized the open episode on its own (`ERROR{STOPPED}` was sent). Until
    /// the client's next OPEN, its frames for that episode, sent before it learned, are
    /// dropped without an error, and its CLOSE is answered `ACCEPTED{CLOSE}` with the
    /// episode's final count.
    Stopped {
        timesteps: u64,
        /// The episode's final `DURABLE` watermark, the answer to a FLUSH or CLOSE.
        durable: u64,
    },
    Recording {
        session: Session,
        next_seq: u64,
        bytes: u64,
        step_payload: usize,
        /// `bool` elements and `t_ns` order, whichever transport brings the timesteps
        /// (boxed: it would make this variant much larger than the others).
        values: Box<StepValues>,
        /// The shared-memory ring, once `SHM_ATTACH` was accepted.
        ring: Option<Ring>,
        /// The episode's entry in the registry (status, metrics, stop requests); dropped
        /// after the episode is finalized.
        registration: Registration,
    },
}

/// Why the read loop stopped.
enum Stop {
    /// The client closed its end.
    Eof,
    /// The stream can no longer be parsed, or the client broke the handshake.
    Fatal,
    /// The daemon is shutting down.
    Shutdown,
    /// A deadline of a connection without an open episode passed (`ERROR{TIMEOUT}` sent).
    Deadline,
}

/// The peer's credentials (`SO_PEERCRED`), `None` when the kernel does not say.
#[must_use]
pub fn peer_cred(stream: &UnixStream) -> Option<PeerCred> {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    getsockopt(stream, PeerCredentials).ok().map(|c| PeerCred {
        pid: c.pid(),
        uid: c.uid(),
        gid: c.gid(),
    })
}

/// Serve one connection until it closes. Never panics on client input.
pub fn serve(stream: UnixStream, ctx: &Arc<ServerContext>, peer: &str) {
    let accepted = Instant::now();
    let responder = match stream.try_clone() {
        Ok(s) => Arc::new(SocketResponder::counted(s, ctx.registry.clone())),
        Err(e) => {
            tracing::warn!(peer, "cannot clone the connection: {e}");
            return;
        }
    };
    if let Err(e) = stream.set_read_timeout(Some(READ_POLL)) {
        tracing::warn!(peer, "cannot set a read timeout: {e}");
        return;
    }
    let mut conn = Connection {
        ctx: ctx.clone(),
        responder,
        state: State::Handshake,
        peer: peer.to_owned(),
        fds: FdQueue::default(),
        cred: peer_cred(&stream),
        client_name: String::new(),
        clock: DeadlineClock::new(Deadlines::configured(ctx), accepted),
    };
    let stop = conn.read_loop(stream);
    conn.finish(&stop);
}

pub(super) struct Connection {
    pub(super) ctx: Arc<ServerContext>,
    pub(super) responder: Arc<SocketResponder>,
    pub(super) state: State,
    pub(super) peer: String,
    /// File descriptors received on the socket, for the next `SHM_ATTACH`.
    pub(super) fds: FdQueue,
    pub(super) cred: Option<PeerCred>,
    /// From HELLO.
    pub(super) client_name: String,
    /// The deadlines without an open episode, as configured at the accept.
    clock: DeadlineClock,
}

impl Connection {
    fn read_loop(&mut self, stream: UnixStream) -> Stop {
        let mut decoder =
            FrameDecoder::new(self.ctx.limits.max_frame_bytes).direct_batches(DIRECT_BATCH_BYTES);
        loop {
            loop {
                match decoder.next_frame() {
                    Ok(Some(frame)) => {
                        if let Some(stop) = self.on_frame(frame) {
                            return stop;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        self.responder.send(&e.to_error_frame());
                        if e.is_fatal() {
                            tracing::warn!(peer = %self.peer, "closing connection: {e}");
                            return Stop::Fatal;
                        }
                    }
                }
            }
            // After the frames received so far: a HELLO or OPEN that arrived in time counts.
            let phase = match self.state {
                State::Handshake => Phase::Handshake,
                State::Idle | State::Stopped { .. } => Phase::NoEpisode,
                State::Recording { .. } => Phase::Recording,
            };
            if let Some(cut) = self.clock.check(phase) {
                let counters = &self.ctx.registry.counters;
                cut.close(&self.responder, counters, &self.peer, self.cred);
                return Stop::Deadline;
            }
            if self.ctx.shutdown.load(Ordering::Acquire) {
                return Stop::Shutdown;
            }
            self.obey_stop_request();
            if self.has_ring() && matches!(self.pump_ring(&stream), Pump::Again) {
                continue;
            }
            self.lend_records_buffer(&mut decoder);
            // Also while a batch is read directly: fds sent with its bytes are queued all the
            // same (only SHM_ATTACH uses them).
            match recv_with_fds(&stream, decoder.buffer_mut(), &mut self.fds) {
                Ok(0) => return Stop::Eof,
                Ok(n) => decoder.commit(n),
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                    ) => {}
                Err(e) => {
                    tracing::info!(peer = %self.peer, "connection read failed: {e}");
                    return Stop::Eof;
                }
            }
        }
    }

    /// Lend the decoder a records buffer the writer is done with, for the next batch.
    fn lend_records_buffer(&self, decoder: &mut FrameDecoder) {
        if !decoder.needs_records_buffer() {
            return;
        }
        if let State::Recording {
            session,
            ring: None,
            ..
        } = &self.state
        {
            if let Some(buf) = session.recycled_records() {
                decoder.give_records_buffer(buf);
            }
        }
    }

    pub(super) fn error(&self, code: ErrorCode, message: impl Into<String>) {
        self.responder.error(code, message);
    }

    /// Handle one frame; `Some` ends the connection.
    fn on_frame(&mut self, frame: Frame) -> Option<Stop> {
        match (&mut self.state, frame) {
            (
                State::Handshake,
                Frame::Hello {
                    version,
                    client_name,
                },
            ) => {
                if version != PROTOCOL_VERSION {
                    self.error(ErrorCode::UnsupportedVersion, format!("HELLO protocol_version {version}: this server speaks {PROTOCOL_VERSION}"));
                    return Some(Stop::Fatal);
                }
                tracing::info!(peer = %self.peer, client = %client_name, "client connected");
                self.client_name = client_name;
                self.responder.send(&Frame::HelloOk {
                    version: PROTOCOL_VERSION,
                    server_name: concat!("wshardd/", env!("CARGO_PKG_VERSION")).into(),
                    max_frame_bytes: self.ctx.limits.max_frame_bytes,
                });
                self.state = State::Idle;
                self.clock.restart();
                None
            }
            (State::Handshake, other) => {
                self.error(
                    ErrorCode::Handshake,
                    format!(
                        "expected HELLO as the first frame, got {}",
                        other.frame_type().name()
                    ),
                );
                Some(Stop::Fatal)
            }
            (_, Frame::Hello { .. }) => {
                self.error(ErrorCode::Handshake, "HELLO sent twice");
                Some(Stop::Fatal)
            }
            (
                _,
                Frame::ShmAttach {
                    slot_size,
                    slot_count,
                    policy,
                },
            ) => {
                self.shm_attach(slot_size, slot_count, policy.unwrap_or_default());
                None
            }
            (
                State::Recording { ring: Some(_), .. },
                f @ (Frame::Timestep(_) | Frame::TimestepBatch(_)),
            ) => {
                self.error(
                    ErrorCode::MalformedFrame,
                    format!(
                        "{} on the socket after SHM_ATTACH: timesteps of this episode travel through the ring",
                        f.frame_type().name()
                    ),
                );
                None
            }
            (State::Idle | State::Stopped { .. }, Frame::Open(open)) => {
                self.open(open);
                None
            }
            (State::Recording { session, .. }, Frame::Open(open)) => {
                self.responder.error(
                    ErrorCode::AlreadyOpen,
                    format!(
                        "OPEN `{}`: episode `{}` is still open on this connection; CLOSE it first",
                        open.episode_id,
                        session.shared().schema.episode_id
                    ),
                );
                None
            }
            (State::Recording { session, .. }, Frame::Timestep(t)) => {
                let mut records = session.recycled_records().unwrap_or_else(|| {
                    Vec::with_capacity(wshard_ingest_proto::RECORD_HEADER_BYTES + t.payload.len())
                });
                records.clear();
                wshard_ingest_proto::push_step_record(
                    &mut records,
                    t.seq,
                    t.t_ns,
                    t.reward,
                    t.done,
                    &[&t.payload],
                );
                let refused = match wshard_ingest_proto::TimestepBatch::from_records(1, records) {
                    Ok(b) => self.submit(b, false).err(),
                    Err(e) => Some(e.to_error_frame()),
                };
                if let Some(f) = refused {
                    self.responder.send(&f);
                }
                None
            }
            (State::Recording { .. }, Frame::TimestepBatch(b)) => {
                if let Err(f) = self.submit(b, false) {
                    self.responder.send(&f);
                }
                None
            }
            (State::Recording { .. }, Frame::Flush) => {
                // Everything published in the ring before the FLUSH is covered by it.
                if self.drain_published() {
                    self.flush();
                }
                None
            }
            (State::Recording { .. }, Frame::Close { outcome }) => {
                let status = match outcome {
                    Outcome::Completed => FinalStatus::Complete,
                    Outcome::Aborted => FinalStatus::Aborted,
                };
                if self.drain_published() {
                    self.close(status);
                }
                None
            }
            (State::Stopped { .. }, Frame::Timestep(_) | Frame::TimestepBatch(_)) => None,
            (State::Stopped { durable, .. }, Frame::Flush) => {
                // FLUSH is always answered: the stopped episode's final watermark.
                self.responder.send(&Frame::Durable {
                    up_to_seq: *durable,
                });
                None
            }
            (
                State::Stopped {
                    timesteps, durable, ..
                },
                Frame::Close { .. },
            ) => {
                // CLOSE is answered as always: DURABLE, then ACCEPTED{CLOSE}.
                self.responder.send(&Frame::Durable {
                    up_to_seq: *durable,
                });
                self.responder.send(&Frame::Accepted {
                    what: AcceptedWhat::Close,
                    up_to_seq: *timesteps,
                });
                self.state = State::Idle;
                None
            }
            (
                State::Idle,
                f @ (Frame::Timestep(_)
                | Frame::TimestepBatch(_)
                | Frame::Flush
                | Frame::Close { .. }),
            ) => {
                self.error(
                    ErrorCode::NotOpen,
                    format!(
                        "{} without an open episode: send OPEN first",
                        f.frame_type().name()
                    ),
                );
                None
            }
            (_, other) => {
                self.error(
                    ErrorCode::MalformedFrame,
                    format!("{} is a server-to-client frame", other.frame_type().name()),
                );
                None
            }
        }
    }

    fn open(&mut self, open: OpenEpisode) {
        let limits = SchemaLimits {
            max_channels: self.ctx.limits.max_channels,
            max_frame_bytes: self.ctx.limits.max_frame_bytes,
            max_episode_id_bytes: self.ctx.limits.max_episode_id_bytes,
        };
        let values = match open
            .validate(&limits)
            .and_then(|()| StepValues::new(&open.channels))
        {
            Ok(v) => Box::new(v),
            Err(e) => {
                self.responder.send(&e.to_error_frame());
                return;
            }
        };
        if let Err(msg) =
            validate_episode_id(&open.episode_id, self.ctx.limits.max_episode_id_bytes)
        {
            self.error(ErrorCode::BadEpisodeId, format!("OPEN episode_id: {msg}"));
            return;
        }
        let schema = match self.schema(&open) {
            Ok(s) => s,
            Err(msg) => {
                self.error(ErrorCode::BadSchema, msg);
                return;
            }
        };
        // One statvfs: the decision uses the free space of now, not of the last tick.
        self.ctx.disk.check_now();
        if self.ctx.registry.disk_low.load(Ordering::Acquire) {
            let free = self.ctx.registry.disk_free_bytes.load(Ordering::Relaxed);
            self.ctx
                .registry
                .counters
                .episodes_refused_disk
                .fetch_add(1, Ordering::Relaxed);
            tracing::warn!(peer = %self.peer, episode = %open.episode_id, free, "OPEN refused: disk below the low watermark");
            self.error(
                ErrorCode::DiskLow,
                format!(
                    "OPEN `{}`: {free} bytes free on the data directory's filesystem, below \
                     disk.low_watermark_free_bytes; new episodes are refused until space returns",
                    open.episode_id
                ),
            );
            return;
        }
        let step_payload = schema.step_payload_bytes;
        let id = schema.episode_id.clone();
        let durability = schema.durability;
        match Session::open(
            self.ctx.fs.clone(),
            &self.ctx.data_dir,
            schema,
            self.ctx.settings(),
            self.responder.clone(),
        ) {
            Ok(session) => {
                tracing::info!(peer = %self.peer, episode = %id, durability = durability.name(), "episode opened");
                let registration = self.ctx.registry.register(NewEpisode {
                    episode_id: id.clone(),
                    peer: self.peer.clone(),
                    client_name: self.client_name.clone(),
                    cred: self.cred,
                    durability,
                    stats: session.shared().stats.clone(),
                });
                self.responder.send(&Frame::Accepted {
                    what: AcceptedWhat::Open,
                    up_to_seq: 0,
                });
                self.state = State::Recording {
                    session,
                    next_seq: 0,
                    bytes: 0,
                    step_payload,
                    values,
                    ring: None,
                    registration,
                };
            }
            Err(OpenError::Exists(id)) => self.error(
                ErrorCode::EpisodeExists,
                format!("OPEN episode_id `{id}`: an episode with this id already exists"),
            ),
            Err(e) => self.error(ErrorCode::Storage, format!("OPEN `{id}`: {e}")),
        }
    }

    fn schema(&self, open: &OpenEpisode) -> Result<EpisodeSchema, String> {
        let metadata = if open.metadata_json.trim().is_empty() {
            Map::new()
        } else {
            match serde_json::from_str::<Value>(&open.metadata_json) {
                Ok(Value::Object(m)) => m,
                Ok(_) => return Err("OPEN metadata_json: must be a JSON object".into()),
                Err(e) => return Err(format!("OPEN metadata_json: {e}")),
            }
        };
        let durability = match open.durability {
            wshard_ingest_proto::Durability::Ack => Durability::Ack,
            wshard_ingest_proto::Durability::Chunk => Durability::Chunk,
            wshard_ingest_proto::Durability::ServerDefault => self.ctx.default_durability,
        };
        let timebase = match open.timebase {
            TimebaseSpec::Ticks { .. } | TimebaseSpec::TimestampsNs { .. } => {
                open.timebase.to_wshard()
            }
        };
        let channels = open
            .channels
            .iter()
            .map(|c| {
                (
                    c.name.clone(),
                    c.lane,
                    c.dtype,
                    c.shape.iter().map(|&d| u64::from(d)).collect(),
                    c.codec.resolve(self.ctx.default_codec(&c.name)),
                    c.modality.clone(),
                )
            })
            .collect();
        EpisodeSchema::new(
            open.episode_id.clone(),
            open.env_id.clone(),
            timebase,
            durability,
            channels,
            metadata,
        )
    }

    fn close(&mut self, status: FinalStatus) {
        self.note_ring_counters();
        let Some((session, registration, _)) = self.take_recording() else {
            return;
        };
        let id = session.shared().schema.episode_id.clone();
        let stats = session.shared().stats.clone();
        let summary = session.close_answering(status);
        drop(registration);
        tracing::info!(peer = %self.peer, episode = %id, "episode counters: {}", stats.summary());
        match summary.failure {
            Some(why) => self.error(
                ErrorCode::Storage,
                format!("CLOSE `{id}`: the episode failed earlier: {why}"),
            ),
            None => {
                tracing::info!(peer = %self.peer, episode = %id, status = %summary.status, timesteps = summary.timesteps, chunks = summary.chunks, "episode closed");
                self.responder.send(&Frame::Accepted {
                    what: AcceptedWhat::Close,
                    up_to_seq: summary.timesteps,
                });
            }
        }
    }

    fn finish(&mut self, stop: &Stop) {
        // What the producer published before the socket went away is kept.
        self.drain_published();
        self.note_ring_counters();
        if let Some((session, registration, _)) = self.take_recording() {
            let id = session.shared().schema.episode_id.clone();
            let reason = match stop {
                Stop::Eof if self.responder.write_timed_out() => {
                    "the client did not read its socket (server write timeout)"
                }
                Stop::Eof => "client disconnected without CLOSE",
                Stop::Fatal => "connection closed after a protocol error",
                Stop::Shutdown => "daemon shutdown",
                // Deadlines apply only without an open episode.
                Stop::Deadline => "connection closed at a deadline",
            };
            let summary = session.close(FinalStatus::Interrupted(reason.into()));
            drop(registration);
            tracing::info!(peer = %self.peer, episode = %id, timesteps = summary.timesteps, "episode interrupted: {reason}");
            if matches!(stop, Stop::Shutdown) {
                self.error(
                    ErrorCode::ShuttingDown,
                    format!("episode `{id}` finalized as interrupted: the daemon is shutting down"),
                );
            }
        } else if matches!(stop, Stop::Shutdown) {
            self.error(ErrorCode::ShuttingDown, "the daemon is shutting down");
        }
    }
}

impl Connection {
    /// Leave the recording state: the session, its registration and its ring (if any), for
    /// the caller to finalize. `None` when no episode is open.
    pub(super) fn take_recording(&mut self) -> Option<(Session, Registration, Option<Ring>)> {
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Recording {
                session,
                registration,
                ring,
                ..
            } => Some((session, registration, ring)),
            other => {
                self.state = other;
                None
            }
        }
    }

    /// Finalize the episode `interrupted` when the registry holds a stop request for it
    /// (an operator's `wshard close`, the disk's high watermark). The client gets
    /// `ERROR{STOPPED}` naming the reason and may OPEN again.
    fn obey_stop_request(&mut self) {
        let State::Recording { registration, .. } = &self.state else {
            return;
        };
        let Some(reason) = registration.live.take_stop() else {
            return;
        };
        // What the producer published before the request is kept.
        self.drain_published();
        self.note_ring_counters();
        let Some((session, registration, _)) = self.take_recording() else {
            return;
        };
        let id = session.shared().schema.episode_id.clone();
        let shared = session.shared().clone();
        let why = reason.manifest_reason();
        let summary = session.close(FinalStatus::Interrupted(why.clone()));
        let session_durable = shared.durable();
        self.ctx
            .registry
            .counters
            .episodes_stopped
            .fetch_add(1, Ordering::Relaxed);
        drop(registration);
        tracing::warn!(peer = %self.peer, episode = %id, timesteps = summary.timesteps, "episode stopped: {why}");
        self.state = State::Stopped {
            timesteps: summary.timesteps,
            durable: session_durable,
        };
        let kept = match &summary.failure {
            Some(f) => format!("it had failed earlier: {f}"),
            None => format!("{} timesteps kept", summary.timesteps),
        };
        let advice = match reason {
            StopReason::Operator { .. } => "",
            StopReason::Disk { .. } => "; new episodes are refused until space returns",
        };
        self.error(
            ErrorCode::Stopped,
            format!("episode `{id}` finalized as interrupted ({why}); {kept}{advice}"),
        );
    }
}

/// Map a protocol error to its frame (re-exported for the listener).
#[must_use]
pub fn error_frame(e: &ProtoError) -> Frame {
    e.to_error_frame()
}
