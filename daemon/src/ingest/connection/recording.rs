//! A connection with an open episode: its [`Intake`] (the checks every timestep passes on
//! the way to the writer) and its [`TimestepSource`] (socket frames, or a shared-memory ring once
//! `SHM_ATTACH` was accepted). Every way the recording ends is here: the client's CLOSE, a
//! transport that broke a rule, the connection going away, and a stop request.

use wshard_ingest_proto::{
    push_step_record, AcceptedWhat, ErrorCode, Event, Frame, FrameDecoder, Outcome, RingPolicy,
    TimestepBatch, RECORD_HEADER_BYTES,
};

use super::event::{on_event, Target};
use super::link::{Link, Stop};
use super::owner::{episode_close, episode_open};
use super::request::Request;
use super::stream_of::StreamOf;
use crate::episode_files::EventsLog;
use crate::ingest::intake::Intake;
use crate::ingest::timestep_source::{Pump, TimestepSource};
use crate::registry::StopReason;
use crate::session::FinalStatus;
use wshard::episode_dir::index::EpisodeStatus;
use wshard_storage::layout::EpisodeLayout;

/// An open episode (or a stream of a multi-stream episode) on a connection.
pub(super) struct Recording {
    intake: Intake,
    transport: TimestepSource,
    /// Set when this is a stream of a multi-stream episode (version 2).
    stream: Option<StreamOf>,
    /// A version 1 episode's events file, once it got an `EVENT` (boxed: rare, and the
    /// connection's states should stay small).
    events: Option<Box<EventsLog>>,
    /// The part `events` writes to: after a split, events go to the part recording now.
    events_part: String,
}

/// The daemon finalized the open episode on its own (`ERROR{STOPPED}` was sent). Until
/// the client's next OPEN, its frames for that episode, sent before it learned, are
/// dropped without an error, and its CLOSE is answered `ACCEPTED{CLOSE}` with the
/// episode's final count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stopped {
    pub(super) timesteps: u64,
    /// The episode's final `DURABLE` watermark, the answer to a FLUSH or CLOSE.
    pub(super) durable: u64,
}

/// How a request ended the recording; the connection then calls [`Recording::end`].
pub(super) enum Ending {
    /// The client's CLOSE: answered `DURABLE`, then `ACCEPTED{CLOSE}`.
    Close(FinalStatus),
    /// The transport broke a rule (or the episode failed on storage while taking it in):
    /// this `ERROR` is sent and the episode finalized `interrupted`.
    Failed(Frame),
}

impl Recording {
    /// A just-opened episode; its timesteps come on the socket until `SHM_ATTACH`.
    pub(super) fn new(intake: Intake) -> Self {
        Self {
            intake,
            transport: TimestepSource::Socket,
            stream: None,
            events: None,
            events_part: String::new(),
        }
    }

    /// This recording as stream `stream` of its multi-stream episode.
    pub(super) fn of_stream(mut self, stream: StreamOf) -> Self {
        self.stream = Some(stream);
        self
    }

    /// `frame`, an `ERROR` about this recording, naming the stream when it is one.
    fn named(&self, frame: Frame) -> Frame {
        match (&self.stream, frame) {
            (Some(s), Frame::Error { code, message }) => Frame::Error {
                code,
                message: s.name_in(&message),
            },
            (_, f) => f,
        }
    }

    /// `EVENT`: into the stream's episode, or this episode's events file.
    fn event(&mut self, event: Event, link: &Link) {
        let target =
            match &self.stream {
                Some(s) => Target::Multi {
                    episode: &s.episode,
                    source: s.name.clone(),
                },
                None => {
                    let part = self.intake.session().shared().parts.current();
                    if part != self.events_part {
                        // The episode was split: its events go to the part recording now.
                        self.events = None;
                        self.events_part = part;
                    }
                    let layout = EpisodeLayout::new(&link.ctx.data_dir, &self.events_part);
                    let fs = link.ctx.fs.clone();
                    Target::Single(self.events.get_or_insert_with(|| {
                        Box::new(EventsLog::new(fs, &layout.dir, layout.id()))
                    }))
                }
            };
        on_event(Some(target), event, link);
    }

