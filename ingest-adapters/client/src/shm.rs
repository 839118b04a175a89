//! The producer side of the shared-memory transport (docs/PROTOCOL.md, "Shared-memory
//! transport"). The mapping of the ring and every access to it (the atomic control words,
//! the slot copies) are `wshard_shm_ring::MappedRing`'s, which the daemon consumes through
//! too; here are the producer's rules.
//!
//! The ring is a memfd (`MFD_ALLOW_SEALING`), sized, given its header, and sealed with
//! `F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL` before it is mapped and sent, so neither
//! side's mapping can ever be cut short. Two eventfds (created `EFD_NONBLOCK`) carry the
//! wake-ups: `data_ready` (we write it when the server sleeps) and `space_ready` (the server
//! writes it when we sleep). Waiting for space polls `space_ready` in short slices, so a
//! server `ERROR`, the end of the connection or the timeout end the wait.
//!
//! With a drop policy (docs/PROTOCOL.md, "Backpressure policies") a full ring never
//! blocks: `drop_newest` drops the batch being published; `drop_oldest` takes back the
//! oldest slot the server has not claimed (compare-and-swap of `tail` from its index to
//! index + 1, the same swap the server claims a slot with, so exactly one side gets it)
//! and publishes into it. Either way the dropped timesteps are counted here and in the
//! ring header (`dropped_steps`, `dropped_batches`).

use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{fence, Ordering};
use std::time::{Duration, Instant};

