//! The shared-memory ring consumer (docs/PROTOCOL.md, "Shared-memory transport").
//! It calls only [`super::fds`] (the fd checks); `timestep_source` drives it.
//!
//! The mapping itself (mapping the client's memfd, the atomic control words, copying a
//! slot out, unmapping) and all of its `unsafe` code are `wshard_shm_ring::MappedRing`'s,
//! which the Rust client produces through too; here are the consumer's rules. The fds are
//! received and checked in [`super::fds`].
//!
//! Everything in the ring is untrusted: the producer is another process that may write
//! anything at any time, also while we read. So the daemon
//! - checks the fds before mapping (a sealed memfd of exactly the announced size, so the
//!   mapping can never be cut short and no access can fault; two eventfds);
//! - reads the header with `pread` (a copy) before mapping;
//! - keeps its own `tail` and loads `head` once per slot; only with the `drop_oldest`
//!   policy does it read the shared `tail` (the producer may move it past slots it takes
//!   back), and then it never moves backwards: a shared `tail` behind its own or ahead of
//!   `head` is a broken ring;
//! - copies a slot's header, bounds-checks `len` against `slot_size`, then copies the
//!   records out, and only validates the copies;
//! - never forms a Rust reference to ring bytes: only atomics on the control words and
//!   copies out of (within bounds) slots.
//!
//! `drop_oldest` (docs/PROTOCOL.md, "Backpressure policies"): a slot is claimed with a
//! compare-and-swap of the shared `tail` from its index to index + 1 *after* it was copied.
//! The producer takes a slot back with the same compare-and-swap before it overwrites it,
//! so exactly one side wins: if we win, the producer had not touched the slot while we
//! copied; if it wins, our copy (possibly torn) is discarded unread.
//!
//! `data_ready` is switched to `O_NONBLOCK` (it is only ever written by the client, so this
//! cannot change what the client sees), so that reading it never blocks even if the
//! producer reads it too. `space_ready` keeps its flags (the client may block reading it);
//! the daemon writes it only after `poll(POLLOUT, 0)` says the write cannot block, and
//! treats a saturated counter as a broken ring.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{fence, Ordering};

use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use wshard_ingest_proto::ring::{self, RingHeader, RingPolicy, RING_IDENT_BYTES, SHM_ATTACH_FDS};
use wshard_ingest_proto::ProtoError;
use wshard_shm_ring::{check_ring_fd, MapError, MappedRing, SlotError};

use super::fds::{bad_shm as bad, check_eventfd};

#[cfg(test)]
mod tests;

/// A broken ring: the producer broke a rule. Sent as `ERROR{BAD_SHM}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RingError {
    #[error("ring head {head} moved backwards (tail {tail})")]
    HeadBackwards { head: u64, tail: u64 },
    #[error("ring head {head} is more than slot_count {slot_count} ahead of tail {tail}")]
    HeadTooFar {
        head: u64,
        tail: u64,
        slot_count: u32,
    },
    /// `drop_oldest`: the shared `tail` went behind the slots already consumed.
    #[error("ring tail {tail} moved backwards (slots consumed or dropped: {consumed})")]
    TailBackwards { tail: u64, consumed: u64 },
    /// `drop_oldest`: the shared `tail` is past `head`.
    #[error("ring tail {tail} is ahead of head {head}")]
    TailAhead { tail: u64, head: u64 },
    /// A slot header breaks the `len` / `count` rules.
    #[error("{0}")]
    Slot(ProtoError),
    /// A slot outside the mapping: cannot happen for a checked geometry and slot header;
    /// checked anyway.
    #[error("{0}")]
    Mapping(#[from] SlotError),
    #[error("space_ready eventfd: {0}")]
    Wake(String),
}

impl RingError {
    /// As a protocol error (`BAD_SHM`).
    #[must_use]
    pub(crate) fn to_proto(&self) -> ProtoError {
        match self {
            Self::Slot(e) => e.clone(),
            other => ProtoError::BadShm {
                message: other.to_string(),
            },
        }
    }
}