    /// Handle `request`; `Some` when it ends the recording.
    pub(super) fn on_request(&mut self, request: Request, link: &mut Link) -> Option<Ending> {
        match request {
            Request::ShmAttach {
                slot_size,
                slot_count,
                policy,
            } => self.attach(slot_size, slot_count, policy, link),
            Request::Open(open) => link.error(
                ErrorCode::AlreadyOpen,
                format!(
                    "OPEN `{}`: {} is still open on this connection; CLOSE it first",
                    open.episode_id,
                    self.what()
                ),
            ),
            Request::StreamOpen(open) => link.error(
                ErrorCode::AlreadyOpen,
                format!(
                    "STREAM_OPEN `{}`: {} is still open on this connection; CLOSE it first",
                    open.stream(),
                    self.what()
                ),
            ),
            Request::EpisodeOpen(open) => episode_open(open, link),
            Request::EpisodeClose(outcome) => episode_close(outcome, link),
            Request::Event(event) => self.event(event, link),
            Request::Trigger(t) => super::trigger::on_trigger(t, link),
            Request::Counters(counters) => {
                // Checked when parsed; only the per-stream limit is left. Never touches
                // the timesteps.
                if let Err(e) = self
                    .intake
                    .registration()
                    .live
                    .set_producer_counters(&counters)
                {
                    let refused = Frame::error(ErrorCode::Limit, e.to_string());
                    link.responder.send(&self.named(refused));
                }
            }
            r @ (Request::Timestep(_) | Request::Batch(_)) if !self.transport.is_socket() => {
                link.error(
                    ErrorCode::MalformedFrame,
                    format!(
                        "{} on the socket after SHM_ATTACH: timesteps of this episode travel through the ring",
                        r.frame_type().name()
                    ),
                );
            }
            Request::Timestep(t) => {
                let mut records = self
                    .intake
                    .recycled_records()
                    .unwrap_or_else(|| Vec::with_capacity(RECORD_HEADER_BYTES + t.payload.len()));
                records.clear();
                push_step_record(&mut records, t.seq, t.t_ns, t.reward, t.done, &[&t.payload]);
                let refused = match TimestepBatch::from_records(1, records) {
                    Ok(b) => self.intake.submit(b, false).err(),
                    Err(e) => Some(e.to_error_frame()),
                };
                if let Some(f) = refused {
                    link.responder.send(&self.named(f));
                }
            }
            Request::Batch(b) => {
                if let Err(f) = self.intake.submit(b, false) {
                    link.responder.send(&self.named(f));
                }
            }
            Request::Flush => {
                // Everything published in the ring before the FLUSH is covered by it.
                if let Err(f) = self.transport.catch_up(&mut self.intake) {
                    return Some(Ending::Failed(f));
                }
                if let Err(f) = self.intake.flush() {
                    link.responder.send(&self.named(f));
                }
            }
            Request::Close(outcome) => {
                let status = match outcome {
                    Outcome::Completed => FinalStatus::Complete,
                    Outcome::Aborted => FinalStatus::Aborted,
                };
                if let Err(f) = self.transport.catch_up(&mut self.intake) {
                    return Some(Ending::Failed(f));
                }
                return Some(Ending::Close(status));
            }
        }
        None
    }

    /// `SHM_ATTACH`: take the fds received with it, check and map the ring, answer
    /// `ACCEPTED{SHM_ATTACH, next seq}` or `ERROR{BAD_SHM}` (the episode then carries on
    /// over the socket).
    fn attach(&mut self, slot_size: u32, slot_count: u32, policy: RingPolicy, link: &mut Link) {
        // Every fd received so far belongs to this SHM_ATTACH; unused ones are closed here.
        let (fds, dropped) = link.fds.take_all();
        let id = self.intake.episode_id().to_owned();
        let refused = if !self.transport.is_socket() {
            Some(format!(
                "SHM_ATTACH: episode `{id}` already has a ring attached"
            ))
        } else if dropped > 0 {
            Some(format!(
                "SHM_ATTACH needs exactly 3 fds (ring, data_ready, space_ready), received \
                 {} ({dropped} more than 3 were closed unused)",
                fds.len() + dropped
            ))
        } else {
            None
        };
        if let Some(msg) = refused {
            tracing::warn!(peer = %link.peer, episode = %id, "{msg}");
            link.error(ErrorCode::BadShm, msg);
            return;
        }
        let record_len = RECORD_HEADER_BYTES.saturating_add(self.intake.step_payload());
        let max_frame = link.ctx.limits.max_frame_bytes;
        match TimestepSource::attach_ring(fds, slot_size, slot_count, record_len, max_frame, policy)
        {
            Ok(ring) => {
                self.transport = ring;
                self.intake.session().shared().set_ring_policy(policy);
                self.intake
                    .registration()
                    .live
                    .set_transport(crate::registry::TransportKind::Shm);
                tracing::info!(peer = %link.peer, episode = %id, slot_size, slot_count, policy = policy.name(), "shared-memory ring attached");
                link.responder.send(&Frame::Accepted {
                    what: AcceptedWhat::ShmAttach,
                    up_to_seq: self.intake.next_seq(),
                });
            }
            Err(e) => {
                tracing::warn!(peer = %link.peer, episode = %id, "SHM_ATTACH refused: {e}");
                link.responder.send(&e.to_error_frame());
            }
        }
    }

