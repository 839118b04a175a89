//! Shared-memory rings written by hand, for the `shm_hostile_*` tests: the memfd and the
//! eventfds are made with nix, and the ring is written through the fd (`pwrite`, via
//! `FileExt::write_at`) instead of a mapping, so the tests need no `unsafe`. The daemon
//! maps the memfd and sees the same bytes.

use std::fs::File;
use std::ops::Range;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::FileExt;

use nix::fcntl::{fcntl, FcntlArg, SealFlag};
use nix::sys::eventfd::{EfdFlags, EventFd};
use nix::sys::memfd::{memfd_create, MemFdCreateFlag};
use wshard_client::ChannelSpec;
use wshard_ingest_proto::push_step_record;
use wshard_ingest_proto::ring::{
    self, RingHeader, SlotHeader, OFFSET_CONSUMER_SLEEPING, OFFSET_HEAD, OFFSET_TAIL,
};

use crate::data;

/// How to build a [`HandRing`]; the defaults make a valid ring.
#[derive(Clone, Debug)]
pub struct RingSpec {
    pub slot_size: u32,
    pub slot_count: u32,
    /// Size the memfd to this instead of the correct size.
    pub file_size: Option<u64>,
    /// Add `F_SEAL_SHRINK | F_SEAL_GROW`.
    pub seal: bool,
    /// Write these bytes at offset 0 instead of the correct header.
    pub header: Option<Vec<u8>>,
}

impl RingSpec {
    /// A valid ring of `slot_count` slots of `slot_size` bytes.
    #[must_use]
    pub fn new(slot_size: u32, slot_count: u32) -> Self {
        Self {
            slot_size,
            slot_count,
            file_size: None,
            seal: true,
            header: None,
        }
    }
}

/// A ring memfd and its two eventfds, written through the fd.
#[derive(Debug)]
pub struct HandRing {
    pub file: File,
    pub data_ready: EventFd,
    pub space_ready: EventFd,
    pub slot_size: u32,
    pub slot_count: u32,
    /// Slots published so far (our `head`).
    pub head: u64,
}

impl HandRing {
    /// Create the memfd as `spec` says, and two eventfds.
    #[must_use]
    pub fn create(spec: &RingSpec) -> Self {
        let fd: OwnedFd = memfd_create(
            c"wshard-e2e-ring",
            MemFdCreateFlag::MFD_ALLOW_SEALING | MemFdCreateFlag::MFD_CLOEXEC,
        )
        .expect("memfd_create");
        let file = File::from(fd);
        let size = spec.file_size.unwrap_or_else(|| {
            ring::ring_bytes(spec.slot_size, spec.slot_count).expect("ring size")
        });
        file.set_len(size).expect("ftruncate");
        let header = spec.header.clone().unwrap_or_else(|| {
            RingHeader {
                slot_size: spec.slot_size,
                slot_count: spec.slot_count,
            }
            .encode()
            .to_vec()
        });
        file.write_all_at(&header, 0).expect("write header");
        if spec.seal {
            fcntl(
                file.as_raw_fd(),
                FcntlArg::F_ADD_SEALS(SealFlag::F_SEAL_SHRINK | SealFlag::F_SEAL_GROW),
            )
            .expect("F_ADD_SEALS");
        }
        let flags = EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK;
        Self {
            file,
            data_ready: EventFd::from_flags(flags).expect("eventfd"),
            space_ready: EventFd::from_flags(flags).expect("eventfd"),
            slot_size: spec.slot_size,
            slot_count: spec.slot_count,
            head: 0,
        }
    }

    /// The three fds in `SHM_ATTACH` order.
    #[must_use]
    pub fn fds(&self) -> [RawFd; 3] {
        [
            self.file.as_raw_fd(),
            self.data_ready.as_raw_fd(),
            self.space_ready.as_raw_fd(),
        ]
    }

    fn read_u64(&self, offset: usize) -> u64 {
        let mut b = [0u8; 8];
        self.file
            .read_exact_at(&mut b, offset as u64)
            .expect("read ring");
        u64::from_le_bytes(b)
    }

    /// The consumer's `tail`.
    #[must_use]
    pub fn tail(&self) -> u64 {
        self.read_u64(OFFSET_TAIL)
    }

    /// Store `head` (any value) and wake the daemon.
    pub fn set_head(&mut self, head: u64) {
        self.file
            .write_all_at(&head.to_le_bytes(), OFFSET_HEAD as u64)
            .expect("write head");
        self.head = head;
        self.wake();
    }

    /// Write 1 to `data_ready` (whether or not the daemon sleeps).
    pub fn wake(&self) {
        let _ = self.data_ready.write(1);
    }

    /// `consumer_sleeping` as the daemon last stored it.
    #[must_use]
    pub fn consumer_sleeping(&self) -> u32 {
        let mut b = [0u8; 4];
        self.file
            .read_exact_at(&mut b, OFFSET_CONSUMER_SLEEPING as u64)
            .expect("read ring");
        u32::from_le_bytes(b)
    }

    /// Write slot `index` with the given header and record bytes (as many as fit).
    pub fn write_slot(&self, index: u64, len: u32, count: u32, records: &[u8]) {
        let off = ring::slot_offset(index, self.slot_size, self.slot_count).expect("offset");
        let room = (self.slot_size as usize).saturating_sub(8);
        let body = &records[..records.len().min(room)];
        self.file.write_all_at(body, off + 8).expect("write slot");
        self.file
            .write_all_at(&SlotHeader { len, count }.encode(), off)
            .expect("write slot header");
    }

    /// Publish one well-formed slot of `records` (`count` steps): write it at `head`,
    /// then `head + 1`, then wake the daemon.
    pub fn publish(&mut self, records: &[u8], count: u32) {
        let len = u32::try_from(records.len()).expect("slot len");
        self.write_slot(self.head, len, count, records);
        let head = self.head + 1;
        self.set_head(head);
    }
}

/// The generator's records for `seqs`, back to back (as in a `TIMESTEP_BATCH`).
#[must_use]
pub fn records(channels: &[ChannelSpec], seqs: Range<u64>) -> Vec<u8> {
    let mut out = Vec::new();
    for s in seqs {
        push_step_record(
            &mut out,
            s,
            data::t_ns(s),
            data::reward(s),
            data::done(s),
            &[&data::packed_payload(s, channels)],
        );
    }
    out
}
