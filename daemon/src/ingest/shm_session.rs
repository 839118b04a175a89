//! A connection's shared-memory ring (docs/PROTOCOL.md, "Shared-memory transport"):
//! `SHM_ATTACH`, draining published slots into the same checks and the same
//! `Session::submit` as `TIMESTEP_BATCH`, and waiting on the socket and `data_ready`
//! together. The ring itself (all the unsafe code) is [`super::shm::Ring`].
//!
//! Backpressure: a slot is consumed only when the previous one was submitted, and
//! `Session::submit` blocks while the episode's queue is full; meanwhile nothing is
//! consumed and the ring fills up. Then the producer blocks on it (policy `block`), or
//! drops batches (`drop_newest`, `drop_oldest`): the daemon accepts the seq gaps that
//! leaves and records them (`Connection::submit`, the writer, `time/dropped_seq_ranges`).

use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use wshard_ingest_proto::{
    AcceptedWhat, ErrorCode, Frame, RingPolicy, TimestepBatch, RECORD_HEADER_BYTES,
};

use super::connection::{Connection, State, READ_POLL};
use super::shm::{Polled, Ring};
use crate::registry::Transport;
use crate::session::FinalStatus;

/// A drain hands its accumulated records to the writer once they reach this size.
const PENDING_FLUSH_BYTES: usize = 1 << 20;
/// Slots with fewer record bytes are appended to the drain's pending batch; larger ones go
/// to the writer on their own.
const MERGE_BELOW_BYTES: usize = 64 << 10;

/// What [`Connection::pump_ring`] found.
pub(super) enum Pump {
    /// The socket has something (data, EOF or an error): read it.
    Socket,
    /// Nothing on the socket yet: look at the shutdown flag and pump again.
    Again,
}

/// Why a drain stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Drained {
    /// The ring is empty (or there is none).
    Empty,
    /// The slot budget ran out with slots possibly left.
    Budget,
    /// The ring broke a rule: the ERROR was sent and the episode finalized `interrupted`.
    Failed,
}

fn readable(flags: Option<PollFlags>) -> bool {
    flags.is_some_and(|r| r.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR))
}

impl Connection {
    /// True while the open episode receives its timesteps through a ring.
    pub(super) fn has_ring(&self) -> bool {
        matches!(&self.state, State::Recording { ring: Some(_), .. })
    }

    /// `SHM_ATTACH`: take the fds received with it, check and map the ring, answer
    /// `ACCEPTED{SHM_ATTACH, next seq}` or `ERROR{BAD_SHM}` (the episode then carries on
    /// over the socket).
    pub(super) fn shm_attach(&mut self, slot_size: u32, slot_count: u32, policy: RingPolicy) {
        // Every fd received so far belongs to this SHM_ATTACH; unused ones are closed here.
        let (fds, dropped) = self.fds.take_all();
        let max_frame = self.ctx.limits.max_frame_bytes;
        let State::Recording {
            session,
            next_seq,
            step_payload,
            ring,
            registration,
            ..
        } = &mut self.state
        else {
            self.error(
                ErrorCode::NotOpen,
                "SHM_ATTACH without an open episode: send OPEN first",
            );
            return;
        };
        let id = session.shared().schema.episode_id.clone();
        let refused = if ring.is_some() {
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
            tracing::warn!(peer = %self.peer, episode = %id, "{msg}");
            self.responder.error(ErrorCode::BadShm, msg);
            return;
        }
        let record_len = RECORD_HEADER_BYTES.saturating_add(*step_payload);
        match Ring::attach(fds, slot_size, slot_count, record_len, max_frame, policy) {
            Ok(r) => {
                *ring = Some(r);
                session.shared().set_ring_policy(policy);
                registration.live.set_transport(Transport::Shm);
                let up_to_seq = *next_seq;
                tracing::info!(peer = %self.peer, episode = %id, slot_size, slot_count, policy = policy.name(), "shared-memory ring attached");
                self.responder.send(&Frame::Accepted {
                    what: AcceptedWhat::ShmAttach,
                    up_to_seq,
                });
            }
            Err(e) => {
                tracing::warn!(peer = %self.peer, episode = %id, "SHM_ATTACH refused: {e}");
                self.responder.send(&e.to_error_frame());
            }
        }
    }