    /// Before the connection reads its socket: let the transport take in what it brings.
    ///
    /// # Errors
    /// The `ERROR` frame that ends the recording ([`Ending::Failed`]).
    pub(super) fn pump(&mut self, stream: &std::os::unix::net::UnixStream) -> Result<Pump, Frame> {
        self.transport.pump(&mut self.intake, stream)
    }

    /// Take in everything the transport has so far (before the episode is finalized).
    ///
    /// # Errors
    /// The `ERROR` frame that ends the recording ([`Ending::Failed`]).
    pub(super) fn catch_up(&mut self) -> Result<(), Frame> {
        self.transport.catch_up(&mut self.intake)
    }

    /// Lend the decoder a records buffer the writer is done with, for the next batch
    /// (when the timesteps come on the socket).
    pub(super) fn lend_records_buffer(&self, decoder: &mut FrameDecoder) {
        if !decoder.needs_records_buffer() || !self.transport.is_socket() {
            return;
        }
        if let Some(buf) = self.intake.recycled_records() {
            decoder.give_records_buffer(buf);
        }
    }

    /// The stop request the registry holds for this episode (an operator's `wshard
    /// close`, the disk's high watermark), taken.
    pub(super) fn take_stop_request(&self) -> Option<StopReason> {
        self.intake.registration().live.take_stop()
    }

    /// `rolling.quota_policy = "stop_rolling"` while the quota is exceeded: an episode
    /// recorded under `[rolling]` is stopped (a stream of a multi-stream episode is not).
    pub(super) fn quota_stop(&self, link: &Link) -> Option<StopReason> {
        let shared = self.intake.session().shared();
        let quota = &link.ctx.upload.quota;
        let rolling = shared.settings.rolling.is_on() && shared.parts.splittable();
        (rolling && quota.rolling_suspended()).then(|| StopReason::Quota {
            kept_bytes: quota.kept_bytes(),
            quota_bytes: quota.quota_bytes(),
        })
    }

    /// `[rolling]` of the multi-stream episode this stream records in (see
    /// `control::split_multi::roll_if_due`); nothing for an episode of its own, whose
    /// writer rolls it.
    pub(super) fn roll_multi(&self, link: &Link) {
        if let Some(s) = &self.stream {
            let rolling = self.intake.session().shared().settings.rolling;
            crate::control::split_multi::roll_if_due(&link.ctx, &s.episode, rolling);
        }
    }

    /// End the recording as a request decided.
    pub(super) fn end(self, ending: Ending, link: &Link) {
        match ending {
            Ending::Close(status) => self.close(status, link),
            Ending::Failed(error) => self.fail(&error, link),
        }
    }

    /// What is open on the connection, for messages: `episode `ID`` or `stream `S` of
    /// episode `EP``.
    fn what(&self) -> String {
        match &self.stream {
            Some(s) => format!("stream `{}` of episode `{}`", s.name, s.episode.id()),
            None => format!("episode `{}`", self.intake.episode_id()),
        }
    }

    /// Stop reading the transport, finalize the session with `status` (`answer`: the
    /// client's CLOSE, answered with a `DURABLE` covering everything first), leave the
    /// registry, and end the stream in its episode's index when this is one.
    fn finalize(self, status: FinalStatus, answer: bool, link: &Link) -> Finalized {
        self.transport.note_counters(&self.intake, &link.peer);
        let what = self.what();
        let id = match &self.stream {
            Some(s) => format!("{}/{}", s.episode.id(), s.name),
            None => self.intake.episode_id().to_owned(),
        };
        let Self {
            intake,
            transport,
            stream,
            events,
            ..
        } = self;
        drop(transport);
        drop(events);
        let times = intake.t_range();
        let (session, registration) = intake.into_parts();
        let shared = session.shared().clone();
        let summary = if answer {
            session.close_answering(status.clone())
        } else {
            session.close(status.clone())
        };
        drop(registration);
        if let Some(s) = &stream {
            s.ended(&status, &summary, times, Some(&shared.parts), link);
        }
        Finalized {
            what,
            id,
            durable: shared.durable(),
            stats: shared.stats.clone(),
            summary,
        }
    }

