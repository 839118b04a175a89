//! Unit tests of the ring consumer against a memfd played by the test as the producer.

use std::fs::File;
use std::os::unix::fs::FileExt;

use nix::fcntl::{fcntl, FcntlArg, SealFlag};
use nix::sys::eventfd::{EfdFlags, EventFd};
use nix::sys::memfd::{memfd_create, MemFdCreateFlag};
use wshard_ingest_proto::ring::{
    SlotHeader, OFFSET_DROPPED_BATCHES, OFFSET_DROPPED_STEPS, OFFSET_HEAD, OFFSET_TAIL,
};
use wshard_ingest_proto::{push_step_record, RECORD_HEADER_BYTES};

use super::*;

const PAYLOAD: usize = 4;
const SLOT: u32 = 128;
const SLOTS: u32 = 2;

/// A ring attached by the daemon's code, and the memfd to play the producer through
/// (`pwrite`: the same pages the mapping shows).
struct Fixture {
    ring: Ring,
    file: File,
    _data_ready: EventFd,
    _space_ready: EventFd,
}

impl Fixture {
    fn new(policy: RingPolicy) -> Self {
        let fd = memfd_create(
            c"shm-unit-ring",
            MemFdCreateFlag::MFD_ALLOW_SEALING | MemFdCreateFlag::MFD_CLOEXEC,
        )
        .expect("memfd");
        let file = File::from(fd);
        file.set_len(ring::ring_bytes(SLOT, SLOTS).expect("size"))
            .expect("set_len");
        let header = RingHeader {
            slot_size: SLOT,
            slot_count: SLOTS,
        }
        .encode();
        file.write_all_at(&header, 0).expect("header");
        fcntl(
            file.as_raw_fd(),
            FcntlArg::F_ADD_SEALS(SealFlag::F_SEAL_SHRINK | SealFlag::F_SEAL_GROW),
        )
        .expect("seals");
        let flags = EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK;
        let data_ready = EventFd::from_flags(flags).expect("eventfd");
        let space_ready = EventFd::from_flags(flags).expect("eventfd");
        let dup = |fd: BorrowedFd<'_>| fd.try_clone_to_owned().expect("dup");
        let fds = vec![
            dup(file.as_fd()),
            dup(data_ready.as_fd()),
            dup(space_ready.as_fd()),
        ];
        let ring = Ring::attach(
            fds,
            SLOT,
            SLOTS,
            RECORD_HEADER_BYTES + PAYLOAD,
            1 << 20,
            policy,
        )
        .expect("attach");
        Self {
            ring,
            file,
            _data_ready: data_ready,
            _space_ready: space_ready,
        }
    }

    fn set(&self, offset: usize, value: u64) {
        self.file
            .write_all_at(&value.to_le_bytes(), offset as u64)
            .expect("write word");
    }

    fn get(&self, offset: usize) -> u64 {
        let mut b = [0u8; 8];
        self.file
            .read_exact_at(&mut b, offset as u64)
            .expect("read");
        u64::from_le_bytes(b)
    }

    /// Write slot `index` holding `seqs` (not published).
    fn write_slot(&self, index: u64, seqs: std::ops::Range<u64>) {
        let mut records = Vec::new();
        for s in seqs.clone() {
            push_step_record(&mut records, s, 0, 0.0, false, &[&[s as u8; PAYLOAD]]);
        }
        let header = SlotHeader {
            len: records.len() as u32,
            count: (seqs.end - seqs.start) as u32,
        }
        .encode();
        let off = ring::slot_offset(index, SLOT, SLOTS).expect("offset");
        self.file.write_all_at(&header, off).expect("slot header");
        self.file.write_all_at(&records, off + 8).expect("records");
    }

    fn poll(&mut self) -> (Result<Polled, RingError>, Vec<u64>) {
        let mut out = Vec::new();
        let r = self.ring.poll_slots(&mut out);
        let seqs = out
            .chunks_exact(RECORD_HEADER_BYTES + PAYLOAD)
            .map(|r| u64::from_le_bytes(r[..8].try_into().expect("8 bytes")))
            .collect();
        (r, seqs)
    }
}