    /// Consume up to `budget` published slots, each checked and submitted like a
    /// `TIMESTEP_BATCH`. A slot that breaks a rule gets its `ERROR` sent, and the episode
    /// is finalized `interrupted` with everything accepted before it.
    pub(super) fn drain_ring(&mut self, budget: u64) -> Drained {
        // Consecutive slots without a seq gap between them go to the writer as one batch:
        // one queue message per drain instead of one per slot.
        let mut pending: Vec<u8> = Vec::new();
        let mut pending_steps = 0u64;
        let mut spare: Vec<u8> = Vec::new();
        let mut outcome = Drained::Budget;
        for _ in 0..budget {
            let State::Recording {
                session,
                ring: Some(ring),
                next_seq,
                ..
            } = &mut self.state
            else {
                outcome = Drained::Empty;
                break;
            };
            let expected = *next_seq;
            // A slot appended to `pending` leaves its buffer for the next slot's copy; else
            // a buffer the writer is done with (no fresh memory per large slot).
            let mut records = std::mem::take(&mut spare);
            if records.capacity() == 0 {
                records = session.recycled_records().unwrap_or_default();
            }
            let allow_gap = ring.policy().drops();
            let count = match ring.poll_slots(&mut records) {
                Ok(Polled::Empty) => {
                    outcome = Drained::Empty;
                    break;
                }
                Ok(Polled::TakenBack) => continue,
                Ok(Polled::Slot(count)) => count,
                Err(e) => {
                    if !self.flush_pending(&mut pending, &mut pending_steps) {
                        return Drained::Failed;
                    }
                    self.ring_failed(&e.to_proto().to_error_frame());
                    return Drained::Failed;
                }
            };
            let accepted =
                TimestepBatch::from_records(count, records).map_err(|e| e.to_error_frame());
            let gap = accepted.as_ref().is_ok_and(|b| b.first_seq() != expected);
            // A large slot goes to the writer alone, as it is: appending it (or appending to
            // it) would copy it once more for little gain.
            let large = accepted
                .as_ref()
                .is_ok_and(|b| b.records().len() >= MERGE_BELOW_BYTES);
            if gap || large || accepted.is_err() {
                // The writer records a gap where a batch starts: send what came before.
                if !self.flush_pending(&mut pending, &mut pending_steps) {
                    return Drained::Failed;
                }
            }
            let refused = accepted.and_then(|batch| {
                let steps = self.accept(&batch, allow_gap)?;
                if pending.is_empty() {
                    pending = batch.into_records();
                } else {
                    pending.extend_from_slice(batch.records());
                    spare = batch.into_records();
                }
                pending_steps += steps;
                Ok(())
            });
            if let Err(frame) = refused {
                if self.flush_pending(&mut pending, &mut pending_steps) {
                    self.ring_failed(&frame);
                }
                return Drained::Failed;
            }
            if (large || pending.len() >= PENDING_FLUSH_BYTES)
                && !self.flush_pending(&mut pending, &mut pending_steps)
            {
                return Drained::Failed;
            }
        }
        if !self.flush_pending(&mut pending, &mut pending_steps) {
            return Drained::Failed;
        }
        outcome
    }

    /// Send the accumulated records of a drain to the writer. `false` when the episode
    /// failed (the ERROR was sent and the episode finalized `interrupted`).
    fn flush_pending(&mut self, pending: &mut Vec<u8>, steps: &mut u64) -> bool {
        if *steps == 0 {
            return true;
        }
        let records = std::mem::take(pending);
        let n = std::mem::take(steps);
        match self.send_records(records, n) {
            Ok(()) => true,
            Err(frame) => {
                self.ring_failed(&frame);
                false
            }
        }
    }

