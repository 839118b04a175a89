//! [`MappedRing`]: a ring memfd mapped into this process, and every access to the mapping:
//! the atomic control words of the header, copying a slot out (the consumer) and into it
//! (the producer), unmapping. All of the ring's `unsafe` code is in this module.
//!
//! The other process may write any byte of the ring at any time, also while we read it. So
//! no Rust reference to ring bytes is ever formed except the atomics of the control words
//! (atomics are the tool for memory another process writes), slots are only copied (with
//! `ptr::copy_nonoverlapping`, within bounds checked here) and the copies are what callers
//! look at. What the words mean, and in which order they are loaded and stored, is the
//! callers' business (the daemon's consumer, the client's producer).
#![allow(unsafe_code)]

use std::num::NonZeroUsize;
use std::os::fd::BorrowedFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64};

use nix::errno::Errno;
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
use wshard_ingest_proto::ring::{
    self, SlotHeader, OFFSET_CONSUMER_SLEEPING, OFFSET_DROPPED_BATCHES, OFFSET_DROPPED_STEPS,
    OFFSET_HEAD, OFFSET_PRODUCER_SLEEPING, OFFSET_TAIL, SLOT_HEADER_BYTES,
};

use crate::ring_fd::{check_ring_fd, RingFdError};

/// Why a ring could not be mapped.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    /// The geometry's size overflows or is not addressable here, or a slot cannot hold its
    /// own header.
    #[error("a ring of {slot_count} slots of {slot_size} bytes cannot be mapped")]
    Size { slot_size: u32, slot_count: u32 },
    /// The fd breaks the ring-fd rule ([`check_ring_fd`]).
    #[error(transparent)]
    Fd(#[from] RingFdError),
    /// `mmap` failed.
    #[error("mmap of {bytes} bytes: {errno}")]
    Mmap { bytes: usize, errno: Errno },
}

/// Why a slot could not be copied. Neither happens for a geometry the protocol allows and
/// a slot header that passed [`SlotHeader::check`]; checked anyway.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SlotError {
    /// Slot `index` (counting from 0 for the whole episode) lies outside the mapping.
    #[error("ring slot {index} lies outside the mapping")]
    OutOfBounds { index: u64 },
    /// `len` bytes of records do not fit one slot after its header.
    #[error("{len} bytes of records do not fit a slot of {slot_size} bytes")]
    TooLong { len: usize, slot_size: u32 },
}

/// A ring memfd mapped shared, read and write, for the whole of its
/// `RING_HEADER_BYTES + slot_size x slot_count` bytes. Unmapped on drop.
#[derive(Debug)]
pub struct MappedRing {
    base: NonNull<u8>,
    map_len: usize,
    slot_size: u32,
    slot_count: u32,
}

// SAFETY: the mapping is owned by the `MappedRing` alone within this process (the pointer
// is never handed out), and every access through `&self` is either atomic or a copy out
// of or into the shared bytes that the other process may race with anyway; moving the
// owner to another thread changes nothing of that, as for a `Vec`.
unsafe impl Send for MappedRing {}

impl MappedRing {
    /// Map the ring memfd `fd` of `slot_count` slots of `slot_size` bytes. The fd is checked
    /// first ([`check_ring_fd`]: a sealed memfd of exactly the ring's size), so the mapping
    /// can never be cut short. The mapping outlives `fd`.
    ///
    /// # Errors
    /// [`MapError`] naming what is wrong.
    pub fn map(fd: BorrowedFd<'_>, slot_size: u32, slot_count: u32) -> Result<Self, MapError> {
        let size = MapError::Size {
            slot_size,
            slot_count,
        };
        if (slot_size as usize) < SLOT_HEADER_BYTES {
            return Err(size);
        }
        let bytes = ring::ring_bytes(slot_size, slot_count).ok_or(size.clone())?;
        let map_len = usize::try_from(bytes)
            .ok()
            .and_then(NonZeroUsize::new)
            .ok_or(size)?;
        check_ring_fd(fd, bytes)?;
        // SAFETY: a fresh shared mapping of `map_len` bytes of a regular file that is
        // exactly `map_len` bytes long and sealed against shrinking (checked just above;
        // seals cannot be removed), so every byte of the mapping stays backed by the file
        // (no SIGBUS); the kernel picks the address, so no existing memory is replaced.
        let base = unsafe {
            mmap(
                None,
                map_len,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                fd,
                0,
            )
        }
        .map_err(|errno| MapError::Mmap {
            bytes: map_len.get(),
            errno,
        })?;
        Ok(Self {
            base: base.cast(),
            map_len: map_len.get(),
            slot_size,
            slot_count,
        })
    }

