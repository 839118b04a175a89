//! One client connection, a state machine: handshake, idle (or just stopped), recording.
//! It calls its state handlers, `intake`, `timestep_source`, `fds`, `deadline`, `responder`.
//!
//! The read loop turns the socket's bytes into frames ([`FrameDecoder`]), sorts each one
//! (`request::Incoming`) and hands it to the handler of the state the connection is in,
//! which answers it and says where the connection goes next (mini-redis's
//! `Command::from_frame` then `apply`). Every check of docs/PROTOCOL.md happens on the way,
//! so that the writer only ever sees valid records.
//!
//! The socket is read with `recvmsg` so that file descriptors passed with `SHM_ATTACH`
//! arrive ([`crate::ingest::fds`]); once a ring is attached, the recording's transport
//! takes the timesteps from it (`ingest::timestep_source`).
//!
//! Large `TIMESTEP_BATCH` frames are read straight into their records buffer (the decoder's
//! direct batches), and that buffer is one the episode's writer has finished with when
//! there is one ([`crate::session::Session::recycled_records`]): a batch's records are
//! written once by the kernel, into memory already mapped, then copied once by the writer
//! into the chunk.

mod event;
mod handshake;
mod idle;
mod link;
mod open;
mod owner;
mod recording;
mod request;
mod stream_of;
mod stream_open;
mod trigger;

use std::io::ErrorKind;
use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use wshard_ingest_proto::{ErrorCode, Frame, FrameDecoder, ProtocolVersion};

use self::link::{Link, Stop};
use self::recording::{Ending, Recording, Stopped};
use self::request::Incoming;
use super::deadline::{DeadlineClock, Deadlines, Phase};
use super::fds::{recv_with_fds, FdQueue};
use super::responder::SocketResponder;
use super::timestep_source::{Pump, READ_POLL};
use crate::registry::PeerCred;
use crate::runtime::ServerContext;

/// `TIMESTEP_BATCH` frames with at least this many bytes of records are read straight into
/// their records buffer rather than through the decoder's buffer and a copy. Smaller ones
/// gain little (and would cost a read each: the direct room ends with the batch).
const DIRECT_BATCH_BYTES: usize = 64 * 1024;

/// The state of a connection.
enum State {
    /// No complete HELLO yet.
    Handshake,
    /// Past the handshake, no episode open.
    Idle,
    /// The daemon finalized the open episode on its own; see [`Stopped`].
    Stopped(Stopped),
    /// An episode is open (boxed: the recording is large, the other states small).
    Recording(Box<Recording>),
}

/// The peer's credentials (`SO_PEERCRED`), `None` when the kernel does not say.
#[must_use]
pub(crate) fn peer_cred(stream: &UnixStream) -> Option<PeerCred> {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    getsockopt(stream, PeerCredentials).ok().map(|c| PeerCred {
        pid: c.pid(),
        uid: c.uid(),
        gid: c.gid(),
    })
}

/// Serve one connection until it closes. Never panics on client input.
pub(crate) fn serve(stream: UnixStream, ctx: &Arc<ServerContext>, peer: &str) {
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
        link: Link {
            ctx: ctx.clone(),
            responder,
            peer: peer.to_owned(),
            cred: peer_cred(&stream),
            client_name: String::new(),
            fds: FdQueue::default(),
            version: ProtocolVersion::V1,
            owned: None,
            closing: None,
        },
        state: State::Handshake,
        clock: DeadlineClock::new(Deadlines::configured(ctx), accepted),
    };
    let stop = conn.read_loop(&stream);
    conn.finish(stop);
}

struct Connection {
    link: Link,
    state: State,
    /// The deadlines without an open episode, as configured at the accept.
    clock: DeadlineClock,
}

