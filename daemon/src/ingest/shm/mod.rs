//! The shared-memory ring consumer (docs/PROTOCOL.md, "Shared-memory transport").
//! It calls only [`super::fds`] (the fd checks); `transport` drives it.
//!
//! All of the daemon's `unsafe` code on the ring is here: mapping the client's memfd, and
//! reading and writing the mapping. The fds are received and checked in [`super::fds`].
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
//!   `ptr::copy_nonoverlapping` out of (within bounds) slots.
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
#![allow(unsafe_code)]

use std::num::NonZeroUsize;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
use wshard_ingest_proto::ring::{
    self, RingHeader, RingPolicy, SlotHeader, OFFSET_CONSUMER_SLEEPING, OFFSET_DROPPED_BATCHES,
    OFFSET_DROPPED_STEPS, OFFSET_HEAD, OFFSET_PRODUCER_SLEEPING, OFFSET_TAIL, RING_IDENT_BYTES,
    SHM_ATTACH_FDS, SLOT_HEADER_BYTES,
};
use wshard_ingest_proto::ProtoError;

use super::fds::{bad_shm as bad, check_eventfd, check_ring_fd};

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
    /// Cannot happen for a checked geometry; checked anyway.
    #[error("ring slot {index} lies outside the mapping")]
    OutOfBounds { index: u64 },
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

/// The ring's `u64` control words.
#[derive(Clone, Copy)]
enum Word64 {
    Head,
    Tail,
    DroppedSteps,
    DroppedBatches,
}