#[test]
fn ring_block_consumes_in_order() {
    let mut f = Fixture::new(RingPolicy::Block);
    assert_eq!(f.poll().0, Ok(Polled::Empty));
    f.write_slot(0, 0..2);
    f.write_slot(1, 2..5);
    f.set(OFFSET_HEAD, 2);
    assert_eq!(f.poll(), (Ok(Polled::Slot(2)), vec![0, 1]));
    assert_eq!(f.poll(), (Ok(Polled::Slot(3)), vec![2, 3, 4]));
    assert_eq!(f.poll().0, Ok(Polled::Empty));
    assert_eq!(f.get(OFFSET_TAIL), 2);
    // Without drop_oldest the shared tail is never read back.
    f.set(OFFSET_TAIL, 7);
    assert_eq!(f.poll().0, Ok(Polled::Empty));
    f.set(OFFSET_HEAD, 5);
    assert_eq!(
        f.poll().0,
        Err(RingError::HeadTooFar {
            head: 5,
            tail: 2,
            slot_count: 2
        })
    );
}

#[test]
fn ring_drop_oldest_follows_slots_taken_back() {
    let mut f = Fixture::new(RingPolicy::DropOldest);
    f.write_slot(0, 0..2);
    f.write_slot(1, 2..4);
    f.set(OFFSET_HEAD, 2);
    // The producer takes slot 0 back (tail 0 -> 1) and publishes slot 2 in its place.
    f.set(OFFSET_TAIL, 1);
    f.write_slot(2, 4..6);
    f.set(OFFSET_HEAD, 3);
    assert_eq!(f.poll(), (Ok(Polled::Slot(2)), vec![2, 3]));
    assert_eq!(f.ring.taken_back(), 1);
    assert_eq!(f.get(OFFSET_TAIL), 2, "claimed by compare-and-swap");
    assert_eq!(f.poll(), (Ok(Polled::Slot(2)), vec![4, 5]));
    assert_eq!(f.poll().0, Ok(Polled::Empty));
    assert_eq!(f.get(OFFSET_TAIL), 3);
    // head - tail beyond slot_count is not a broken ring here (the loads are not one
    // snapshot); the slot is claimed as usual.
    f.write_slot(3, 6..7);
    f.set(OFFSET_HEAD, 6);
    assert_eq!(f.poll(), (Ok(Polled::Slot(1)), vec![6]));
    assert_eq!(f.ring.taken_back(), 1);
}

#[test]
fn ring_drop_oldest_never_follows_tail_backwards_or_past_head() {
    let mut f = Fixture::new(RingPolicy::DropOldest);
    f.write_slot(0, 0..1);
    f.write_slot(1, 1..2);
    f.set(OFFSET_HEAD, 2);
    assert_eq!(f.poll().0, Ok(Polled::Slot(1)));
    f.set(OFFSET_TAIL, 0);
    let e = f.poll().0.expect_err("backwards");
    assert_eq!(
        e,
        RingError::TailBackwards {
            tail: 0,
            consumed: 1
        }
    );
    assert!(e.to_string().contains("ring tail 0 moved backwards"));

    let mut f = Fixture::new(RingPolicy::DropOldest);
    f.write_slot(0, 0..1);
    f.set(OFFSET_HEAD, 1);
    f.set(OFFSET_TAIL, 2);
    assert_eq!(f.poll().0, Err(RingError::TailAhead { tail: 2, head: 1 }));

    // A bad slot header that nobody took back is a broken ring.
    let mut f = Fixture::new(RingPolicy::DropOldest);
    f.file
        .write_all_at(
            &SlotHeader {
                len: 9999,
                count: 1,
            }
            .encode(),
            4096,
        )
        .expect("header");
    f.set(OFFSET_HEAD, 1);
    assert!(matches!(f.poll().0, Err(RingError::Slot(_))));
}

#[test]
fn ring_producer_counters() {
    let f = Fixture::new(RingPolicy::DropNewest);
    assert_eq!(f.ring.producer_dropped(), (0, 0));
    f.set(OFFSET_DROPPED_STEPS, 12);
    f.set(OFFSET_DROPPED_BATCHES, 3);
    assert_eq!(f.ring.producer_dropped(), (12, 3));
    assert_eq!(f.ring.policy(), RingPolicy::DropNewest);
}