/// What [`Ring::poll_slots`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Polled {
    /// Nothing published past the slots consumed.
    Empty,
    /// A slot was consumed: its records are in the buffer, this many timesteps.
    Slot(u32),
    /// `drop_oldest`: the producer took the slot back while it was being copied; the copy
    /// was discarded. Poll again.
    TakenBack,
}

/// A mapped, checked ring of one episode. Unmapped on drop.
#[derive(Debug)]
pub(crate) struct Ring {
    mapped: MappedRing,
    record_len: usize,
    policy: RingPolicy,
    /// Slots consumed (or, with `drop_oldest`, taken back by the producer), ever: the
    /// daemon's own copy. Read back from the ring only with `drop_oldest`, and then never
    /// moved backwards.
    tail: u64,
    /// `drop_oldest`: slots the producer took back before we could consume them.
    taken_back: u64,
    data_ready: OwnedFd,
    space_ready: OwnedFd,
}

impl Ring {
    /// Check the three fds of an `SHM_ATTACH` (in order: ring, `data_ready`,
    /// `space_ready`) and the geometry, read the header, map the ring.
    ///
    /// # Errors
    /// [`ProtoError::BadShm`] naming what is wrong; the fds are closed.
    pub(crate) fn attach(
        fds: Vec<OwnedFd>,
        slot_size: u32,
        slot_count: u32,
        record_len: usize,
        max_frame_bytes: u32,
        policy: RingPolicy,
    ) -> Result<Self, ProtoError> {
        let fds: [OwnedFd; SHM_ATTACH_FDS] = fds.try_into().map_err(|v: Vec<OwnedFd>| {
            bad(format!(
                "SHM_ATTACH needs exactly {SHM_ATTACH_FDS} fds (ring, data_ready, space_ready), \
                 received {}",
                v.len()
            ))
        })?;
        let [ring_fd, data_ready, space_ready] = fds;
        ring::validate_geometry(slot_size, slot_count, record_len, max_frame_bytes)?;
        let want = ring::ring_bytes(slot_size, slot_count)
            .ok_or_else(|| bad("SHM_ATTACH ring size overflows".into()))?;
        if usize::try_from(want).map_or(true, |n| n == 0) {
            return Err(bad(format!(
                "SHM_ATTACH ring of {want} bytes cannot be mapped"
            )));
        }
        // `MappedRing::map` checks the ring fd again; checked here first so that the fds
        // are judged in order (ring, data_ready, space_ready) before the header is read.
        check_ring_fd(ring_fd.as_fd(), want).map_err(|e| bad(e.to_string()))?;
        check_eventfd(&data_ready, "data_ready")?;
        check_eventfd(&space_ready, "space_ready")?;
        let flags = fcntl(data_ready.as_raw_fd(), FcntlArg::F_GETFL)
            .map_err(|e| bad(format!("SHM_ATTACH data_ready fd: F_GETFL: {e}")))?;
        let flags = OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK;
        fcntl(data_ready.as_raw_fd(), FcntlArg::F_SETFL(flags))
            .map_err(|e| bad(format!("SHM_ATTACH data_ready fd: F_SETFL: {e}")))?;
        // The header, copied out with pread before anything is mapped.
        let mut ident = [0u8; RING_IDENT_BYTES];
        let n = nix::sys::uio::pread(&ring_fd, &mut ident, 0)
            .map_err(|e| bad(format!("SHM_ATTACH ring fd: reading the header: {e}")))?;
        RingHeader::parse(&ident[..n])?.check_matches(slot_size, slot_count)?;
        let mapped =
            MappedRing::map(ring_fd.as_fd(), slot_size, slot_count).map_err(|e| match e {
                MapError::Fd(e) => bad(e.to_string()),
                e => bad(format!("SHM_ATTACH ring fd: {e}")),
            })?;
        let r = Self {
            mapped,
            record_len,
            policy,
            tail: 0,
            taken_back: 0,
            data_ready,
            space_ready,
        };
        r.mapped.tail().store(0, Ordering::Release);
        r.mapped.consumer_sleeping().store(0, Ordering::SeqCst);
        Ok(r)
    }

