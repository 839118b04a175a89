//! The mapping against real memfds: the ring-fd rule, the control words, slot copies and
//! their bounds.

use std::fs::File;
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::sync::atomic::Ordering;

use nix::fcntl::{fcntl, FcntlArg, SealFlag};
use nix::sys::memfd::{memfd_create, MemFdCreateFlag};
use wshard_ingest_proto::ring::{self, SlotHeader, OFFSET_HEAD, OFFSET_TAIL};
use wshard_ingest_proto::RingHeader;
use wshard_shm_ring::{check_ring_fd, MapError, MappedRing, RingFdError, SlotError};

const SLOT: u32 = 128;
const SLOTS: u32 = 2;

/// A ring memfd of `size` bytes with its header, sealed when `seal`.
fn memfd(size: u64, seal: bool) -> File {
    let fd = memfd_create(
        c"shm-ring-test",
        MemFdCreateFlag::MFD_ALLOW_SEALING | MemFdCreateFlag::MFD_CLOEXEC,
    )
    .expect("memfd");
    let file = File::from(fd);
    file.set_len(size).expect("set_len");
    let header = RingHeader {
        slot_size: SLOT,
        slot_count: SLOTS,
    }
    .encode();
    file.write_all_at(&header, 0).expect("header");
    if seal {
        fcntl(
            std::os::fd::AsRawFd::as_raw_fd(&file),
            FcntlArg::F_ADD_SEALS(SealFlag::F_SEAL_SHRINK | SealFlag::F_SEAL_GROW),
        )
        .expect("seals");
    }
    file
}

fn size() -> u64 {
    ring::ring_bytes(SLOT, SLOTS).expect("size")
}

#[test]
fn shm_ring_map_refuses_what_could_be_cut_short() {
    let unsealed = memfd(size(), false);
    assert!(matches!(
        MappedRing::map(unsealed.as_fd(), SLOT, SLOTS),
        Err(MapError::Fd(RingFdError::Unsealed { .. }))
    ));
    let short = memfd(size() - 64, true);
    assert_eq!(
        check_ring_fd(short.as_fd(), size()),
        Err(RingFdError::Size {
            size: size() - 64,
            want: size()
        })
    );
    let e = MappedRing::map(short.as_fd(), SLOT, SLOTS).expect_err("short");
    assert!(e.to_string().contains("bytes, expected"), "{e}");
    let unsealable = memfd_without_sealing();
    assert!(matches!(
        check_ring_fd(unsealable.as_fd(), size()),
        Err(RingFdError::Unsealed { .. })
    ));
    let good = memfd(size(), true);
    assert!(matches!(
        MappedRing::map(good.as_fd(), 4, SLOTS),
        Err(MapError::Size { .. })
    ));
    assert!(matches!(
        MappedRing::map(good.as_fd(), SLOT, u32::MAX),
        Err(MapError::Fd(RingFdError::Size { .. }))
    ));
}

/// A memfd of the right size created without `MFD_ALLOW_SEALING`: it can never be sealed.
fn memfd_without_sealing() -> File {
    let fd = memfd_create(c"shm-ring-unsealable", MemFdCreateFlag::MFD_CLOEXEC).expect("memfd");
    let file = File::from(fd);
    file.set_len(size()).expect("set_len");
    file
}

#[test]
fn shm_ring_words_and_slots_are_the_file_bytes() {
    let file = memfd(size(), true);
    let dup = file.try_clone().expect("dup");
    let ring = MappedRing::map(dup.as_fd(), SLOT, SLOTS).expect("map");
    drop(dup); // the mapping outlives the fd it was made from
    assert_eq!((ring.slot_size(), ring.slot_count()), (SLOT, SLOTS));
    assert_eq!(ring.slot_capacity(), 120);
    ring.head().store(7, Ordering::Release);
    ring.tail().store(5, Ordering::Release);
    let word = |offset: usize| {
        let mut b = [0u8; 8];
        file.read_exact_at(&mut b, offset as u64).expect("read");
        u64::from_le_bytes(b)
    };
    assert_eq!((word(OFFSET_HEAD), word(OFFSET_TAIL)), (7, 5));
    file.write_all_at(&9u64.to_le_bytes(), OFFSET_HEAD as u64)
        .expect("write");
    assert_eq!(ring.head().load(Ordering::Acquire), 9);

    // Slot 3 is the ring's second slot.
    ring.write_slot(3, 2, &[1, 2, 3]).expect("write slot");
    let at = ring::slot_offset(3, SLOT, SLOTS).expect("offset");
    let mut raw = [0u8; 11];
    file.read_exact_at(&mut raw, at).expect("read slot");
    assert_eq!(raw, [3, 0, 0, 0, 2, 0, 0, 0, 1, 2, 3]);
    assert_eq!(
        ring.read_slot_header(1).expect("header"),
        SlotHeader { len: 3, count: 2 }
    );
    let mut out = vec![9; 40];
    ring.read_slot_records(1, 3, &mut out).expect("records");
    assert_eq!(out, [1, 2, 3]);

    assert_eq!(
        ring.write_slot(0, 1, &[0; 121]),
        Err(SlotError::TooLong {
            len: 121,
            slot_size: SLOT
        })
    );
    assert!(ring.read_slot_records(0, 121, &mut out).is_err());
    assert_eq!(out, [1, 2, 3], "left as it was");
}