impl Connection {
    fn read_loop(&mut self, stream: &UnixStream) -> Stop {
        let mut decoder = FrameDecoder::new(self.link.ctx.limits.max_frame_bytes)
            .direct_batches(DIRECT_BATCH_BYTES);
        loop {
            loop {
                match decoder.next_frame() {
                    Ok(Some(frame)) => {
                        if let Some(stop) = self.on_frame(frame) {
                            return stop;
                        }
                        // The handshake decided the version: frames of a later version
                        // are unknown to the decoder before it.
                        if decoder.protocol_version() != self.link.version {
                            decoder.set_protocol_version(self.link.version);
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        self.link.responder.send(&e.to_error_frame());
                        if e.is_fatal() {
                            tracing::warn!(peer = %self.link.peer, "closing connection: {e}");
                            return Stop::Fatal;
                        }
                    }
                }
            }
            // After the frames received so far: a HELLO or OPEN that arrived in time counts.
            let phase = match self.state {
                State::Handshake => Phase::Handshake,
                // An owner of an open multi-stream episode has an episode open.
                State::Idle | State::Stopped(_) if self.link.owned.is_some() => Phase::Recording,
                State::Idle | State::Stopped(_) => Phase::NoEpisode,
                State::Recording(_) => Phase::Recording,
            };
            if let Some(cut) = self.clock.check(phase) {
                let link = &self.link;
                let counters = &link.ctx.registry.counters;
                cut.close(&link.responder, counters, &link.peer, link.cred);
                return Stop::Deadline;
            }
            if self.link.ctx.shutdown.load(Ordering::Acquire) {
                return Stop::Shutdown;
            }
            self.obey_stop_request();
            if let State::Recording(rec) = &mut self.state {
                match rec.pump(stream) {
                    // Timesteps on the socket: lend the decoder a records buffer the writer
                    // is done with, for the next batch.
                    Ok(Pump::Socket) => rec.lend_records_buffer(&mut decoder),
                    Ok(Pump::Again) => continue,
                    Err(error) => {
                        self.end_recording(Ending::Failed(error));
                        continue;
                    }
                }
            }
            // Also while a batch is read directly: fds sent with its bytes are queued all the
            // same (only SHM_ATTACH uses them).
            match recv_with_fds(stream, decoder.buffer_mut(), &mut self.link.fds) {
                Ok(0) => return Stop::Eof,
                Ok(n) => decoder.commit(n),
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                    ) => {}
                Err(e) => {
                    tracing::info!(peer = %self.link.peer, "connection read failed: {e}");
                    return Stop::Eof;
                }
            }
        }
    }

    /// Handle one frame in the current state; `Some` ends the connection.
    fn on_frame(&mut self, frame: Frame) -> Option<Stop> {
        let link = &mut self.link;
        match (&mut self.state, Incoming::from_frame(frame)) {
            (State::Handshake, incoming) => {
                if let Err(stop) = handshake::on_frame(incoming, link) {
                    return Some(stop);
                }
                self.state = State::Idle;
                self.clock.restart();
            }
            (_, Incoming::Hello { .. }) => {
                link.error(ErrorCode::Handshake, "HELLO sent twice");
                return Some(Stop::Fatal);
            }
            (_, Incoming::ServerFrame(kind)) => link.error(
                ErrorCode::MalformedFrame,
                format!("{} is a server-to-client frame", kind.name()),
            ),
            (State::Idle, Incoming::Request(request)) => {
                let next = idle::on_request(None, request, link);
                self.after_idle(next);
            }
            (State::Stopped(stopped), Incoming::Request(request)) => {
                let next = idle::on_request(Some(*stopped), request, link);
                self.after_idle(next);
            }
            (State::Recording(rec), Incoming::Request(request)) => {
                if let Some(ending) = rec.on_request(request, link) {
                    self.end_recording(ending);
                }
            }
        }
        None
    }

    /// Apply where a request without an open episode led.
    fn after_idle(&mut self, next: idle::Next) {
        match next {
            idle::Next::Stay => {}
            idle::Next::Idle => self.state = State::Idle,
            idle::Next::Record(rec) => self.state = State::Recording(rec),
        }
    }

    /// Leave the recording state (to idle): the recording, for the caller to finalize.
    /// `None` when no episode is open.
    fn take_recording(&mut self) -> Option<Box<Recording>> {
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Recording(rec) => Some(rec),
            other => {
                self.state = other;
                None
            }
        }
    }

    /// End the recording as a request (or its transport) decided; the connection is idle.
    fn end_recording(&mut self, ending: Ending) {
        if let Some(rec) = self.take_recording() {
            rec.end(ending, &self.link);
        }
    }

    /// Finalize the episode `interrupted` when the registry holds a stop request for it
    /// (an operator's `wshard close`, the disk's high watermark). The client gets
    /// `ERROR{STOPPED}` naming the reason and may OPEN again.
    fn obey_stop_request(&mut self) {
        owner::obey_stop(&mut self.link);
        let State::Recording(rec) = &mut self.state else {
            return;
        };
        rec.roll_multi(&self.link);
        let Some(reason) = rec
            .take_stop_request()
            .or_else(|| rec.quota_stop(&self.link))
        else {
            return;
        };
        // What the producer published before the request is kept.
        if let Err(error) = rec.catch_up() {
            self.end_recording(Ending::Failed(error));
            return;
        }
        if let Some(rec) = self.take_recording() {
            self.state = State::Stopped(rec.stop(&reason, &self.link));
        }
    }

    /// The connection ends: an open episode is finalized `interrupted`.
    fn finish(&mut self, stop: Stop) {
        // What the producer published before the socket went away is kept.
        if let State::Recording(rec) = &mut self.state {
            if let Err(error) = rec.catch_up() {
                self.end_recording(Ending::Failed(error));
            }
        }
        let recorded = match self.take_recording() {
            Some(rec) => {
                rec.interrupt(stop, &self.link);
                true
            }
            None => false,
        };
        // After the connection's own stream: the episode it owns may then finalize.
        owner::owner_gone(stop, &mut self.link);
        if !recorded && stop == Stop::Shutdown {
            self.link
                .error(ErrorCode::ShuttingDown, "the daemon is shutting down");
        }
    }
}