use nix::fcntl::{fcntl, FcntlArg, SealFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::eventfd::{EfdFlags, EventFd};
use nix::sys::memfd::{memfd_create, MemFdCreateFlag};
use wshard_ingest_proto::ring::{self, RingHeader, RingPolicy};
use wshard_shm_ring::{MapError, MappedRing};

use crate::error::{ClientError, Result};

/// Longest single sleep while waiting for ring space, so errors and the timeout are seen.
const WAIT_SLICE: Duration = Duration::from_millis(20);

fn shm_err(what: &str, e: impl std::fmt::Display) -> ClientError {
    ClientError::Shm(format!("{what}: {e}"))
}

/// A mapped ring this client produces into.
#[derive(Debug)]
pub(crate) struct Producer {
    ring: MappedRing,
    /// Slots published, ever (the producer's own `head`).
    head: u64,
    policy: RingPolicy,
    /// Timesteps in each slot as last published (by slot position), so that a slot
    /// taken back (`drop_oldest`) is counted exactly.
    counts: Vec<u32>,
    /// Timesteps and batches dropped, ever (mirrored into the ring header).
    dropped_steps: u64,
    dropped_batches: u64,
    ring_fd: OwnedFd,
    data_ready: EventFd,
    space_ready: EventFd,
}

impl Producer {
    /// Create, size, label and seal a memfd for `slot_count` slots of `slot_size` bytes,
    /// create the two eventfds, and map the ring.
    ///
    /// # Errors
    /// [`ClientError::Shm`] naming the step that failed.
    pub(crate) fn create(slot_size: u32, slot_count: u32, policy: RingPolicy) -> Result<Self> {
        let bytes = ring::ring_bytes(slot_size, slot_count)
            .ok_or_else(|| ClientError::Shm("ring size overflows".into()))?;
        if usize::try_from(bytes).map_or(true, |n| n == 0) {
            return Err(ClientError::Shm(format!(
                "a ring of {bytes} bytes cannot be mapped"
            )));
        }
        let len = nix::libc::off_t::try_from(bytes)
            .map_err(|_| ClientError::Shm(format!("a ring of {bytes} bytes is too large")))?;
        let ring_fd = memfd_create(
            c"wshard-ring",
            MemFdCreateFlag::MFD_ALLOW_SEALING | MemFdCreateFlag::MFD_CLOEXEC,
        )
        .map_err(|e| shm_err("memfd_create", e))?;
        nix::unistd::ftruncate(&ring_fd, len).map_err(|e| shm_err("ftruncate", e))?;
        let header = RingHeader {
            slot_size,
            slot_count,
        }
        .encode();
        let n = nix::sys::uio::pwrite(&ring_fd, &header, 0).map_err(|e| shm_err("pwrite", e))?;
        if n != header.len() {
            return Err(ClientError::Shm(format!("short header write: {n} bytes")));
        }
        let seals = SealFlag::F_SEAL_SHRINK | SealFlag::F_SEAL_GROW | SealFlag::F_SEAL_SEAL;
        fcntl(ring_fd.as_raw_fd(), FcntlArg::F_ADD_SEALS(seals))
            .map_err(|e| shm_err("F_ADD_SEALS", e))?;
        let flags = EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK;
        let data_ready = EventFd::from_flags(flags).map_err(|e| shm_err("eventfd", e))?;
        let space_ready = EventFd::from_flags(flags).map_err(|e| shm_err("eventfd", e))?;
        let ring =
            MappedRing::map(ring_fd.as_fd(), slot_size, slot_count).map_err(|e| match e {
                MapError::Mmap { errno, .. } => shm_err("mmap", errno),
                e => ClientError::Shm(e.to_string()),
            })?;
        Ok(Self {
            ring,
            head: 0,
            policy,
            counts: vec![0; usize::try_from(slot_count).unwrap_or(0)],
            dropped_steps: 0,
            dropped_batches: 0,
            ring_fd,
            data_ready,
            space_ready,
        })
    }

    /// The three fds of `SHM_ATTACH`, in protocol order: ring, `data_ready`, `space_ready`.
    pub(crate) fn fds(&self) -> [RawFd; 3] {
        [
            self.ring_fd.as_raw_fd(),
            self.data_ready.as_raw_fd(),
            self.space_ready.as_raw_fd(),
        ]
    }

    /// `slot_size`.
    pub(crate) fn slot_size(&self) -> u32 {
        self.ring.slot_size()
    }

    /// `slot_count`.
    pub(crate) fn slot_count(&self) -> u32 {
        self.ring.slot_count()
    }

    /// What a full ring does.
    pub(crate) fn policy(&self) -> RingPolicy {
        self.policy
    }

    /// Timesteps dropped so far (drop policies).
    pub(crate) fn dropped_steps(&self) -> u64 {
        self.dropped_steps
    }

    /// Batches dropped so far (drop policies).
    pub(crate) fn dropped_batches(&self) -> u64 {
        self.dropped_batches
    }

    /// Count a dropped batch of `count` timesteps, here and in the ring header.
    fn note_dropped(&mut self, count: u32) {
        self.dropped_steps = self.dropped_steps.saturating_add(u64::from(count));
        self.dropped_batches = self.dropped_batches.saturating_add(1);
        self.ring
            .dropped_steps()
            .store(self.dropped_steps, Ordering::Release);
        self.ring
            .dropped_batches()
            .store(self.dropped_batches, Ordering::Release);
    }

    /// Timesteps of the slot at `index`, as we published it.
    fn count_at(&self, index: u64) -> u32 {
        usize::try_from(index % u64::from(self.slot_count().max(1)))
            .ok()
            .and_then(|i| self.counts.get(i).copied())
            .unwrap_or(0)
    }

    /// `drop_oldest`: make room for slot `head`. While the ring is full, take the oldest
    /// slot back by moving `tail` from its index to index + 1 (compare-and-swap): if that
    /// wins, the server had not claimed it and never will, and its timesteps are dropped;
    /// if it fails, the server claimed it meanwhile and the slot is free anyway.
    fn take_back_oldest(&mut self) -> Result<()> {
        loop {
            let tail = self.ring.tail().load(Ordering::Acquire);
            if tail > self.head {
                return Err(ClientError::Unexpected(format!(
                    "ring tail {tail} is ahead of head {}",
                    self.head
                )));
            }
            let used = self.head - tail;
            let slot_count = self.slot_count();
            if used < u64::from(slot_count) {
                return Ok(());
            }
            if used > u64::from(slot_count) {
                return Err(ClientError::Unexpected(format!(
                    "ring tail {tail} is more than slot_count {slot_count} behind head {}",
                    self.head
                )));
            }
            let taken = self.ring.tail().compare_exchange(
                tail,
                tail + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
            if taken.is_ok() {
                // Our writes into the slot must not become visible before the swap: the
                // server checks `tail` after copying to tell a torn copy from a good one.
                fence(Ordering::Release);
                let count = self.count_at(tail);
                self.note_dropped(count);
                return Ok(());
            }
        }
    }

    /// Record bytes one slot holds.
    pub(crate) fn capacity(&self) -> usize {
        self.ring.slot_capacity()
    }

    /// Slots free, as of the consumer's latest `tail`.
    fn free_slots(&self, order: Ordering) -> Result<u64> {
        let tail = self.ring.tail().load(order);
        if tail > self.head {
            return Err(ClientError::Unexpected(format!(
                "ring tail {tail} is ahead of head {}",
                self.head
            )));
        }
        Ok(u64::from(self.slot_count()).saturating_sub(self.head - tail))
    }

    /// Block until a slot is free (producer rule 1). `check` is called between sleeps and
    /// ends the wait with its error (a server `ERROR`, the connection gone).
    fn wait_space(
        &self,
        timeout: Option<Duration>,
        check: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let sleeping = self.ring.producer_sleeping();
        loop {
            if self.free_slots(Ordering::Acquire)? > 0 {
                return Ok(());
            }
            check()?;
            let mut slice = WAIT_SLICE;
            if let Some(d) = deadline {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(ClientError::Timeout(
                        "a free slot in the shared-memory ring",
                    ));
                }
                slice = slice.min(left);
            }
            sleeping.store(1, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            if self.free_slots(Ordering::SeqCst)? == 0 {
                let mut fds = [PollFd::new(self.space_ready.as_fd(), PollFlags::POLLIN)];
                let ms = u16::try_from(slice.as_millis()).unwrap_or(u16::MAX).max(1);
                match poll(&mut fds, PollTimeout::from(ms)) {
                    Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                    Err(e) => {
                        sleeping.store(0, Ordering::SeqCst);
                        return Err(shm_err("poll(space_ready)", e));
                    }
                }
                // Reset the counter (non-blocking: EAGAIN when nothing was written).
                let _ = self.space_ready.read();
            }
            sleeping.store(0, Ordering::SeqCst);
        }
    }

    /// Publish one slot holding `count` records (`records`, back to back): make room as
    /// the policy says (wait for a free slot, drop this batch, or take the oldest slot
    /// back), copy, store `head + 1` (release), wake the server if it sleeps. Returns
    /// `false` when the batch was dropped instead (`drop_newest` on a full ring).
    ///
    /// # Errors
    /// [`ClientError::Shm`] when `records` does not fit a slot; whatever `check` returns
    /// while waiting; [`ClientError::Timeout`].
    pub(crate) fn publish(
        &mut self,
        records: &[u8],
        count: u32,
        timeout: Option<Duration>,
        check: &mut dyn FnMut() -> Result<()>,
    ) -> Result<bool> {
        if records.len() > self.capacity() {
            return Err(ClientError::Shm(format!(
                "a batch of {} bytes does not fit a slot of {} bytes",
                records.len(),
                self.slot_size()
            )));
        }
        match self.policy {
            RingPolicy::Block => self.wait_space(timeout, check)?,
            RingPolicy::DropNewest => {
                if self.free_slots(Ordering::Acquire)? == 0 {
                    self.note_dropped(count);
                    return Ok(false);
                }
            }
            RingPolicy::DropOldest => self.take_back_oldest()?,
        }
        // The slot is free (head - tail < slot_count, or we took it back with the swap of
        // `tail`): the server does not read it until `head` is published below, and a
        // server copy of the slot it held before (taken back) is discarded after the
        // server sees the moved `tail`.
        self.ring
            .write_slot(self.head, count, records)
            .map_err(|_| ClientError::Shm(format!("slot {} outside the ring", self.head)))?;
        if let Some(c) = usize::try_from(self.head % u64::from(self.slot_count().max(1)))
            .ok()
            .and_then(|i| self.counts.get_mut(i))
        {
            *c = count;
        }
        self.head += 1;
        self.ring.head().store(self.head, Ordering::Release);
        // Store head, then load consumer_sleeping: the fence pairs with the server's
        // "store consumer_sleeping = 1, re-check head".
        fence(Ordering::SeqCst);
        if self.ring.consumer_sleeping().load(Ordering::SeqCst) == 1 {
            // Non-blocking; EAGAIN only if the counter is saturated, i.e. already set.
            let _ = self.data_ready.write(1);
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(count: u32) -> Vec<u8> {
        vec![0xAB; count as usize * 25]
    }

    fn publish(p: &mut Producer, count: u32) -> Result<bool> {
        p.publish(
            &records(count),
            count,
            Some(Duration::from_millis(30)),
            &mut || Ok(()),
        )
    }

    fn word(w: &std::sync::atomic::AtomicU64) -> u64 {
        w.load(Ordering::Acquire)
    }

    #[test]
    fn producer_block_waits_for_space() {
        let mut p = Producer::create(128, 2, RingPolicy::Block).expect("ring");
        assert!(publish(&mut p, 1).expect("slot 0"));
        assert!(publish(&mut p, 2).expect("slot 1"));
        assert!(matches!(publish(&mut p, 1), Err(ClientError::Timeout(_))));
        assert_eq!((p.dropped_steps(), p.dropped_batches()), (0, 0));
        // The consumer frees a slot: the next publish goes through.
        p.ring.tail().store(1, Ordering::Release);
        assert!(publish(&mut p, 3).expect("slot 2"));
        assert_eq!(word(p.ring.head()), 3);
    }

    #[test]
    fn producer_drop_newest_drops_the_batch_being_sent() {
        let mut p = Producer::create(128, 2, RingPolicy::DropNewest).expect("ring");
        assert!(publish(&mut p, 1).expect("slot 0"));
        assert!(publish(&mut p, 2).expect("slot 1"));
        assert!(!publish(&mut p, 3).expect("dropped"));
        assert!(!publish(&mut p, 4).expect("dropped"));
        assert_eq!((p.dropped_steps(), p.dropped_batches()), (7, 2));
        assert_eq!(word(p.ring.head()), 2, "nothing more published");
        assert_eq!(word(p.ring.dropped_steps()), 7);
        assert_eq!(word(p.ring.dropped_batches()), 2);
        p.ring.tail().store(2, Ordering::Release);
        assert!(publish(&mut p, 1).expect("room again"));
        assert_eq!(p.dropped_steps(), 7);
    }

    #[test]
    fn producer_drop_oldest_takes_back_unclaimed_slots() {
        let mut p = Producer::create(128, 2, RingPolicy::DropOldest).expect("ring");
        assert!(publish(&mut p, 1).expect("slot 0"));
        assert!(publish(&mut p, 2).expect("slot 1"));
        // Full: slot 0 (1 step) is taken back, the batch goes into its place.
        assert!(publish(&mut p, 3).expect("slot 2"));
        assert_eq!(word(p.ring.tail()), 1);
        assert_eq!(word(p.ring.head()), 3);
        assert_eq!((p.dropped_steps(), p.dropped_batches()), (1, 1));
        // Then slot 1 (2 steps).
        assert!(publish(&mut p, 4).expect("slot 3"));
        assert_eq!((p.dropped_steps(), p.dropped_batches()), (3, 2));
        assert_eq!(word(p.ring.dropped_steps()), 3);
        // The consumer claims slot 2 (tail 2 -> 3): slot 4 needs no take-back.
        p.ring.tail().store(3, Ordering::Release);
        assert!(publish(&mut p, 2).expect("slot 4"));
        assert_eq!((p.dropped_steps(), p.dropped_batches()), (3, 2));
        // A tail the consumer could never have stored is an error, not a take-back.
        p.ring.tail().store(9, Ordering::Release);
        assert!(matches!(
            publish(&mut p, 1),
            Err(ClientError::Unexpected(m)) if m.contains("ahead of head")
        ));
    }
}