    /// `head` as the producer last published it (acquire), unchecked.
    #[must_use]
    pub(crate) fn published(&self) -> u64 {
        self.mapped.head().load(Ordering::Acquire)
    }

    /// `slot_count`.
    #[must_use]
    pub(crate) fn slot_count(&self) -> u32 {
        self.mapped.slot_count()
    }

    /// The backpressure policy of `SHM_ATTACH`.
    #[must_use]
    pub(crate) fn policy(&self) -> RingPolicy {
        self.policy
    }

    /// `drop_oldest`: slots the producer took back before they were consumed.
    #[must_use]
    pub(crate) fn taken_back(&self) -> u64 {
        self.taken_back
    }

    /// The producer's counters `(dropped_steps, dropped_batches)` as it last stored them:
    /// untrusted, for logs and the manifest only.
    #[must_use]
    pub(crate) fn producer_dropped(&self) -> (u64, u64) {
        (
            self.mapped.dropped_steps().load(Ordering::Acquire),
            self.mapped.dropped_batches().load(Ordering::Acquire),
        )
    }

    /// The consumer's view before claiming a slot: `(head, index of the slot to consume)`,
    /// checked. With `drop_oldest` the shared `tail` is loaded first (for an honest
    /// producer it never passes `head`, which only grows), adopted when it moved forward
    /// (the producer took slots back), and never followed backwards.
    fn positions(&mut self) -> Result<(u64, u64), RingError> {
        if self.policy == RingPolicy::DropOldest {
            let shared = self.mapped.tail().load(Ordering::Acquire);
            let head = self.published();
            if shared < self.tail {
                return Err(RingError::TailBackwards {
                    tail: shared,
                    consumed: self.tail,
                });
            }
            if shared > head {
                return Err(RingError::TailAhead { tail: shared, head });
            }
            self.taken_back += shared - self.tail;
            self.tail = shared;
            // `head - tail` may exceed slot_count here: the two loads are not one snapshot,
            // and the producer may have published and taken back more in between. The slot
            // at `tail` is then gone, and the compare-and-swap that claims it fails.
            return Ok((head, shared));
        }
        let head = self.published();
        let tail = self.tail;
        if head < tail {
            return Err(RingError::HeadBackwards { head, tail });
        }
        let slot_count = self.mapped.slot_count();
        if head - tail > u64::from(slot_count) {
            return Err(RingError::HeadTooFar {
                head,
                tail,
                slot_count,
            });
        }
        Ok((head, tail))
    }

    /// `drop_oldest`: after copying slot `index`, whether the producer has taken it back
    /// (the shared `tail` moved past it). The acquire fence orders the copy before the load,
    /// pairing with the producer's release fence between its compare-and-swap and its writes:
    /// if the copy saw any of those writes, this load sees the moved `tail`.
    fn taken_back_since(&self, index: u64) -> bool {
        fence(Ordering::Acquire);
        self.mapped.tail().load(Ordering::Acquire) != index
    }

