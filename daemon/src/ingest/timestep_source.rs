//! Where an open episode's timesteps come from: `TIMESTEP` / `TIMESTEP_BATCH` frames on
//! the socket, or a shared-memory ring after `SHM_ATTACH` (docs/PROTOCOL.md,
//! "Shared-memory transport"). The ring's slots go through the same checks and the same
//! [`Intake`] as `TIMESTEP_BATCH`; waiting covers the socket and `data_ready` together.
//!
//! Backpressure: a slot is consumed only when the previous one was submitted, and
//! `Session::submit` blocks while the episode's queue is full; meanwhile nothing is
//! consumed and the ring fills up. Then the producer blocks on it (policy `block`), or
//! drops batches (`drop_newest`, `drop_oldest`): the daemon accepts the seq gaps that
//! leaves and records them ([`Intake::accept`], the writer, `time/dropped_seq_ranges`).

use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering;
use std::time::Duration;

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use wshard_ingest_proto::{Frame, ProtoError, RingPolicy, TimestepBatch};

use super::intake::Intake;
use super::shm::{Polled, Ring};

/// How often a blocked read (or a wait on the ring) wakes up to look at the shutdown flag.
pub(super) const READ_POLL: Duration = Duration::from_millis(100);

/// A drain hands its accumulated records to the writer once they reach this size.
const PENDING_FLUSH_BYTES: usize = 1 << 20;
/// Slots with fewer record bytes are appended to the drain's pending batch; larger ones go
/// to the writer on their own.
const MERGE_BELOW_BYTES: usize = 64 << 10;

/// Where an open episode's timesteps come from (its transport, as the daemon reads it).
pub(super) enum TimestepSource {
    /// Timestep frames on the socket.
    Socket,
    /// A shared-memory ring; timestep frames on the socket are refused.
    Ring(RingDrain),
}

/// What [`TimestepSource::pump`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Pump {
    /// The socket has something (data, EOF or an error), or may have: read it.
    Socket,
    /// Nothing on the socket yet: look at the shutdown flag and pump again.
    Again,
}

impl TimestepSource {
    /// A ring from the three fds of an `SHM_ATTACH` (ring, `data_ready`, `space_ready`),
    /// checked and mapped, for records of `record_len` bytes.
    ///
    /// # Errors
    /// [`ProtoError::BadShm`] naming what is wrong; the fds are closed.
    pub(super) fn attach_ring(
        fds: Vec<OwnedFd>,
        slot_size: u32,
        slot_count: u32,
        record_len: usize,
        max_frame_bytes: u32,
        policy: RingPolicy,
    ) -> Result<Self, ProtoError> {
        let ring = Ring::attach(
            fds,
            slot_size,
            slot_count,
            record_len,
            max_frame_bytes,
            policy,
        )?;
        Ok(Self::Ring(RingDrain { ring }))
    }

    /// True while the timesteps come as frames on the socket.
    pub(super) fn is_socket(&self) -> bool {
        matches!(self, Self::Socket)
    }

    /// Take in everything the producer published so far, e.g. before FLUSH, CLOSE or
    /// finalizing the episode. Nothing to do for the socket: its frames are read in order.
    ///
    /// # Errors
    /// The `ERROR` frame when the ring broke a rule (or the episode failed on storage):
    /// what was accepted before it went to the writer, and the episode must be finalized
    /// `interrupted`.
    pub(super) fn catch_up(&mut self, intake: &mut Intake) -> Result<(), Frame> {
        match self {
            Self::Socket => Ok(()),
            Self::Ring(r) => r.catch_up(intake),
        }
    }

    /// Before the connection reads its socket: with a ring, take in what is published (a
    /// bounded amount), then sleep on the socket and `data_ready` together for at most
    /// [`READ_POLL`]. With the socket, read it at once.
    ///
    /// # Errors
    /// As [`TimestepSource::catch_up`].
    pub(super) fn pump(&mut self, intake: &mut Intake, stream: &UnixStream) -> Result<Pump, Frame> {
        match self {
            Self::Socket => Ok(Pump::Socket),
            Self::Ring(r) => r.pump(intake, stream),
        }
    }

    /// Before the episode is finalized: read the producer's ring counters into the
    /// session (for the manifest) and log them.
    pub(super) fn note_counters(&self, intake: &Intake, peer: &str) {
        if let Self::Ring(r) = self {
            r.note_counters(intake, peer);
        }
    }
}

/// Why a drain stopped (a failure is the `Err` of [`RingDrain::drain`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Drained {
    /// The ring is empty.
    Empty,
    /// The slot budget ran out with slots possibly left.
    Budget,
}