    /// Consume every slot published so far (at most `slot_count`: a ring never holds
    /// more), e.g. before FLUSH, CLOSE or finalizing on EOF. `false` when the ring failed.
    pub(super) fn drain_published(&mut self) -> bool {
        let budget = match &self.state {
            State::Recording { ring: Some(r), .. } => u64::from(r.slot_count()),
            _ => return true,
        };
        self.drain_ring(budget) != Drained::Failed
    }

    /// Send `error`, stop reading the ring and finalize the episode `interrupted`.
    fn ring_failed(&mut self, error: &Frame) {
        self.responder.send(error);
        let Some((session, registration, ring)) = self.take_recording() else {
            return;
        };
        if let Some(r) = &ring {
            note_ring_counters(&session, r, &self.peer);
        }
        drop(ring);
        let reason = match error {
            Frame::Error { code, message } => {
                format!("shared-memory ring: {}: {message}", code.name())
            }
            _ => "shared-memory ring refused".to_owned(),
        };
        let id = session.shared().schema.episode_id.clone();
        let summary = session.close(FinalStatus::Interrupted(reason.clone()));
        drop(registration);
        tracing::warn!(peer = %self.peer, episode = %id, timesteps = summary.timesteps, "episode interrupted: {reason}");
    }

    /// Before the episode is finalized: read the producer's ring counters into the
    /// session (for the manifest) and log them.
    pub(super) fn note_ring_counters(&self) {
        if let State::Recording {
            session,
            ring: Some(r),
            ..
        } = &self.state
        {
            note_ring_counters(session, r, &self.peer);
        }
    }

    /// With a ring attached: consume what is published (a bounded amount), then sleep on
    /// the socket and `data_ready` together for at most [`READ_POLL`].
    pub(super) fn pump_ring(&mut self, stream: &UnixStream) -> Pump {
        let budget = match &self.state {
            State::Recording { ring: Some(r), .. } => u64::from(r.slot_count()),
            _ => return Pump::Socket,
        };
        match self.drain_ring(budget) {
            Drained::Failed => return Pump::Again,
            Drained::Budget => {
                // More may be waiting: give the socket a look without sleeping.
                let mut fds = [PollFd::new(stream.as_fd(), PollFlags::POLLIN)];
                return match poll(&mut fds, PollTimeout::ZERO) {
                    Ok(_) if !readable(fds[0].revents()) => Pump::Again,
                    _ => Pump::Socket,
                };
            }
            Drained::Empty => {}
        }
        let State::Recording {
            ring: Some(ring), ..
        } = &mut self.state
        else {
            return Pump::Socket;
        };
        if !ring.prepare_sleep() {
            return Pump::Again;
        }
        let timeout = PollTimeout::try_from(READ_POLL).unwrap_or(PollTimeout::ZERO);
        let (result, socket) = {
            let mut fds = [
                PollFd::new(stream.as_fd(), PollFlags::POLLIN),
                PollFd::new(ring.data_ready(), PollFlags::POLLIN),
            ];
            let result = poll(&mut fds, timeout);
            (result, readable(fds[0].revents()))
        };
        ring.woke();
        match result {
            Ok(_) if socket => Pump::Socket,
            Ok(_) | Err(Errno::EINTR) => Pump::Again,
            // Let the socket read report whatever is wrong.
            Err(_) => Pump::Socket,
        }
    }
}

/// Copy the producer's ring counters into the session and log them with the daemon's own
/// count, when the ring has a drop policy.
fn note_ring_counters(session: &crate::session::Session, ring: &Ring, peer: &str) {
    if !ring.policy().drops() {
        return;
    }
    let shared = session.shared();
    let (steps, batches) = ring.producer_dropped();
    shared.set_producer_dropped(steps, batches);
    let stats = &shared.stats;
    let seen = stats
        .dropped_steps
        .load(std::sync::atomic::Ordering::Relaxed);
    let gaps = stats.gaps.load(std::sync::atomic::Ordering::Relaxed);
    tracing::info!(
        peer,
        episode = %shared.schema.episode_id,
        policy = ring.policy().name(),
        dropped_steps = seen,
        gaps,
        producer_dropped_steps = steps,
        producer_dropped_batches = batches,
        slots_taken_back = ring.taken_back(),
        "shared-memory ring drops"
    );
}