    /// CLOSE: finalize, then `ACCEPTED{CLOSE}` (or `ERROR{STORAGE}` when the episode had
    /// failed).
    fn close(self, status: FinalStatus, link: &Link) {
        let f = self.finalize(status, true, link);
        let what = &f.what;
        tracing::info!(peer = %link.peer, episode = %f.id, "episode counters: {}", f.stats.summary());
        match f.summary.failure {
            Some(why) => link.error(
                ErrorCode::Storage,
                format!("CLOSE {what}: it failed earlier: {why}"),
            ),
            None => {
                tracing::info!(peer = %link.peer, episode = %f.id, status = %f.summary.status, timesteps = f.summary.timesteps, chunks = f.summary.chunks, "episode closed");
                link.responder.send(&Frame::Accepted {
                    what: AcceptedWhat::Close,
                    up_to_seq: f.summary.timesteps,
                });
            }
        }
    }

    /// Send `error`, stop reading the transport and finalize the episode `interrupted`.
    fn fail(self, error: &Frame, link: &Link) {
        link.responder.send(&self.named(error.clone()));
        let reason = match error {
            Frame::Error { code, message } => {
                format!("shared-memory ring: {}: {message}", code.name())
            }
            _ => "shared-memory ring refused".to_owned(),
        };
        let f = self.finalize(FinalStatus::Interrupted(reason.clone()), false, link);
        tracing::warn!(peer = %link.peer, episode = %f.id, timesteps = f.summary.timesteps, "episode interrupted: {reason}");
    }

    /// The connection ends (`stop`) with the episode open: finalize it `interrupted`.
    pub(super) fn interrupt(self, stop: Stop, link: &Link) {
        let reason = match stop {
            Stop::Eof if link.responder.write_timed_out() => {
                "the client did not read its socket (server write timeout)"
            }
            Stop::Eof => "client disconnected without CLOSE",
            Stop::Fatal => "connection closed after a protocol error",
            Stop::Shutdown => "daemon shutdown",
            // Deadlines apply only without an open episode.
            Stop::Deadline => "connection closed at a deadline",
        };
        let f = self.finalize(FinalStatus::Interrupted(reason.into()), false, link);
        tracing::info!(peer = %link.peer, episode = %f.id, timesteps = f.summary.timesteps, "episode interrupted: {reason}");
        if stop == Stop::Shutdown {
            link.error(
                ErrorCode::ShuttingDown,
                format!(
                    "{} finalized as interrupted: the daemon is shutting down",
                    f.what
                ),
            );
        }
    }

    /// Obey the registry's stop request `reason`: finalize the episode with the reason's
    /// outcome (`interrupted`; `complete` for an operator's `stop`, `aborted` for `abort`),
    /// every timestep received so far in it; the client gets `ERROR{STOPPED}` naming the
    /// status and the reason and may OPEN again.
    pub(super) fn stop(self, reason: &StopReason, link: &Link) -> Stopped {
        let why = reason.manifest_reason();
        let status = match reason.outcome() {
            EpisodeStatus::Complete => FinalStatus::Complete,
            EpisodeStatus::Aborted => FinalStatus::Aborted,
            _ => FinalStatus::Interrupted(why.clone()),
        };
        let status_name = status.name();
        let f = self.finalize(status, false, link);
        link.ctx
            .registry
            .counters
            .episodes_stopped
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tracing::warn!(peer = %link.peer, episode = %f.id, timesteps = f.summary.timesteps, "episode stopped: {why}");
        let kept = match &f.summary.failure {
            Some(failure) => format!("it had failed earlier: {failure}"),
            None => format!("{} timesteps kept", f.summary.timesteps),
        };
        let advice = match reason {
            StopReason::Disk { .. } => "; new episodes are refused until space returns",
            StopReason::Quota { .. } => "; new episodes are refused until the quota allows",
            _ => "",
        };
        link.error(
            ErrorCode::Stopped,
            format!(
                "{} finalized as {status_name} ({why}); {kept}{advice}",
                f.what
            ),
        );
        Stopped {
            timesteps: f.summary.timesteps,
            durable: f.durable,
        }
    }
}

/// What finalizing a recording gave.
struct Finalized {
    /// `episode `ID`` or `stream `S` of episode `EP``.
    what: String,
    /// The episode id, or `EP/STREAM` (the logs' `episode` field).
    id: String,
    /// The final `DURABLE` watermark.
    durable: u64,
    stats: std::sync::Arc<crate::session::EpisodeStats>,
    summary: crate::session::SessionSummary,
}