/// A connection's mapped ring, drained into the episode's [`Intake`].
pub(super) struct RingDrain {
    ring: Ring,
}

fn readable(flags: Option<PollFlags>) -> bool {
    flags.is_some_and(|r| r.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR))
}

impl RingDrain {
    /// Consume up to `budget` published slots, each checked and submitted like a
    /// `TIMESTEP_BATCH`. A slot that breaks a rule ends the drain with its `ERROR`, after
    /// everything accepted before it went to the writer.
    fn drain(&mut self, intake: &mut Intake, budget: u64) -> Result<Drained, Frame> {
        // Consecutive slots without a seq gap between them go to the writer as one batch:
        // one queue message per drain instead of one per slot.
        let mut pending: Vec<u8> = Vec::new();
        let mut pending_steps = 0u64;
        let mut spare: Vec<u8> = Vec::new();
        let mut outcome = Drained::Budget;
        for _ in 0..budget {
            let expected = intake.next_seq();
            // A slot appended to `pending` leaves its buffer for the next slot's copy; else
            // a buffer the writer is done with (no fresh memory per large slot).
            let mut records = std::mem::take(&mut spare);
            if records.capacity() == 0 {
                records = intake.recycled_records().unwrap_or_default();
            }
            let allow_gap = self.ring.policy().drops();
            let count = match self.ring.poll_slots(&mut records) {
                Ok(Polled::Empty) => {
                    outcome = Drained::Empty;
                    break;
                }
                Ok(Polled::TakenBack) => continue,
                Ok(Polled::Slot(count)) => count,
                Err(e) => {
                    flush_pending(intake, &mut pending, &mut pending_steps)?;
                    return Err(e.to_proto().to_error_frame());
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
                flush_pending(intake, &mut pending, &mut pending_steps)?;
            }
            let refused = accepted.and_then(|batch| {
                let steps = intake.accept(&batch, allow_gap)?;
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
                flush_pending(intake, &mut pending, &mut pending_steps)?;
                return Err(frame);
            }
            if large || pending.len() >= PENDING_FLUSH_BYTES {
                flush_pending(intake, &mut pending, &mut pending_steps)?;
            }
        }
        flush_pending(intake, &mut pending, &mut pending_steps)?;
        Ok(outcome)
    }

    /// Consume every slot published so far (at most `slot_count`: a ring never holds
    /// more).
    fn catch_up(&mut self, intake: &mut Intake) -> Result<(), Frame> {
        let budget = u64::from(self.ring.slot_count());
        self.drain(intake, budget).map(|_| ())
    }

    /// See [`TimestepSource::pump`].
    fn pump(&mut self, intake: &mut Intake, stream: &UnixStream) -> Result<Pump, Frame> {
        let budget = u64::from(self.ring.slot_count());
        match self.drain(intake, budget)? {
            Drained::Budget => {
                // More may be waiting: give the socket a look without sleeping.
                let mut fds = [PollFd::new(stream.as_fd(), PollFlags::POLLIN)];
                return Ok(match poll(&mut fds, PollTimeout::ZERO) {
                    Ok(_) if !readable(fds[0].revents()) => Pump::Again,
                    _ => Pump::Socket,
                });
            }
            Drained::Empty => {}
        }
        let ring = &mut self.ring;
        if !ring.prepare_sleep() {
            return Ok(Pump::Again);
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
        Ok(match result {
            Ok(_) if socket => Pump::Socket,
            Ok(_) | Err(Errno::EINTR) => Pump::Again,
            // Let the socket read report whatever is wrong.
            Err(_) => Pump::Socket,
        })
    }

    /// Copy the producer's ring counters into the session and log them with the daemon's
    /// own count, when the ring has a drop policy.
    fn note_counters(&self, intake: &Intake, peer: &str) {
        let ring = &self.ring;
        if !ring.policy().drops() {
            return;
        }
        let shared = intake.session().shared();
        let (steps, batches) = ring.producer_dropped();
        shared.set_producer_dropped(steps, batches);
        let stats = &shared.stats;
        let seen = stats.dropped_steps.load(Ordering::Relaxed);
        let gaps = stats.gaps.load(Ordering::Relaxed);
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
}

/// Send the accumulated records of a drain to the writer.
fn flush_pending(intake: &Intake, pending: &mut Vec<u8>, steps: &mut u64) -> Result<(), Frame> {
    if *steps == 0 {
        return Ok(());
    }
    let records = std::mem::take(pending);
    let n = std::mem::take(steps);
    intake.send_records(records, n)
}