impl Word64 {
    fn offset(self) -> usize {
        match self {
            Self::Head => OFFSET_HEAD,
            Self::Tail => OFFSET_TAIL,
            Self::DroppedSteps => OFFSET_DROPPED_STEPS,
            Self::DroppedBatches => OFFSET_DROPPED_BATCHES,
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

/// The ring's `u32` control words.
#[derive(Clone, Copy)]
enum Word32 {
    ConsumerSleeping,
    ProducerSleeping,
}

impl Word32 {
    fn offset(self) -> usize {
        match self {
            Self::ConsumerSleeping => OFFSET_CONSUMER_SLEEPING,
            Self::ProducerSleeping => OFFSET_PRODUCER_SLEEPING,
        }
    }
}

/// A mapped, checked ring of one episode. Unmapped on drop.
#[derive(Debug)]
pub(crate) struct Ring {
    base: NonNull<u8>,
    map_len: usize,
    slot_size: u32,
    slot_count: u32,
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
        let map_len = usize::try_from(want)
            .ok()
            .and_then(NonZeroUsize::new)
            .ok_or_else(|| bad(format!("SHM_ATTACH ring of {want} bytes cannot be mapped")))?;
        check_ring_fd(&ring_fd, want)?;
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
        // SAFETY: a fresh shared mapping of `map_len` bytes of a regular file that is
        // exactly `map_len` bytes long and sealed against shrinking, so every byte of the
        // mapping stays backed by the file (no SIGBUS); the kernel picks the address, so
        // no existing memory is replaced. The mapping outlives `ring_fd`, which is closed
        // when this function returns.
        let base = unsafe {
            mmap(
                None,
                map_len,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                &ring_fd,
                0,
            )
        }
        .map_err(|e| bad(format!("SHM_ATTACH ring fd: mmap of {want} bytes: {e}")))?;
        let r = Self {
            base: base.cast(),
            map_len: map_len.get(),
            slot_size,
            slot_count,
            record_len,
            policy,
            tail: 0,
            taken_back: 0,
            data_ready,
            space_ready,
        };
        r.atomic_u64(Word64::Tail).store(0, Ordering::Release);
        r.atomic_u32(Word32::ConsumerSleeping)
            .store(0, Ordering::SeqCst);
        Ok(r)
    }

    /// The control word at `offset` (one of the `OFFSET_*` of the header).
    fn atomic_u64(&self, word: Word64) -> &AtomicU64 {
        let offset = word.offset();
        // SAFETY: `offset` is one of OFFSET_HEAD, OFFSET_TAIL, OFFSET_DROPPED_STEPS,
        // OFFSET_DROPPED_BATCHES (64, 128, 320, 384): inside the 4096-byte header of a
        // mapping of at least 4096 + 128 bytes, 8-aligned (the mapping is page-aligned).
        // The word is only ever accessed atomically by this process; the producer writes
        // it too, and atomics are the right tool for shared memory. The reference lives no
        // longer than `&self`, and the mapping lives as long as `self`.
        unsafe { &*self.base.as_ptr().add(offset).cast::<AtomicU64>() }
    }

    fn atomic_u32(&self, word: Word32) -> &AtomicU32 {
        let offset = word.offset();
        // SAFETY: as in `atomic_u64`: offset 192 or 256, inside the header, 4-aligned,
        // only accessed atomically, valid while `self` lives.
        unsafe { &*self.base.as_ptr().add(offset).cast::<AtomicU32>() }
    }

    /// `head` as the producer last published it (acquire), unchecked.
    #[must_use]
    pub(crate) fn published(&self) -> u64 {
        self.atomic_u64(Word64::Head).load(Ordering::Acquire)
    }

    /// `slot_count`.
    #[must_use]
    pub(crate) fn slot_count(&self) -> u32 {
        self.slot_count
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
            self.atomic_u64(Word64::DroppedSteps)
                .load(Ordering::Acquire),
            self.atomic_u64(Word64::DroppedBatches)
                .load(Ordering::Acquire),
        )
    }

    /// The consumer's view before claiming a slot: `(head, index of the slot to consume)`,
    /// checked. With `drop_oldest` the shared `tail` is loaded first (for an honest
    /// producer it never passes `head`, which only grows), adopted when it moved forward
    /// (the producer took slots back), and never followed backwards.
    fn positions(&mut self) -> Result<(u64, u64), RingError> {
        if self.policy == RingPolicy::DropOldest {
            let shared = self.atomic_u64(Word64::Tail).load(Ordering::Acquire);
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
        if head - tail > u64::from(self.slot_count) {
            return Err(RingError::HeadTooFar {
                head,
                tail,
                slot_count: self.slot_count,
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
        self.atomic_u64(Word64::Tail).load(Ordering::Acquire) != index
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
        let offset = ring::slot_offset(tail, self.slot_size, self.slot_count)
            .and_then(|o| usize::try_from(o).ok())
            .filter(|&o| o.saturating_add(self.slot_size as usize) <= self.map_len)
            .ok_or(RingError::OutOfBounds { index: tail })?;
        let mut raw = [0u8; SLOT_HEADER_BYTES];
        // SAFETY: `offset + slot_size <= map_len` (checked above) and slot_size >= 64, so
        // the 8 bytes at `offset` are inside the mapping; `raw` is a distinct local buffer.
        // The producer may write these bytes concurrently: they are copied as plain bytes
        // and only the copy is looked at.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.base.as_ptr().add(offset),
                raw.as_mut_ptr(),
                SLOT_HEADER_BYTES,
            );
        }
        let header = SlotHeader::decode(raw);
        let len = match header.check(tail, self.slot_size, self.record_len) {
            Ok(len) => len,
            // A header torn by the producer taking the slot back is not an error.
            Err(_) if oldest && self.taken_back_since(tail) => return Ok(Polled::TakenBack),
            Err(e) => return Err(RingError::Slot(e)),
        };
        out.clear();
        out.reserve(len);
        // SAFETY: `check` guarantees `8 + len <= slot_size`, and the slot lies inside the
        // mapping, so `offset + 8 .. offset + 8 + len` is in bounds; `out` has capacity for
        // `len` bytes (reserved above) and does not overlap the mapping. All `len` bytes
        // are initialized by the copy before `set_len`. Concurrent producer writes only
        // change which bytes we copy, and the copy is validated afterwards.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.base.as_ptr().add(offset + SLOT_HEADER_BYTES),
                out.as_mut_ptr(),
                len,
            );
            out.set_len(len);
        }
        if oldest {
            // Claim the slot: whoever moves `tail` from `tail` first owns it. The acquire
            // fence keeps the copy before the claim; the release side of the swap lets the
            // producer, once it sees the new `tail`, overwrite the slot only after the copy.
            fence(Ordering::Acquire);
            if self
                .atomic_u64(Word64::Tail)
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
            self.atomic_u64(Word64::Tail)
                .store(self.tail, Ordering::Release);
        }
        // Store tail, then load producer_sleeping: a full fence pairs with the producer's
        // "store producer_sleeping = 1, re-check tail" so that one of us sees the other.
        fence(Ordering::SeqCst);
        // A sleeping producer found the ring full; it is woken once at most half the ring
        // is still occupied (as of the `head` read above, so never later than that), not
        // for every slot, which would cost a wake-up per slot on both sides. The drain
        // always goes on until the ring is empty, so that point is always reached.
        let occupied = head.saturating_sub(self.tail);
        if occupied <= u64::from(self.slot_count / 2)
            && self
                .atomic_u32(Word32::ProducerSleeping)
                .load(Ordering::SeqCst)
                == 1
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
        self.atomic_u32(Word32::ConsumerSleeping)
            .store(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let head = self.atomic_u64(Word64::Head).load(Ordering::SeqCst);
        if head == self.tail {
            true
        } else {
            self.woke();
            false
        }
    }

    /// After sleeping: `consumer_sleeping = 0` and reset `data_ready` (non-blocking).
    pub(crate) fn woke(&mut self) {
        self.atomic_u32(Word32::ConsumerSleeping)
            .store(0, Ordering::SeqCst);
        let mut buf = [0u8; 8];
        let _ = nix::unistd::read(self.data_ready.as_raw_fd(), &mut buf);
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: `base`/`map_len` are exactly the mapping created in `attach`, unmapped
        // only here; no reference into it outlives `self` (the atomics borrow `self`).
        let _ = unsafe { munmap(self.base.cast(), self.map_len) };
    }
}