    /// The `data_ready` eventfd, to wait on.
    #[must_use]
    pub(crate) fn data_ready(&self) -> BorrowedFd<'_> {
        self.data_ready.as_fd()
    }

    /// Consume the next published slot, if any: its records are copied into `out`
    /// (replacing its contents) and its `count` is returned as [`Polled::Slot`];
    /// [`Polled::Empty`] when the ring is empty, [`Polled::TakenBack`] when (`drop_oldest`)
    /// the producer took the slot back during the copy. The slot is released to the
    /// producer (`tail + 1`, release; `space_ready` if the producer sleeps) as soon as it is
    /// copied (with `drop_oldest`: claimed by a compare-and-swap of `tail`); the caller
    /// validates the copy as a `TIMESTEP_BATCH`.
    ///
    /// # Errors
    /// [`RingError`] when the producer broke a rule; the ring must not be read again.
    pub(crate) fn poll_slots(&mut self, out: &mut Vec<u8>) -> Result<Polled, RingError> {
        let (head, tail) = self.positions()?;
        if head == tail {
            return Ok(Polled::Empty);
        }
        let oldest = self.policy == RingPolicy::DropOldest;
        let header = self.mapped.read_slot_header(tail)?;
        let len = match header.check(tail, self.mapped.slot_size(), self.record_len) {
            Ok(len) => len,
            // A header torn by the producer taking the slot back is not an error.
            Err(_) if oldest && self.taken_back_since(tail) => return Ok(Polled::TakenBack),
            Err(e) => return Err(RingError::Slot(e)),
        };
        self.mapped.read_slot_records(tail, len, out)?;
        if oldest {
            // Claim the slot: whoever moves `tail` from `tail` first owns it. The acquire
            // fence keeps the copy before the claim; the release side of the swap lets the
            // producer, once it sees the new `tail`, overwrite the slot only after the copy.
            fence(Ordering::Acquire);
            if self
                .mapped
                .tail()
                .compare_exchange(tail, tail + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                // Taken back: the next poll adopts the moved `tail` (and checks it).
                out.clear();
                return Ok(Polled::TakenBack);
            }
            self.tail = tail + 1;
        } else {
            self.tail = tail + 1;
            self.mapped.tail().store(self.tail, Ordering::Release);
        }
        // Store tail, then load producer_sleeping: a full fence pairs with the producer's
        // "store producer_sleeping = 1, re-check tail" so that one of us sees the other.
        fence(Ordering::SeqCst);
        // A sleeping producer found the ring full; it is woken once at most half the ring
        // is still occupied (as of the `head` read above, so never later than that), not
        // for every slot, which would cost a wake-up per slot on both sides. The drain
        // always goes on until the ring is empty, so that point is always reached.
        let occupied = head.saturating_sub(self.tail);
        if occupied <= u64::from(self.mapped.slot_count() / 2)
            && self.mapped.producer_sleeping().load(Ordering::SeqCst) == 1
        {
            self.wake_producer()?;
        }
        Ok(Polled::Slot(header.count))
    }

    /// Write 1 to `space_ready`, never blocking: if the counter cannot take it (only a
    /// producer writing it itself gets it there) the ring is broken.
    fn wake_producer(&self) -> Result<(), RingError> {
        let mut fds = [PollFd::new(self.space_ready.as_fd(), PollFlags::POLLOUT)];
        match poll(&mut fds, PollTimeout::ZERO) {
            Ok(_) => {}
            Err(e) => return Err(RingError::Wake(format!("poll: {e}"))),
        }
        let writable = fds[0]
            .revents()
            .is_some_and(|r| r.contains(PollFlags::POLLOUT));
        if !writable {
            return Err(RingError::Wake(
                "counter saturated (the producer wrote it), cannot wake the producer".into(),
            ));
        }
        // eventfd counters are native-endian u64 by definition.
        #[allow(clippy::host_endian_bytes)]
        let one = 1u64.to_ne_bytes();
        match nix::unistd::write(&self.space_ready, &one) {
            Ok(_) | Err(nix::errno::Errno::EAGAIN) => Ok(()),
            Err(e) => Err(RingError::Wake(format!("write: {e}"))),
        }
    }

    /// Before sleeping: store `consumer_sleeping = 1`, then re-check `head`. Returns
    /// `true` when the ring is still empty (the producer will write `data_ready` after
    /// its next publish), `false` (and `consumer_sleeping` back at 0) when slots arrived.
    pub(crate) fn prepare_sleep(&mut self) -> bool {
        self.mapped.consumer_sleeping().store(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let head = self.mapped.head().load(Ordering::SeqCst);
        if head == self.tail {
            true
        } else {
            self.woke();
            false
        }
    }

    /// After sleeping: `consumer_sleeping = 0` and reset `data_ready` (non-blocking).
    pub(crate) fn woke(&mut self) {
        self.mapped.consumer_sleeping().store(0, Ordering::SeqCst);
        let mut buf = [0u8; 8];
        let _ = nix::unistd::read(self.data_ready.as_raw_fd(), &mut buf);
    }
}