    /// `slot_size`.
    #[must_use]
    pub fn slot_size(&self) -> u32 {
        self.slot_size
    }

    /// `slot_count`.
    #[must_use]
    pub fn slot_count(&self) -> u32 {
        self.slot_count
    }

    /// Record bytes one slot holds after its header: `slot_size - 8`.
    #[must_use]
    pub fn slot_capacity(&self) -> usize {
        (self.slot_size as usize).saturating_sub(SLOT_HEADER_BYTES)
    }

    /// `head`: slots published by the producer, ever.
    #[must_use]
    pub fn head(&self) -> &AtomicU64 {
        self.word64(OFFSET_HEAD)
    }

    /// `tail`: slots consumed by the consumer (or, with `drop_oldest`, taken back by the
    /// producer), ever.
    #[must_use]
    pub fn tail(&self) -> &AtomicU64 {
        self.word64(OFFSET_TAIL)
    }

    /// `dropped_steps`: timesteps the producer dropped under a drop policy, ever.
    #[must_use]
    pub fn dropped_steps(&self) -> &AtomicU64 {
        self.word64(OFFSET_DROPPED_STEPS)
    }

    /// `dropped_batches`: batches the producer dropped under a drop policy, ever.
    #[must_use]
    pub fn dropped_batches(&self) -> &AtomicU64 {
        self.word64(OFFSET_DROPPED_BATCHES)
    }

    /// `consumer_sleeping`.
    #[must_use]
    pub fn consumer_sleeping(&self) -> &AtomicU32 {
        self.word32(OFFSET_CONSUMER_SLEEPING)
    }

    /// `producer_sleeping`.
    #[must_use]
    pub fn producer_sleeping(&self) -> &AtomicU32 {
        self.word32(OFFSET_PRODUCER_SLEEPING)
    }

    /// The `u64` control word at `offset`, one of the header's `OFFSET_*` of a `u64`.
    fn word64(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: `offset` is one of OFFSET_HEAD, OFFSET_TAIL, OFFSET_DROPPED_STEPS,
        // OFFSET_DROPPED_BATCHES (64, 128, 320, 384; the accessors above are the only
        // callers): inside the RING_HEADER_BYTES (4096) of the header, which every mapping
        // has (`map_len` is that plus the slots), and 8-aligned (the mapping is page-aligned). The word is only ever
        // accessed atomically in this process; the other process writes it too, and atomics
        // are the right tool for shared memory. The reference lives no longer than `&self`,
        // and the mapping lives as long as `self`.
        unsafe { &*self.base.as_ptr().add(offset).cast::<AtomicU64>() }
    }

    /// The `u32` control word at `offset`, one of the header's `OFFSET_*` of a `u32`.
    fn word32(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: as in `word64`: OFFSET_CONSUMER_SLEEPING or OFFSET_PRODUCER_SLEEPING
        // (192, 256), inside the header, 4-aligned, only accessed atomically, valid while
        // `self` lives.
        unsafe { &*self.base.as_ptr().add(offset).cast::<AtomicU32>() }
    }

    /// Byte offset of slot `index` in the mapping, checked: the whole slot lies inside it.
    fn slot_offset(&self, index: u64) -> Result<usize, SlotError> {
        ring::slot_offset(index, self.slot_size, self.slot_count)
            .and_then(|o| usize::try_from(o).ok())
            .filter(|&o| o.saturating_add(self.slot_size as usize) <= self.map_len)
            .ok_or(SlotError::OutOfBounds { index })
    }

    /// A copy of the header of slot `index` (`len u32 | count u32`), decoded as found.
    ///
    /// # Errors
    /// [`SlotError::OutOfBounds`].
    pub fn read_slot_header(&self, index: u64) -> Result<SlotHeader, SlotError> {
        let offset = self.slot_offset(index)?;
        let mut raw = [0u8; SLOT_HEADER_BYTES];
        // SAFETY: `offset + slot_size <= map_len` (`slot_offset`) and `slot_size >= 8`
        // (checked by `map`), so the 8 bytes at `offset` are inside the mapping; `raw` is a
        // distinct local buffer. The other process may write these bytes concurrently:
        // they are copied as plain bytes, and only the copy is looked at.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.base.as_ptr().add(offset),
                raw.as_mut_ptr(),
                SLOT_HEADER_BYTES,
            );
        }
        Ok(SlotHeader::decode(raw))
    }

    /// Copy the `len` record bytes of slot `index` (after its header) into `out`,
    /// replacing its contents.
    ///
    /// # Errors
    /// [`SlotError`] when the slot lies outside the mapping or `len` exceeds
    /// [`MappedRing::slot_capacity`]; `out` is then left as it was.
    pub fn read_slot_records(
        &self,
        index: u64,
        len: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), SlotError> {
        let offset = self.slot_offset(index)?;
        if len > self.slot_capacity() {
            return Err(SlotError::TooLong {
                len,
                slot_size: self.slot_size,
            });
        }
        out.clear();
        out.reserve(len);
        // SAFETY: `8 + len <= slot_size` (checked above) and the slot lies inside the
        // mapping (`slot_offset`), so `offset + 8 .. offset + 8 + len` is in bounds; `out`
        // has capacity for `len` bytes (reserved above) and does not overlap the mapping.
        // All `len` bytes are initialized by the copy before `set_len`. Concurrent writes
        // of the other process only change which bytes are copied; callers validate the
        // copy.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.base.as_ptr().add(offset + SLOT_HEADER_BYTES),
                out.as_mut_ptr(),
                len,
            );
            out.set_len(len);
        }
        Ok(())
    }

    /// Write slot `index`: `records` (back to back), then its header
    /// `len = records.len() | count`. Publishing it (`head`) is the caller's next step.
    ///
    /// # Errors
    /// [`SlotError`] when the slot lies outside the mapping or `records` exceeds
    /// [`MappedRing::slot_capacity`]; nothing is written then.
    pub fn write_slot(&self, index: u64, count: u32, records: &[u8]) -> Result<(), SlotError> {
        let offset = self.slot_offset(index)?;
        let too_long = SlotError::TooLong {
            len: records.len(),
            slot_size: self.slot_size,
        };
        if records.len() > self.slot_capacity() {
            return Err(too_long);
        }
        let len = u32::try_from(records.len()).map_err(|_| too_long)?;
        let header = SlotHeader { len, count }.encode();
        // SAFETY: the slot `offset .. offset + slot_size` lies inside the mapping
        // (`slot_offset`) and `8 + records.len() <= slot_size` (checked above), so both
        // copies stay in bounds; the sources are the caller's buffers and a local one,
        // which do not overlap the mapping. The other process may read these bytes
        // concurrently only if it breaks the protocol (the producer writes a slot only
        // while it is free), and then only sees bytes it must validate anyway.
        unsafe {
            let slot = self.base.as_ptr().add(offset);
            std::ptr::copy_nonoverlapping(
                records.as_ptr(),
                slot.add(SLOT_HEADER_BYTES),
                records.len(),
            );
            std::ptr::copy_nonoverlapping(header.as_ptr(), slot, SLOT_HEADER_BYTES);
        }
        Ok(())
    }
}

impl Drop for MappedRing {
    fn drop(&mut self) {
        // SAFETY: `base`/`map_len` are exactly the mapping created in `map`, unmapped only
        // here; no reference into it outlives `self` (the atomics borrow `self`).
        let _ = unsafe { munmap(self.base.cast(), self.map_len) };
    }
}
